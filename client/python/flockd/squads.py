"""Squads, orders and formations (PROTOCOL.md §13): the commands' arguments
and their checks, and where a formation's slots lie.

`select_args`, `order_args` and `formation_args` build the JSON arguments
of `select`, `order` and `formation` from Python values (a point may be a
tuple, a numpy pair, ...), checked as §13 says before anything is sent:
the library's own refusal is the CommandError the server would answer
(client_side=True). What only the live room can decide (an empty
selection, an id of no live boid or of another team, no free squad
number, a squad with no units) is left to the server.

`slots(shape, n, anchor, facing, spacing)` is §13.3's layout: the n slot
positions of a formation; `entry_slots(entry)` those of one squad of a
`squads` message (§13.5). `slot_fit(slots, points, tolerance)` says how
much of a formation is filled: the share of its slots with a unit of
`points` (each unit counted for one slot) within `tolerance`.

Pure: no I/O, no state; safe from any thread.
"""

import math

from . import schema
from .errors import command_error

SHAPES = ("none", "line", "column", "wedge", "box")
ORDERS = ("move", "patrol", "follow", "hold", "stop")
SELECTIONS = ("rect", "ids", "all", "squads")
MAX_SQUAD = 32
MAX_TEAM = 255
MAX_IDS = 256
MAX_WAYPOINTS = 16
MAX_PATROL = 15
SPACING_MIN, SPACING_MAX = 1.0, 200.0
# A boid id is a uint32 other than 0 (§12.2).
ID_MAX = 0xFFFFFFFF


def _fail(cmd, code, message):
    raise command_error(code, f"{cmd}: {message}", command=cmd, client_side=True)


def _number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _int_in(cmd, name, v, lo, hi):
    if not _number(v) or v != math.floor(v):
        _fail(cmd, "bad_arg", f"field '{name}' must be an integer")
    if v < lo or v > hi:
        _fail(cmd, "out_of_range", f"field '{name}' must be in [{lo}, {hi}]")


def _list_of(cmd, name, v, lo, hi):
    if not isinstance(v, list):
        _fail(cmd, "bad_arg", f"field '{name}' must be an array")
    if not lo <= len(v) <= hi:
        _fail(cmd, "out_of_range", f"field '{name}' must hold {lo} to {hi} items")


def _point(cmd, name, p, room):
    if not isinstance(p, list) or len(p) != 2 or not all(_number(c) for c in p):
        _fail(cmd, "bad_arg", f"field '{name}' must hold points [x, y]")
    x, y = p
    if not (math.isfinite(x) and math.isfinite(y) and 0 <= x <= room.width and
            0 <= y <= room.height):
        _fail(cmd, "out_of_range",
              f"field '{name}': point [{x:g}, {y:g}] is outside the world "
              f"[0, {room.width:g}] x [0, {room.height:g}]")


def _check_team(cmd, args, room):
    """Who may address which team (§13): viewers nobody, a player its own
    team (`team`, if given, must be it), an admin the team it names."""
    if room.role == "viewer":
        raise command_error("forbidden", schema.VIEWER_REFUSED, command=cmd, client_side=True)
    if "team" in args:
        _int_in(cmd, "team", args["team"], 0, MAX_TEAM)
    if room.role == "admin":
        if "team" not in args:
            _fail(cmd, "bad_arg", "missing field 'team' (an admin names the team)")
    elif "team" in args and room.team is not None and args["team"] != room.team:
        raise command_error("forbidden", schema.OWN_TEAM_ONLY, command=cmd, client_side=True)


def _only_fields(cmd, args, known):
    for name in args:
        if name not in known:
            _fail(cmd, "bad_arg", f"unknown field '{schema._shown(name)}'")


def check_select(args, room):
    """Raises the CommandError the server would answer to `select` args."""
    cmd = "select"
    _only_fields(cmd, args, SELECTIONS + ("squad", "team"))
    given = [k for k in SELECTIONS if k in args]
    if len(given) != 1:
        _fail(cmd, "bad_arg", "give exactly one of rect, ids, all, squads")
    kind, v = given[0], args[given[0]]
    if kind == "rect":
        _check_rect(cmd, v, room)
    elif kind == "ids":
        _list_of(cmd, "ids", v, 1, MAX_IDS)
        for i in v:
            _int_in(cmd, "ids", i, 1, ID_MAX)
    elif kind == "all":
        if v is not True:
            _fail(cmd, "bad_arg", "field 'all' must be true")
    else:
        _list_of(cmd, "squads", v, 1, MAX_SQUAD)
        for s in v:
            _int_in(cmd, "squads", s, 0, MAX_SQUAD)
    if "squad" in args:
        _int_in(cmd, "squad", args["squad"], 0, MAX_SQUAD)
    _check_team(cmd, args, room)


