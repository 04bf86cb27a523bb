#!/usr/bin/env python3
"""The protocol schema's tool: checks proto/schema.json's shape, writes the
tables PROTOCOL.md takes from it and the client libraries' copies of it,
and checks that they are current.

    python3 proto/schema.py check    # exit 1 naming what is stale or wrong
    python3 proto/schema.py write    # rewrite the tables and the copies

PROTOCOL.md holds each generated table between `<!-- schema:NAME -->` and
`<!-- /schema:NAME -->`: the command table (§5.4), the role table (§5.6)
and the error codes (§7.1). Edit schema.json, then run `write`.
Standard library only.
"""
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
SCHEMA = os.path.join(HERE, "schema.json")
PROTOCOL = os.path.join(HERE, "PROTOCOL.md")

# The client libraries' copies: path from the top, and how each is written.
COPIES = [("client/js/src/schema.js", "js"), ("client/python/flockd/schema.json", "json")]

ARG_TYPES = {"int", "number", "string", "enum", "bool", "array", "rect"}
ARG_KEYS = {"name", "type", "min", "max", "required", "default", "doc", "min_len",
            "max_len", "chars", "values", "secret", "items", "min_items", "max_items"}
# An array's items: whole numbers or numbers in [min, max], or points [x, y] in the world.
ITEM_TYPES = {"int", "number", "point"}
CMD_KEYS = {"name", "summary", "who", "who_note", "team_arg", "args", "registry", "ack",
            "errors", "one_of", "open_args"}
BOUND = re.compile(r"^[WHC0-9(),/*. minax]+$")


class SchemaError(Exception):
    pass


def load(path=SCHEMA):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def check_shape(s):
    """Raises SchemaError for anything a reader of the schema would trip on."""
    names = set()
    codes = {e["code"] for e in s["errors"]}
    for c in s["commands"]:
        where = "command %s" % c.get("name")
        if set(c) - CMD_KEYS:
            raise SchemaError("%s: unknown keys %s" % (where, sorted(set(c) - CMD_KEYS)))
        if c["name"] in names:
            raise SchemaError("%s: named twice" % where)
        names.add(c["name"])
        if c["who"] not in s["who"]:
            raise SchemaError("%s: who %r is not one of %s" % (where, c["who"], sorted(s["who"])))
        args = [a["name"] for a in c["args"]]
        if len(set(args)) != len(args) or {"cmd", "id"} & set(args):
            raise SchemaError("%s: argument names repeat or take cmd/id" % where)
        if c.get("team_arg") and c["team_arg"] not in args:
            raise SchemaError("%s: team_arg names no argument" % where)
        if set(c.get("one_of", [])) - set(args):
            raise SchemaError("%s: one_of names no argument" % where)
        for a in c["args"]:
            check_arg(where, a)
        for code in c["errors"]:
            if code not in codes:
                raise SchemaError("%s: unknown error code %s" % (where, code))
    for name, m in s["messages"].items():
        for k, v in m["members"].items():
            if "type" not in v:
                raise SchemaError("message %s: member %s has no type" % (name, k))


def check_arg(where, a):
    where = "%s, argument %s" % (where, a.get("name"))
    if set(a) - ARG_KEYS or a.get("type") not in ARG_TYPES:
        raise SchemaError("%s: unknown keys or type" % where)
    if a["type"] == "array" and (a.get("items") not in ITEM_TYPES or "min_items" not in a or
                                 "max_items" not in a):
        raise SchemaError("%s: an array needs items int|number|point, min_items, max_items" % where)
    if a["type"] in ("int", "number") or a.get("items") in ("int", "number"):
        for k in ("min", "max", "default"):
            v = a.get(k)
            if k != "default" and v is None:
                raise SchemaError("%s: no %s" % (where, k))
            if isinstance(v, str) and not BOUND.match(v):
                raise SchemaError("%s: %s %r is not a bound expression" % (where, k, v))
    if a["type"] == "string" and ("max_len" not in a or a.get("chars") not in ("room", "printable")):
        raise SchemaError("%s: strings need max_len and chars room|printable" % where)
    if a["type"] == "bool" and a.get("values") not in (None, [True], [False]):
        raise SchemaError("%s: a bool's values: [true] or [false]" % where)
    if a["type"] == "enum" and not a.get("values"):
        raise SchemaError("%s: an enum needs values" % where)
    if a.get("required") and "default" in a:
        raise SchemaError("%s: required with a default" % where)


# ---- PROTOCOL.md's tables -------------------------------------------------------

def md_num(v):
    """A bound as people read it: 2^53 and 2^32−1 by name."""
    return {9007199254740992: "2^53", 4294967295: "2^32−1"}.get(v, str(v))


