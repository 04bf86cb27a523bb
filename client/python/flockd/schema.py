"""The protocol schema and the checks a command passes before it is sent.

schema.json beside this file is proto/schema.json, copied by
`python3 proto/schema.py write` (a ctest fails while the copy is stale):
every command with its arguments, types, ranges, defaults and who may send
it, the ack members, the error codes and the server messages' members.

`check(cmd, args, room)` refuses what the server would refuse, before
anything is sent, raising the CommandError of the code the server would
answer (too_large, bad_json, unknown_cmd, bad_arg, out_of_range, forbidden;
a command with open_args, `game`, takes any members within OPEN_ARGS_MAX)
with a message worded like the server's (`seek: field 'x' must be in [0,
1600]`); it returns the message's JSON text otherwise. The checks run in the
server's order (proto/proto_command.c, then the role table of §5.6), so the
first failure is the one the server would name. What only the live room can
decide (capacity, not_found, quotas, rate limits, a wrong password) is left
to the server, whose answer is never hidden. Bounds such as "min(W,H)/4"
are taken over the room's world from its welcome, in float32 as the server
holds them.
"""

import json
import math
import numbers
import os
import re
import struct

from .errors import command_error

_HERE = os.path.dirname(os.path.abspath(__file__))


def load(path=os.path.join(_HERE, "schema.json")):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


SCHEMA = load()
COMMANDS = {c["name"]: c for c in SCHEMA["commands"]}
MESSAGES = SCHEMA["messages"]
ERROR_CODES = [e["code"] for e in SCHEMA["errors"]]
_MAX_DEPTH = SCHEMA["limits"]["max_depth"]
_NUMBER_TEXT_MAX = SCHEMA["limits"]["number_text_max"]
_ROOM_CHARS = re.compile(r"^[A-Za-z0-9_-]*$")
# A command with open_args (game, §14.2): its members but cmd and id, as
# compact JSON, at most this many bytes.
OPEN_ARGS_MAX = 1024

# The role table's refusals (server/lobby/roles.c), worded as the server does.
VIEWER_REFUSED = "viewers may only watch; join as a player to steer"
ADMIN_ONLY = "only admins may change the whole room"
OWN_TEAM_ONLY = "players steer only their own team's group"


def f32(v):
    """v rounded to float32, as the server holds world sizes and bounds."""
    return struct.unpack("<f", struct.pack("<f", v))[0]


class Room:
    """What the checks need to know of the room: the world (W, H, C), the
    longest message, the parameter registry and the connection's role,
    mode and team. `Room.of(welcome)` takes them from a welcome (a dict)."""

    def __init__(self, width=1600.0, height=1000.0, capacity=16384, max_message=4096,
                 params=(), role="admin", mode="sandbox", team=None):
        self.width, self.height = f32(width), f32(height)
        self.capacity, self.max_message = capacity, max_message
        self.params = {p["name"]: p for p in params}
        self.role, self.mode, self.team = role, mode, team

    @classmethod
    def of(cls, welcome):
        w, limits = welcome.get("world", {}), welcome.get("limits", {})
        return cls(w.get("width", 1600.0), w.get("height", 1000.0), w.get("capacity", 16384),
                   limits.get("max_message", 4096), welcome.get("params", ()),
                   welcome.get("role", "player"), welcome.get("mode", "sandbox"),
                   welcome.get("team"))


# ---- bounds: a number, or an expression of W, H, C, min(), max(), / and * -----

_TOKEN = re.compile(r"\s*(\d+(?:\.\d+)?|min\(|max\(|[WHC(),/*])")


def _tokens(text):
    at, out = 0, []
    while at < len(text.rstrip()):
        m = _TOKEN.match(text, at)
        if not m:
            raise ValueError(f"bad bound expression {text!r}")
        out.append(m.group(1))
        at = m.end()
    return out


def _product(toks, env):
    v = _atom(toks, env)
    while toks and toks[0] in "/*":
        op = toks.pop(0)
        w = _atom(toks, env)
        v = v / w if op == "/" else v * w
    return v


def _atom(toks, env):
    t = toks.pop(0)
    if t in env:
        return env[t]
    if t in ("min(", "max("):
        a = _product(toks, env)
        if toks.pop(0) != ",":
            raise ValueError("expected ','")
        b = _product(toks, env)
        if toks.pop(0) != ")":
            raise ValueError("expected ')'")
        return min(a, b) if t == "min(" else max(a, b)
    return float(t) if "." in t else int(t)


def bound(value, room):
    """A schema bound (a number or an expression such as "min(W,H)/4") over
    the room's world."""
    if not isinstance(value, str):
        return value
    toks = _tokens(value)
    v = _product(toks, {"W": room.width, "H": room.height, "C": room.capacity})
    if toks:
        raise ValueError(f"bad bound expression {value!r}")
    return v


# ---- the checks ---------------------------------------------------------------------

def _fail(code, message, cmd=None):
    raise command_error(code, f"{cmd}: {message}" if cmd else message, command=cmd,
                        client_side=True)


