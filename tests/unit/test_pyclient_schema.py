#!/usr/bin/python3
"""The flockd Python library's command checks against proto/schema.json, as
tests/unit/test_schema.c checks the C parser: every command of the schema has
a method with the schema's arguments; each argument is accepted at both ends
of its range and refused past them (out_of_range), when missing if required,
mistyped, not whole where an integer is needed (bad_arg); strings keep their
lengths and characters and enums their values; an unknown member is bad_arg;
the registry's parameters are checked by the welcome's table; NaN, NUL and
overlong numbers are bad_json, an overlong message too_large, an unknown
command unknown_cmd; the role table refuses what each command's "who" says;
every error code of the schema has its class. Also the package's copy of the
schema is proto/schema.json's, messages read as attributes and the reconnect
backoff stays within its bounds. (What the server answers for the same
messages: tests/integration/test_pyclient.py.)

    /usr/bin/python3 tests/unit/test_pyclient_schema.py [-v]
"""

import inspect
import json
import math
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "client", "python"))

import numpy as np  # noqa: E402

import flockd  # noqa: E402
from flockd import errors, schema  # noqa: E402
from flockd.messages import Ack, Welcome  # noqa: E402

# The parameter registry as a welcome lists it (a part of server/sim/params.c).
PARAMS = [
    {"name": "max_speed", "default": 100, "min": 1, "max": 1000, "integer": False},
    {"name": "fov", "default": 270, "min": 0, "max": 360, "integer": False},
    {"name": "w_alignment", "default": 2, "min": 0, "max": 10, "integer": False},
    {"name": "own_group_only", "default": 0, "min": 0, "max": 1, "integer": True},
]


def room(role="admin", mode="sandbox", team=None, max_message=1 << 20):
    return schema.Room(1600, 1000, 16384, max_message, PARAMS, role, mode, team)


ADMIN = room()


def refusal(cmd, args, at=ADMIN):
    """The code the checks give, or None if they let the command through."""
    try:
        schema.check(cmd, args, at)
        return None
    except errors.CommandError as e:
        assert e.client_side and isinstance(e, errors.BY_CODE.get(e.code, errors.CommandError))
        return e.code


def valid(arg, at_max):
    """A valid value of arg at one end of its range."""
    t = arg["type"]
    if t in ("int", "number"):
        v = schema.bound(arg["max" if at_max else "min"], ADMIN)
        return (math.floor(v) if at_max else math.ceil(v)) if t == "int" else v
    if t == "enum":
        return arg["values"][-1 if at_max else 0]
    if t == "bool":
        if "values" in arg:  # select's all takes only true
            return arg["values"][-1 if at_max else 0]
        return at_max
    if t == "rect":
        return [1600, 1000, 1e7, 1e7] if at_max else [0, 0, 1, 1]
    if t == "array":
        n = arg["max_items" if at_max else "min_items"]
        if arg["items"] == "point":
            return [[1600, 1000] if at_max else [0, 0]] * n
        return [valid(dict(arg, type=arg["items"]), at_max)] * n
    return "a" * (arg["max_len"] if at_max else arg.get("min_len", 0))


def message(spec, at_max=False, every=True, skip=None):
    """Every required argument (all with `every`) at one end of its range,
    and one of the one_of arguments: `skip` if it is one (the caller adds
    it), else the first."""
    one_of = spec.get("one_of", [])
    one = skip if skip in one_of else (one_of[0] if one_of else None)
    args = {a["name"]: valid(a, at_max) for a in spec["args"]
            if ((a["name"] == one) if a["name"] in one_of else (every or a.get("required")))
            and a["name"] != skip}
    if spec.get("registry"):
        args["w_alignment"] = 1.0
    return args


def each_arg(kinds):
    for spec in schema.SCHEMA["commands"]:
        for arg in spec["args"]:
            if arg["type"] in kinds:
                yield spec, arg