def _check_rect(cmd, v, room):
    if not isinstance(v, list) or len(v) != 4 or not all(_number(c) for c in v):
        _fail(cmd, "bad_arg", "field 'rect' must be [x, y, w, h]")
    x, y, w, h = v
    if not all(math.isfinite(c) for c in v) or not (0 <= x <= room.width and
                                                    0 <= y <= room.height):
        _fail(cmd, "out_of_range", "field 'rect' must start in the world")
    if w <= 0 or h <= 0:
        _fail(cmd, "bad_arg", "field 'rect' must have w > 0 and h > 0")


def check_order(args, room):
    """Raises the CommandError the server would answer to `order` args."""
    cmd = "order"
    _only_fields(cmd, args, ("squad", "do", "to", "queue", "squad_of", "unit", "team"))
    if "squad" not in args or "do" not in args:
        _fail(cmd, "bad_arg", f"missing field '{'squad' if 'squad' not in args else 'do'}'")
    _int_in(cmd, "squad", args["squad"], 1, MAX_SQUAD)
    do = args["do"]
    if do not in ORDERS:
        _fail(cmd, "bad_arg", f"field 'do' must be one of {', '.join(ORDERS)}")
    allowed = {"move": ("to", "queue"), "patrol": ("to",), "follow": ("squad_of", "unit")}
    for name in ("to", "queue", "squad_of", "unit"):
        if name in args and name not in allowed.get(do, ()):
            _fail(cmd, "bad_arg", f"field '{name}' does not go with do '{do}'")
    if do in ("move", "patrol"):
        if "to" not in args:
            _fail(cmd, "bad_arg", "missing field 'to'")
        _list_of(cmd, "to", args["to"], 1, MAX_WAYPOINTS if do == "move" else MAX_PATROL)
        for p in args["to"]:
            _point(cmd, "to", p, room)
        if "queue" in args and not isinstance(args["queue"], bool):
            _fail(cmd, "bad_arg", "field 'queue' must be true or false")
    elif do == "follow":
        if ("squad_of" in args) == ("unit" in args):
            _fail(cmd, "bad_arg", "follow takes exactly one of squad_of, unit")
        if "squad_of" in args:
            _int_in(cmd, "squad_of", args["squad_of"], 1, MAX_SQUAD)
        else:
            _int_in(cmd, "unit", args["unit"], 1, ID_MAX)
    _check_team(cmd, args, room)


def check_formation(args, room):
    """Raises the CommandError the server would answer to `formation` args."""
    cmd = "formation"
    _only_fields(cmd, args, ("squad", "shape", "spacing", "team"))
    for name in ("squad", "shape"):
        if name not in args:
            _fail(cmd, "bad_arg", f"missing field '{name}'")
    _int_in(cmd, "squad", args["squad"], 1, MAX_SQUAD)
    if args["shape"] not in SHAPES:
        _fail(cmd, "bad_arg", f"field 'shape' must be one of {', '.join(SHAPES)}")
    s = args.get("spacing")
    if s is not None:
        if not _number(s):
            _fail(cmd, "bad_arg", "field 'spacing' must be a number")
        if not (math.isfinite(s) and SPACING_MIN <= s <= SPACING_MAX):
            _fail(cmd, "out_of_range", f"field 'spacing' must be in [{SPACING_MIN:g}, "
                  f"{SPACING_MAX:g}]")
    _check_team(cmd, args, room)


CHECKS = {"select": check_select, "order": check_order, "formation": check_formation}
schema.HAND_CHECKED.update(CHECKS)


def _given(**args):
    return {k: schema.normalize(v) for k, v in args.items() if v is not None}