def md_arg(a):
    t, name = a["type"], "`%s`" % a["name"]
    if t in ("int", "number"):
        text = "%s %s %s..%s" % (name, t, md_num(a["min"]), md_num(a["max"]))
    elif t == "enum":
        text = "%s one of %s" % (name, ", ".join("`%s`" % v for v in a["values"]))
    elif t == "bool":
        text = "%s %s" % (name, " or ".join("`%s`" % str(v).lower() for v in a.get("values", [True, False])))
    elif t == "rect":
        text = "%s `[x, y, w, h]`" % name
    elif t == "array":
        items = ("points `[x, y]`" if a["items"] == "point" else "%ss %s..%s" % (
            a["items"], md_num(a["min"]), md_num(a["max"])))
        text = "%s %s..%s %s" % (name, a["min_items"], a["max_items"], items)
    else:
        chars = "`[A-Za-z0-9_-]`" if a["chars"] == "room" else "printable"
        text = "%s string %s..%s bytes, %s" % (name, a.get("min_len", 0), a["max_len"], chars)
    if "default" in a:
        text += ", default %s" % a["default"]
    elif not a.get("required"):
        text += ", optional"
        if a.get("doc"):
            text += " (%s)" % a["doc"]
    return text


def md_command_row(c):
    args = [md_arg(a) for a in c["args"]]
    if c.get("one_of"):
        args.append("exactly one of %s" % ", ".join("`%s`" % n for n in c["one_of"]))
    if c.get("registry"):
        args.append("then one or more `NAME: VALUE` from the parameter registry")
    if c.get("open_args"):
        args.append("any members, any JSON: the room's script reads them (§14)")
    ack = []
    for k, v in c["ack"].items():
        ack.append("`%s`: %s" % (k, v["doc"]) if v.get("doc") else "`%s`" % k)
    errors = ", ".join("`%s`" % e for e in c["errors"])
    return "| `%s` | %s | %s | %s |" % (c["name"], "; ".join(args) or "—",
                                        "; ".join(ack) or "—", errors or "—")


def md_commands(s):
    rows = ["| cmd | arguments | ack members | apply-time errors |", "|---|---|---|---|"]
    return "\n".join(rows + [md_command_row(c) for c in s["commands"]])


def role_cells(c):
    """viewer, player in a sandbox, player in rts, admin: what each may do."""
    if c["who"] == "anyone":
        return ("✓", "✓", "✓", "✓")
    if c["who"] == "admin":
        return ("—", "—", "—", "✓")
    note = c.get("who_note", {})
    if c.get("team_arg"):
        note = {"sandbox": "any group", "rts": "its own team's group only"}
    cell = lambda mode: "✓ " + note[mode] if mode in note else "✓"
    return ("—", cell("sandbox"), cell("rts"), "✓")


def md_roles(s):
    rows, order = {}, []
    for c in s["commands"]:
        key = role_cells(c)
        if key not in rows:
            rows[key] = []
            order.append(key)
        rows[key].append("`%s`" % c["name"])
    out = ["| cmd | viewer | player, sandbox | player, rts | admin |", "|---|---|---|---|---|"]
    for key in order:
        out.append("| %s | %s |" % (", ".join(rows[key]), " | ".join(key)))
    return "\n".join(out)


def md_errors(s):
    out = ["| code | when | decided by |", "|---|---|---|"]
    for e in s["errors"]:
        out.append("| `%s` | %s | %s |" % (e["code"], e["when"], e["by"]))
    return "\n".join(out)


TABLES = {"commands": md_commands, "roles": md_roles, "errors": md_errors}


def render_protocol(text, s):
    for name, render in TABLES.items():
        pattern = re.compile(r"(<!-- schema:%s -->\n).*?(\n<!-- /schema:%s -->)" % (name, name),
                             re.S)
        if not pattern.search(text):
            raise SchemaError("PROTOCOL.md has no <!-- schema:%s --> block" % name)
        text = pattern.sub(lambda m: m.group(1) + render(s) + m.group(2), text)
    return text


# ---- the libraries' copies ---------------------------------------------------------

def render_copy(kind, s):
    body = json.dumps(s, indent=1, ensure_ascii=False)
    if kind == "json":
        return body + "\n"
    return ("// Generated from proto/schema.json by proto/schema.py: do not edit.\n"
            "export default " + body + ";\n")


def outputs(s):
    """(path, wanted text) for every file the schema writes."""
    with open(PROTOCOL, encoding="utf-8") as f:
        yield PROTOCOL, render_protocol(f.read(), s)
    for rel, kind in COPIES:
        yield os.path.join(TOP, rel), render_copy(kind, s)


def main(argv):
    if len(argv) != 2 or argv[1] not in ("check", "write"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        s = load()
        check_shape(s)
        stale = []
        for path, wanted in outputs(s):
            have = open(path, encoding="utf-8").read() if os.path.exists(path) else None
            if have == wanted:
                continue
            if argv[1] == "write":
                with open(path, "w", encoding="utf-8") as f:
                    f.write(wanted)
                print("schema: wrote %s" % os.path.relpath(path, TOP))
            else:
                stale.append(os.path.relpath(path, TOP))
    except (SchemaError, KeyError, ValueError) as e:
        print("schema: %s" % e, file=sys.stderr)
        return 1
    if stale:
        print("schema: out of date with proto/schema.json: %s (run python3 proto/schema.py write)"
              % ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