class TheChecksFollowTheSchema(unittest.TestCase):
    def test_the_packages_copy_is_the_protocols_schema(self):
        with open(os.path.join(ROOT, "proto", "schema.json"), encoding="utf-8") as f:
            self.assertEqual(schema.SCHEMA, json.load(f))

    def test_every_command_has_a_method_with_the_schemas_arguments(self):
        for spec in schema.SCHEMA["commands"]:
            for cls in (flockd.Client, flockd.BlockingClient):
                method = getattr(cls, spec["name"])
                params = inspect.signature(method).parameters
                names = [a["name"] for a in spec["args"]]
                self.assertTrue(set(names) <= set(params), (cls, spec["name"]))
                for a in spec["args"]:
                    required = params[a["name"]].default is inspect.Parameter.empty
                    self.assertEqual(required, bool(a.get("required")), (spec["name"], a["name"]))

    def test_commands_are_accepted_at_both_ends_of_every_range(self):
        for spec in schema.SCHEMA["commands"]:
            for at_max in (False, True):
                for every in (False, True):
                    args = message(spec, at_max, every)
                    self.assertIsNone(refusal(spec["name"], args), (spec["name"], args))

    def test_a_missing_required_argument_is_bad_arg_naming_it(self):
        for spec, arg in each_arg({"int", "number", "string", "enum"}):
            if not arg.get("required"):
                continue
            with self.assertRaises(errors.BadArgument) as e:
                schema.check(spec["name"], message(spec, skip=arg["name"]), ADMIN)
            self.assertEqual(e.exception.message, f"{spec['name']}: missing field '{arg['name']}'")

    def test_numbers_past_their_range_are_out_of_range_and_fractions_of_ints_bad_arg(self):
        for spec, arg in each_arg({"int", "number"}):
            name, lo = arg["name"], schema.bound(arg["min"], ADMIN)
            hi = schema.bound(arg["max"], ADMIN)
            step = lambda v: max(1.0, math.ceil(abs(v) * 1e-6))  # noqa: E731
            for bad in (lo - step(lo), hi + step(hi)):
                args = dict(message(spec), **{name: bad})
                self.assertEqual(refusal(spec["name"], args), "out_of_range", (name, bad))
            for bad in ("1", True, None, [1]):
                args = dict(message(spec), **{name: bad})
                self.assertEqual(refusal(spec["name"], args), "bad_arg", (name, bad))
            if arg["type"] == "int" and hi - lo >= 1:
                args = dict(message(spec), **{name: lo + 0.5})
                self.assertEqual(refusal(spec["name"], args), "bad_arg", name)

    def test_the_message_names_the_command_the_field_and_the_range_as_the_server_does(self):
        with self.assertRaises(errors.OutOfRange) as e:
            schema.check("seek", {"group": 1, "x": 1601, "y": 0}, ADMIN)
        self.assertEqual(e.exception.message, "seek: field 'x' must be in [0, 1600]")
        self.assertEqual(str(e.exception),
                         "seek refused before sending (out_of_range): seek: field 'x' must be "
                         "in [0, 1600]")
        with self.assertRaises(errors.OutOfRange) as e:
            schema.check("obstacle_add", {"x": 1, "y": 1, "r": 250.5}, ADMIN)
        self.assertEqual(e.exception.message, "obstacle_add: field 'r' must be in [1, 250]")

    def test_booleans_take_only_true_and_false(self):
        for spec, arg in each_arg({"bool"}):
            for bad in ("true", 1, 0, None):
                args = dict(message(spec), **{arg["name"]: bad})
                self.assertEqual(refusal(spec["name"], args), "bad_arg", (arg["name"], bad))

    def test_a_params_reset_needs_no_parameter_but_params_without_one_is_bad_arg(self):
        self.assertIsNone(refusal("params", {"group": 3, "reset": True}))
        self.assertEqual(refusal("params", {"group": 3, "reset": False}), "bad_arg")
        self.assertEqual(refusal("params", {"group": 3}), "bad_arg")

    def test_strings_keep_their_lengths_and_characters_and_enums_their_values(self):
        for spec, arg in each_arg({"string", "enum"}):
            name = arg["name"]
            if arg["type"] == "enum":
                for bad, code in (("none_of_these", "bad_arg"), (1, "bad_arg")):
                    args = dict(message(spec), **{name: bad})
                    self.assertEqual(refusal(spec["name"], args), code, (name, bad))
                continue
            cases = [("a" * (arg["max_len"] + 1), "out_of_range"), (1, "bad_arg"),
                     ("a b" if arg["chars"] == "room" else "a\x7f", "bad_arg"),
                     ("é" * (arg["max_len"] // 2 + 1), "out_of_range")]  # bytes, not characters
            if arg.get("min_len", 0) > 0:
                cases.append(("", "out_of_range"))
            for bad, code in cases:
                args = dict(message(spec), **{name: bad})
                self.assertEqual(refusal(spec["name"], args), code, (name, bad))

    def test_a_member_the_schema_does_not_name_is_bad_arg(self):
        for spec in schema.SCHEMA["commands"]:
            args = dict(message(spec), not_an_argument=1)
            # A command with open_args (game, §14.2) takes any member.
            want = None if spec.get("open_args") else "bad_arg"
            self.assertEqual(refusal(spec["name"], args), want, spec["name"])

    def test_a_game_takes_any_json_members_within_1024_bytes(self):
        for anyone in ("viewer", "player", "admin"):
            self.assertIsNone(refusal("game", {"action": "ready"}, room(anyone)), anyone)
        self.assertIsNone(refusal("game", {}))
        self.assertIsNone(refusal("game", {"to": [[1, 2], [3, 4]], "opts": {"fast": True},
                                           "n": None}))
        # {"s":"..."}: 8 bytes around the string, 1016 in it is 1024 exactly.
        self.assertIsNone(refusal("game", {"s": "a" * 1016}))
        self.assertEqual(refusal("game", {"s": "a" * 1017}), "too_large")
        self.assertEqual(refusal("game", {"s": "é" * 509}), "too_large")  # bytes, not characters
        with self.assertRaises(errors.TooLarge) as e:
            schema.check("game", {"s": "a" * 2000}, ADMIN)
        self.assertEqual(e.exception.message,
                         "game: the members of a game command are over 1024 bytes")
        for own in ("cmd", "id"):
            self.assertEqual(refusal("game", {own: 1}), "bad_arg", own)
        self.assertEqual(refusal("game", {"deep": [[[[1]]]]}), "bad_json")

    def test_params_are_checked_by_the_welcomes_registry(self):
        self.assertIsNone(refusal("params", {"group": 3, "fov": 360, "own_group_only": 1.0}))
        self.assertEqual(refusal("params", {"group": 3}), "bad_arg")
        self.assertEqual(refusal("params", {"w_alignment": 10.5}), "out_of_range")
        self.assertEqual(refusal("params", {"own_group_only": 0.5}), "bad_arg")
        with self.assertRaises(errors.BadArgument) as e:
            schema.check("params", {"wings": 2}, ADMIN)
        self.assertEqual(e.exception.message, "params: unknown parameter 'wings'")

    def test_what_json_cannot_carry_is_bad_json_and_a_long_message_too_large(self):
        for bad in (math.nan, math.inf, -math.inf, 10 ** 70):
            self.assertEqual(refusal("seek", {"group": 1, "x": bad, "y": 1}), "bad_json", bad)
        for bad in ("a\x00b", "\ud800"):
            self.assertEqual(refusal("join", {"room": "r", "role": "viewer", "name": bad}),
                             "bad_json", bad)
        self.assertEqual(refusal("seek", {"group": 1, "x": 1, "y": 1, "z": [[[[1]]]]}),
                         "bad_json")
        small = room(max_message=60)
        self.assertEqual(refusal("join", {"room": "r" * 30, "role": "viewer",
                                          "name": "n" * 30}, small), "too_large")
        self.assertEqual(refusal("nonsense", {}), "unknown_cmd")
        with self.assertRaises(errors.UnknownCommand) as e:
            schema.check("x" * 40, {}, ADMIN)
        self.assertEqual(e.exception.message, f"unknown command '{'x' * 32}...'")

    def test_the_role_table_refuses_what_each_commands_who_says(self):
        for spec in schema.SCHEMA["commands"]:
            args = message(spec)
            team_arg = spec.get("team_arg")
            if team_arg:
                args[team_arg] = 3
            cmd, who = spec["name"], spec["who"]
            self.assertIsNone(refusal(cmd, args, room("admin")), cmd)
            viewer = refusal(cmd, args, room("viewer"))
            player = refusal(cmd, args, room("player"))
            own = refusal(cmd, args, room("player", "rts", 3))
            other = refusal(cmd, args, room("player", "rts", 2))
            self.assertEqual(viewer, None if who == "anyone" else "forbidden", cmd)
            self.assertEqual((player, own), (None, None) if who != "admin" else
                             ("forbidden", "forbidden"), cmd)
            if who != "admin":
                self.assertEqual(other, "forbidden" if team_arg else None, cmd)
        with self.assertRaises(errors.Forbidden) as e:
            schema.check("spawn", {"n": 1, "group": 0, "x": 1, "y": 1}, room("player"))
        self.assertEqual(e.exception.message, schema.ADMIN_ONLY)

    def test_every_error_code_has_its_class_and_an_unknown_one_is_generic(self):
        self.assertEqual(set(errors.BY_CODE), set(schema.ERROR_CODES))
        for code, cls in errors.BY_CODE.items():
            e = errors.command_error(code, "why", "seek")
            self.assertIs(type(e), cls)
            self.assertEqual((e.code, e.command, e.client_side), (code, "seek", False))
        e = errors.command_error("brand_new", "why", "seek")
        self.assertIs(type(e), errors.CommandError)
        self.assertEqual(e.code, "brand_new")

    def test_bounds_are_taken_over_the_world_in_float32(self):
        odd = schema.Room(1234.6, 1000, 10, 4096)  # float32: 1234.5999755859375
        self.assertEqual(schema.bound("W", odd), float(np.float32(1234.6)))
        self.assertEqual(schema.bound("min(W,H)/4", ADMIN), 250)
        self.assertEqual(schema.bound("min(50,max(W,H))", ADMIN), 50)
        self.assertEqual(schema.bound("C", ADMIN), 16384)
        self.assertEqual(refusal("seek", {"group": 1, "x": 1234.6, "y": 1}, odd), "out_of_range")

    def test_numpy_numbers_are_sent_as_json_numbers(self):
        self.assertEqual(schema.normalize(np.float32(0.5)), 0.5)
        self.assertIs(type(schema.normalize(np.int64(3))), int)
        self.assertIs(schema.normalize(np.bool_(True)), True)
        with self.assertRaises(TypeError):
            schema.normalize(object())


class MessagesAndBackoff(unittest.TestCase):
    def test_messages_read_as_attributes_and_optional_members_as_none(self):
        w = Welcome({"type": "welcome", "protocol": 2, "world": {"width": 1600.0},
                     "flock": {"tick": 4, "local_polarization": 0.5}, "later": 1})
        self.assertEqual((w.protocol, w.world.width, w.flock.local_polarization), (2, 1600, 0.5))
        self.assertIsNone(w.team)
        self.assertIsNone(w.world.capacity)
        self.assertEqual(w.later, 1)  # a member added later still reads
        self.assertEqual(w["protocol"], 2)
        with self.assertRaises(AttributeError):
            w.nothing_like_this
        ack = Ack({"type": "ack", "id": 1, "tick": 9, "stats": {"boids": 5, "flock": None}},
                  "stats")
        self.assertIsInstance(ack.stats, flockd.Stats)
        self.assertEqual((ack.tick, ack.stats.boids, ack.stats.flock), (9, 5, None))
        self.assertIsNone(Ack({"type": "ack", "tick": 1}, "obstacle_add").obstacle)

    def test_a_dilation_message_is_kept_and_handed_on_and_unknown_types_are_ignored(self):
        c = flockd.Client("ws://127.0.0.1:9/ws")  # not connected: fed by hand
        seen = []
        c.on("dilation", lambda e: seen.append(e.message))
        self.assertIsNone(c.dilation)
        c._take(json.dumps({"type": "dilation", "room": "big", "factor": 0.042,
                            "tick_hz": 2.52, "snapshot_hz": 2.52}))
        self.assertIsInstance(c.dilation, flockd.Dilation)
        self.assertEqual((c.dilation.room, c.dilation.factor, c.dilation.tick_hz,
                          c.dilation.snapshot_hz), ("big", 0.042, 2.52, 2.52))
        self.assertEqual(seen, [c.dilation])
        c._take(json.dumps({"type": "something_newer", "x": 1}))  # MUST be ignored (§2)
        self.assertEqual(len(seen), 1)
        st = Ack({"type": "ack", "id": 1, "tick": 9,
                  "stats": {"dilation": 0.5, "snapshot_hz": 5, "flock": None}}, "stats").stats
        self.assertEqual((st.dilation, st.snapshot_hz), (0.5, 5))
        self.assertIsNone(Welcome({"type": "welcome"}).dilation)  # absent: it keeps time

    def test_the_backoff_doubles_up_to_its_cap_with_jitter_in_the_upper_half(self):
        for r in (0.0, 0.5, 0.999):
            b = flockd.Backoff(0.1, 1.0, rng=lambda: r)
            delays = [b.delay(k) for k in range(8)]
            for k, d in enumerate(delays):
                top = min(1.0, 0.1 * 2 ** k)
                self.assertTrue(top / 2 <= d <= top, (k, d))
            self.assertLessEqual(max(delays), 1.0)


if __name__ == "__main__":
    unittest.main()