def _points(to):
    """`to` as a list of [x, y]: one point (x, y) or a sequence of them."""
    if to is None:
        return None
    to = schema.normalize(to)
    if isinstance(to, list) and len(to) == 2 and all(_number(c) for c in to):
        return [to]
    return to


def select_args(rect=None, ids=None, all=None, squads=None, squad=None, team=None):
    """`select`'s arguments (None: left out)."""
    return _given(rect=rect, ids=ids, all=all, squads=squads, squad=squad, team=team)


def order_args(squad, do, to=None, queue=None, squad_of=None, unit=None, team=None):
    """`order`'s arguments; `to` may be one point (x, y) or a list of them."""
    return _given(squad=squad, do=do, to=_points(to), queue=queue, squad_of=squad_of,
                  unit=unit, team=team)


def formation_args(squad, shape, spacing=None, team=None):
    """`formation`'s arguments (spacing None: the server's default)."""
    return _given(squad=squad, shape=shape, spacing=spacing, team=team)


# ---- §13.3: where the slots are -------------------------------------------------------

def slot_offsets(shape, n):
    """The (a, b) of slots 0..n-1 of `shape` (§13.3): a across the facing
    (along r), b back from the front row (along -f), both in spacings.
    `none` has no slots (an empty list)."""
    if shape == "line":
        return [(i - (n - 1) / 2, 0.0) for i in range(n)]
    if shape == "column":
        return [(0.0, float(i)) for i in range(n)]
    if shape == "box":
        c = math.isqrt(n - 1) + 1 if n > 0 else 0  # ceil(sqrt(n)), exact for any n
        out = []
        for i in range(n):
            b = i // c
            m = min(c, n - b * c)
            out.append(((i % c) - (m - 1) / 2, float(b)))
        return out
    if shape == "wedge":
        out = []
        b = 0
        while len(out) < n:
            m = min(2 * b + 1, n - len(out))  # row b starts at slot b*b
            out += [(j - (m - 1) / 2, float(b)) for j in range(m)]
            b += 1
        return out
    if shape == "none":
        return []
    raise ValueError(f"unknown formation shape {shape!r}")


def slots(shape, n, anchor, facing, spacing):
    """The n slot positions [(x, y)] of a formation with its anchor (the
    middle of its front row) at `anchor`, facing angle `facing` (radians)
    and `spacing` world units between neighbours (§13.3)."""
    fx, fy = math.cos(facing), math.sin(facing)
    rx, ry = -fy, fx
    ax, ay = anchor
    return [(ax + a * spacing * rx - b * spacing * fx, ay + a * spacing * ry - b * spacing * fy)
            for a, b in slot_offsets(shape, n)]


def entry_slots(entry):
    """The slots of one squad of a `squads` message (a dict or Message with
    formation, units, anchor, facing, spacing); [] for `none`."""
    get = entry.get
    if get("formation", "none") == "none":
        return []
    return slots(get("formation"), get("units"), get("anchor"), get("facing"), get("spacing"))


def _gap(d, size):
    """|d| the shorter way round an axis of `size` (None: no wrap)."""
    d = abs(d)
    return d if size is None else min(d % size, size - d % size)


def slot_fit(slot_list, points, tolerance, wrap=None):
    """The share (0..1) of the slots that have a unit of `points` within
    `tolerance` of them, each unit taken for one slot at most (the closest
    pairs first). 1.0 for no slots. `wrap`: (width, height) of a wrapping
    world, whose distances are the shorter way round."""
    if not slot_list:
        return 1.0
    w, h = wrap if wrap else (None, None)
    pairs = []
    t2 = tolerance * tolerance
    for si, (sx, sy) in enumerate(slot_list):
        for pi, (px, py) in enumerate(points):
            d2 = _gap(sx - px, w) ** 2 + _gap(sy - py, h) ** 2
            if d2 <= t2:
                pairs.append((d2, si, pi))
    pairs.sort()
    slot_taken, unit_taken = set(), set()
    for _, si, pi in pairs:
        if si not in slot_taken and pi not in unit_taken:
            slot_taken.add(si)
            unit_taken.add(pi)
    return len(slot_taken) / len(slot_list)


__all__ = ["SHAPES", "ORDERS", "CHECKS", "select_args", "order_args", "formation_args",
           "slot_offsets", "slots", "entry_slots", "slot_fit"]