def _is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _scan_json(v, name, cmd, depth=1):
    """What the server's lexical pass refuses (§5.2): NaN and infinities,
    NUL and unpaired surrogates, numbers over 63 characters, nesting."""
    if isinstance(v, float) and not math.isfinite(v):
        _fail("bad_json", f"field '{name}' is {v}, which JSON cannot carry", cmd)
    if isinstance(v, int) and not isinstance(v, bool) and len(str(v)) > _NUMBER_TEXT_MAX:
        _fail("bad_json", f"field '{name}' has more than {_NUMBER_TEXT_MAX} digits", cmd)
    if isinstance(v, str):
        if "\x00" in v:
            _fail("bad_json", f"field '{name}' contains a NUL character", cmd)
        try:
            v.encode("utf-8")
        except UnicodeEncodeError:
            _fail("bad_json", f"field '{name}' is not valid UTF-8 text", cmd)
    if isinstance(v, (list, tuple, dict)):
        if depth + 1 > _MAX_DEPTH:
            _fail("bad_json", f"nested deeper than {_MAX_DEPTH} levels", cmd)
        items = v.items() if isinstance(v, dict) else enumerate(v)
        for k, item in items:
            _scan_json(k, name, cmd, depth + 1)
            _scan_json(item, name, cmd, depth + 1)


def _check_number(cmd, name, v, lo, hi, integer):
    if not _is_number(v):
        _fail("bad_arg", f"field '{name}' must be {'an integer' if integer else 'a number'}", cmd)
    d = float(v)
    if not math.isfinite(d):
        _fail("out_of_range", f"field '{name}' is too large", cmd)
    if integer and d != math.floor(d):
        _fail("bad_arg", f"field '{name}' must be an integer", cmd)
    if d < lo or d > hi:
        form = "%.17g" if integer else "%.9g"
        _fail("out_of_range", f"field '{name}' must be in [{form % lo}, {form % hi}]", cmd)


def _check_string(cmd, name, v, arg):
    if not isinstance(v, str):
        _fail("bad_arg", f"field '{name}' must be a string", cmd)
    if arg["type"] == "enum":
        if v not in arg["values"]:
            _fail("bad_arg", f"field '{name}' must be one of {', '.join(arg['values'])}", cmd)
        return
    n, lo, hi = len(v.encode("utf-8")), arg.get("min_len", 0), arg["max_len"]
    if n < lo or n > hi:
        _fail("out_of_range", f"field '{name}' must be {lo} to {hi} bytes long", cmd)
    if arg["chars"] == "room":
        ok = _ROOM_CHARS.match(v) is not None
    else:
        ok = not any(ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F for ch in v)
    if not ok:
        _fail("bad_arg", f"field '{name}' contains characters that are not allowed", cmd)


def _check_arg(cmd, arg, args, room):
    name = arg["name"]
    if name not in args:
        if arg.get("required"):
            _fail("bad_arg", f"missing field '{name}'", cmd)
        return
    v = args[name]
    if arg["type"] in ("int", "number"):
        _check_number(cmd, name, v, bound(arg["min"], room), bound(arg["max"], room),
                      arg["type"] == "int")
    elif arg["type"] == "bool":
        if not isinstance(v, bool):
            _fail("bad_arg", f"field '{name}' must be true or false", cmd)
        if v not in arg.get("values", [True, False]):
            _fail("bad_arg", f"field '{name}' must be {str(arg['values'][0]).lower()}", cmd)
    elif arg["type"] == "array":
        _check_array(cmd, name, v, arg, room)
    elif arg["type"] == "rect":
        _check_rect(cmd, name, v, room)
    else:
        _check_string(cmd, name, v, arg)


def _check_rect(cmd, name, v, room):
    """[x, y, w, h]: x, y in the world, w and h above 0 (and at most 10^7)."""
    if not isinstance(v, (list, tuple)):
        _fail("bad_arg", f"field '{name}' must be an array", cmd)
    if len(v) != 4:
        _fail("out_of_range", f"field '{name}' must hold 4 to 4 elements", cmd)
    for item, hi in zip(v, (f32(room.width), f32(room.height), 1e7, 1e7)):
        _check_number(cmd, name, item, 0.0, hi, False)
    if v[2] <= 0 or v[3] <= 0:
        _fail("out_of_range", f"field '{name}' must have a width and height above 0", cmd)


def _check_one_of(spec, args):
    """Exactly one of the spec's one_of arguments (select, follow)."""
    names = spec.get("one_of")
    if names and sum(args.get(n) is not None for n in names) != 1:
        listed = ", ".join(f"'{n}'" for n in names[:-1]) + f" or '{names[-1]}'"
        _fail("bad_arg", f"exactly one of {listed}", spec["name"])


def _check_array(cmd, name, v, arg, room):
    """An array argument (PROTOCOL.md §13): its length, then each item."""
    if not isinstance(v, (list, tuple)):
        _fail("bad_arg", f"field '{name}' must be an array", cmd)
    if not arg["min_items"] <= len(v) <= arg["max_items"]:
        _fail("out_of_range",
              f"field '{name}' must hold {arg['min_items']} to {arg['max_items']} elements", cmd)
    for item in v:
        if arg["items"] == "point":
            if not isinstance(item, (list, tuple)) or len(item) != 2:
                _fail("bad_arg", f"field '{name}' must hold points [x, y]", cmd)
            _check_number(cmd, name, item[0], 0.0, f32(room.width), False)
            _check_number(cmd, name, item[1], 0.0, f32(room.height), False)
        else:
            _check_number(cmd, name, item, bound(arg["min"], room), bound(arg["max"], room),
                          arg["items"] == "int")


def _check_fields(spec, args, room):
    """Only the command's fields, each a scalar (proto_command.c check_fields)."""
    cmd, known = spec["name"], {a["name"] for a in spec["args"]}
    arrays = {a["name"] for a in spec["args"] if a["type"] in ("array", "rect")}
    registry = spec.get("registry")
    for name, v in args.items():
        if name not in known and not (registry and name in room.params):
            shown = _shown(name)
            _fail("bad_arg", f"unknown {'parameter' if registry else 'field'} '{shown}'", cmd)
        if isinstance(v, dict) or (isinstance(v, (list, tuple)) and name not in arrays):
            _fail("bad_arg", f"field '{name}' must not be an object or array", cmd)


def _check_open_args(spec, args):
    """Any members, any JSON (game, §14.2): neither cmd nor id (the
    message's own), at most OPEN_ARGS_MAX bytes of them as compact JSON."""
    cmd = spec["name"]
    for name in ("cmd", "id"):
        if name in args:
            _fail("bad_arg", f"member '{name}' is the message's own, not the command's", cmd)
    size = len(json.dumps(args, ensure_ascii=False, separators=(",", ":")).encode(
        "utf-8", "surrogatepass"))
    if size > OPEN_ARGS_MAX:
        _fail("too_large", f"the members of a {cmd} command are over {OPEN_ARGS_MAX} bytes", cmd)


def _check_registry(cmd, args, room):
    given = [name for name in args if name in room.params and name not in ("group", "reset")]
    for name in given:
        p = room.params[name]
        _check_number(cmd, name, args[name], f32(p["min"]), f32(p["max"]), p.get("integer"))
    if not given and args.get("reset") is not True:
        _fail("bad_arg", "no parameter given (and no reset)", cmd)


def _shown(name):
    """At most 32 bytes of a name, as the server shows an untrusted one."""
    raw = name.encode("utf-8", "replace")
    if len(raw) <= 32:
        return name
    return raw[:32].decode("utf-8", "ignore") + "..."


def role_refusal(spec, args, room):
    """Why the room's role table refuses the command (§5.6), or None."""
    if room.role == "admin" or spec["who"] == "anyone":
        return None
    if room.role == "viewer":
        return VIEWER_REFUSED
    if spec["who"] == "admin":
        return ADMIN_ONLY
    team_arg = spec.get("team_arg")
    optional = team_arg and not next(a for a in spec["args"] if a["name"] == team_arg).get(
        "required")
    if team_arg and room.team and args.get(team_arg) != room.team and not (
            optional and args.get(team_arg) is None):  # absent: its own team
        return OWN_TEAM_ONLY
    return None


def encode(cmd, args, msg_id=None):
    """The command's JSON text (compact, UTF-8 kept as it is)."""
    message = {"cmd": cmd}
    if msg_id is not None:
        message["id"] = msg_id
    message.update(args)
    return json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=True)


def check(cmd, args, room, msg_id=None):
    """Checks one command as the server would; returns its JSON text or raises
    the CommandError the server would answer with (client_side=True)."""
    text = encode(cmd, args, msg_id)
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > room.max_message:
        _fail("too_large", f"message of {size} bytes is over the limit of {room.max_message}")
    known = cmd if cmd in COMMANDS else None
    _scan_json(cmd, "cmd", None)
    for name, v in args.items():
        _scan_json(name, name, known)
        _scan_json(v, name, known)
    spec = COMMANDS.get(cmd)
    if spec is None:
        _fail("unknown_cmd", f"unknown command '{_shown(str(cmd))}'")
    if spec.get("open_args"):
        _check_open_args(spec, args)
    else:
        _check_fields(spec, args, room)
    for arg in spec["args"]:
        _check_arg(cmd, arg, args, room)
    _check_one_of(spec, args)
    if spec.get("registry"):
        _check_registry(cmd, args, room)
    why = role_refusal(spec, args, room)
    if why:
        raise command_error("forbidden", why, command=cmd, client_side=True)
    return text


def normalize(value):
    """A value as JSON carries it: numpy scalars and other numbers become int
    or float, tuples lists; raises TypeError for what JSON cannot carry."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, (list, tuple)):
        return [normalize(v) for v in value]
    if isinstance(value, dict):
        return {str(k): normalize(v) for k, v in value.items()}
    if type(value).__name__ == "bool_":  # numpy's
        return bool(value)
    raise TypeError(f"a {type(value).__name__} cannot be sent as JSON")
