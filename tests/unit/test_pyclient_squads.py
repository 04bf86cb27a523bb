#!/usr/bin/python3
"""The flockd Python library's squads (PROTOCOL.md §13): the slot layouts of
§13.3 worked out by hand for each shape (and the sizes §13.3 gives for 200
units), turned and moved; how much of a formation a set of units fills;
and, against a stand-in server on loopback, that the schema's squad
commands send what they are given and return the ack or raise the
server's refusal, and that `squads` messages are kept per team, reach
`on("squads")` and wake `wait_squads`. (The commands' checks:
test_pyclient_schema.py; against the real server:
tests/integration/test_squad_bots.py.)

    /usr/bin/python3 tests/unit/test_pyclient_squads.py [-v]
"""

import asyncio
import json
import math
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "client", "python"))

import websockets  # noqa: E402

import flockd  # noqa: E402
from flockd import squads  # noqa: E402


def close_to(test, got, want, places=9):
    test.assertEqual(len(got), len(want))
    for g, w in zip(got, want):
        test.assertAlmostEqual(g[0], w[0], places=places)
        test.assertAlmostEqual(g[1], w[1], places=places)


class SlotLayouts(unittest.TestCase):
    def test_a_line_is_four_times_as_wide_as_deep(self):
        self.assertEqual(squads.slot_offsets("line", 4),
                         [(-1.5, 0), (-0.5, 0), (0.5, 0), (1.5, 0)])
        # c = ceil(sqrt(40)) = 7: a row of 7, then 3 centred.
        self.assertEqual(squads.slot_offsets("line", 10),
                         [(a, 0) for a in range(-3, 4)] + [(-1, 1), (0, 1), (1, 1)])

    def test_a_column_is_a_quarter_as_wide_as_deep(self):
        self.assertEqual(squads.slot_offsets("column", 3), [(0, 0), (0, 1), (0, 2)])
        # c = ceil(sqrt(ceil(10 / 4))) = 2: five rows of two.
        self.assertEqual(squads.slot_offsets("column", 10),
                         [(a, b) for b in range(5) for a in (-0.5, 0.5)])

    def test_a_box_of_seven_has_three_columns_and_a_centred_last_row(self):
        # c = ceil(sqrt(7)) = 3: rows of 3, 3, then 1 centred at a = 0.
        self.assertEqual(squads.slot_offsets("box", 7),
                         [(-1, 0), (0, 0), (1, 0), (-1, 1), (0, 1), (1, 1), (0, 2)])

    def test_a_wedge_widens_by_two_a_row_and_centres_what_is_left(self):
        # Rows of 1, 3, then 2 of 5: a = -0.5, 0.5.
        self.assertEqual(squads.slot_offsets("wedge", 6),
                         [(0, 0), (-1, 1), (0, 1), (1, 1), (-0.5, 2), (0.5, 2)])

    def test_two_hundred_units_take_the_sizes_the_protocol_gives(self):
        # §13.3: a line of 29 x 7, a box of 15 x 14, a column of 8 x 25, a wedge of 15
        # rows (the last holds the 4 left over, so its widest is row 13 of 27).
        for shape, cols, rows in (("line", 29, 7), ("box", 15, 14), ("column", 8, 25),
                                  ("wedge", 27, 15)):
            offs = squads.slot_offsets(shape, 200)
            widest = max(sum(1 for _, b in offs if b == row) for row in range(rows))
            self.assertEqual((widest, max(b for _, b in offs) + 1), (cols, rows), shape)

    def test_none_has_no_slots_and_an_unknown_shape_is_an_error(self):
        self.assertEqual(squads.slot_offsets("none", 5), [])
        self.assertEqual(squads.slot_offsets("line", 0), [])
        self.assertEqual(squads.entry_slots({"formation": "none", "units": 5}), [])
        with self.assertRaises(ValueError):
            squads.slot_offsets("circle", 3)

    def test_every_shape_has_one_slot_a_unit_and_none_twice(self):
        for shape in ("line", "column", "wedge", "box"):
            for n in (1, 2, 3, 10, 37, 200):
                offs = squads.slot_offsets(shape, n)
                self.assertEqual(len(offs), n, shape)
                self.assertEqual(len(set(offs)), n, shape)

    def test_slots_face_the_heading_with_the_anchor_at_the_front_row(self):
        # Facing +x: r = (0, 1), the column trails behind along -x.
        close_to(self, squads.slots("column", 3, (100, 50), 0.0, 10),
                 [(100, 50), (90, 50), (80, 50)])
        # Facing +y (pi/2): r = (-1, 0), f = (0, 1).
        close_to(self, squads.slots("line", 3, (100, 50), math.pi / 2, 10),
                 [(110, 50), (100, 50), (90, 50)])
        close_to(self, squads.slots("wedge", 4, (0, 0), math.pi / 2, 2),
                 [(0, 0), (2, -2), (0, -2), (-2, -2)])

    def test_a_squads_entry_places_its_slots(self):
        e = {"squad": 1, "units": 3, "do": "move", "formation": "line", "spacing": 12.5,
             "anchor": [612.5, 480.0], "facing": 0.0}
        close_to(self, squads.entry_slots(e), [(612.5, 467.5), (612.5, 480.0), (612.5, 492.5)])
        msg = flockd.Squads({"type": "squads", "tick": 5, "team": 2, "squads": [e]})
        close_to(self, squads.entry_slots(msg.entry(1)), squads.entry_slots(e))
        self.assertIsNone(msg.entry(2))


class SlotFit(unittest.TestCase):
    def test_units_on_their_slots_fill_the_formation(self):
        s = squads.slots("box", 9, (200, 200), 0.7, 10)
        self.assertEqual(squads.slot_fit(s, s, 1.0), 1.0)

    def test_one_unit_fills_one_slot_only(self):
        s = [(0, 0), (1, 0), (2, 0), (3, 0)]
        self.assertEqual(squads.slot_fit(s, [(0.5, 0)], 0.6), 0.25)

    def test_units_away_from_the_slots_fill_nothing(self):
        s = squads.slots("line", 5, (0, 0), 0.0, 10)
        self.assertEqual(squads.slot_fit(s, [(x + 6, y) for x, y in s], 5.0), 0.0)
        self.assertEqual(squads.slot_fit(s, [(x + 4, y) for x, y in s], 5.0), 1.0)

    def test_a_wrapping_world_measures_the_shorter_way_round(self):
        self.assertEqual(squads.slot_fit([(1, 500)], [(1599, 500)], 3), 0.0)
        self.assertEqual(squads.slot_fit([(1, 500)], [(1599, 500)], 3, wrap=(1600, 1000)), 1.0)
        self.assertEqual(squads.slot_fit([(800, 2)], [(800, 999)], 3, wrap=(1600, 1000)), 1.0)

    def test_the_closest_pairs_are_taken_first(self):
        # Unit A is near both slots, B only near the second: the closest
        # pairs first give A the first slot and B the second.
        self.assertEqual(squads.slot_fit([(0, 0), (2, 0)], [(0.9, 0), (2.2, 0)], 1.0), 1.0)


WELCOME = {"type": "welcome", "protocol": 2, "room": "war", "mode": "rts", "role": "player",
           "team": 2, "tick": 1, "tick_hz": 60, "snapshot_hz": 20,
           "world": {"width": 1600, "height": 1000, "edges": "wrap", "capacity": 16384,
                     "max_obstacles": 64},
           "limits": {"max_message": 4096}, "params": [], "values": {}}


def squads_msg(team, tick, *entries):
    return {"type": "squads", "tick": tick, "team": team, "squads": list(entries)}


class StandIn:
    """A loopback server that welcomes, answers each command as `answer`
    says and records what it got."""

    def __init__(self, answer):
        self.answer, self.got = answer, []

    async def handler(self, ws, path=None):
        await ws.send(json.dumps(WELCOME))  # a player of team 2
        async for text in ws:
            m = json.loads(text)
            self.got.append(m)
            for reply in self.answer(m):
                await ws.send(json.dumps(reply))

    async def __aenter__(self):
        self.server = await websockets.serve(self.handler, "127.0.0.1", 0,
                                             subprotocols=["flock.v2", "flock.v1"])
        port = self.server.sockets[0].getsockname()[1]
        self.url = f"ws://127.0.0.1:{port}/ws"
        return self

    async def __aexit__(self, *exc):
        self.server.close()
        await self.server.wait_closed()


def answer(m):
    if m["cmd"] == "select":
        if m.get("ids") == [999]:
            return [{"type": "error", "id": m["id"], "code": "not_found",
                     "message": "select: no live boid 999"}]
        entry = {"squad": 2, "units": 37, "do": "none", "formation": "none", "spacing": 12.5,
                 "anchor": [100.0, 100.0], "facing": 0.0}
        return [{"type": "ack", "id": m["id"], "tick": 10, "squad": 2, "units": 37},
                squads_msg(2, 10, entry)]
    if m["cmd"] == "formation":
        entry = {"squad": m["squad"], "units": 37, "do": "none", "formation": m["shape"],
                 "spacing": m.get("spacing", 12.5), "anchor": [100.0, 100.0], "facing": 0.0}
        return [{"type": "ack", "id": m["id"], "tick": 11, "squad": m["squad"]},
                squads_msg(2, 11, entry)]
    return [{"type": "ack", "id": m["id"], "tick": 12, "squad": m.get("squad")}]


class AgainstAStandIn(unittest.TestCase):
    def run_async(self, coro):
        return asyncio.new_event_loop().run_until_complete(asyncio.wait_for(coro, 20))

    def test_the_methods_send_their_command_and_return_the_ack(self):
        async def go():
            async with StandIn(answer) as s:
                async with flockd.connect_async(s.url, reconnect=False) as c:
                    seen = []
                    c.on("squads", lambda e: seen.append(e.message.tick))
                    ack = await c.select(rect=(10, 20, 300, 200))
                    self.assertEqual((ack.squad, ack.units, ack.tick), (2, 37, 10))
                    ack = await c.formation(squad=2, shape="wedge", spacing=14)
                    self.assertEqual(ack.squad, 2)
                    await c.move(squad=2, to=[(800, 500), (900, 600)], queue=True)
                    await c.follow(squad=2, unit=4711)
                    with self.assertRaises(flockd.NotFound) as cm:
                        await c.select(ids=[999])
                    self.assertFalse(cm.exception.client_side)
                    with self.assertRaises(flockd.BadArgument) as cm:  # two selections
                        await c.select(all=True, ids=[1])
                    self.assertTrue(cm.exception.client_side)
                    msg = await c.wait_squads(lambda m: m.tick == 11, timeout=5)
                    self.assertEqual(c.squads[2], msg)
                    self.assertEqual(c.squad(2).formation, "wedge")
                    self.assertEqual(c.squad(2).spacing, 14)
                    self.assertIsNone(c.squad(3))
                    self.assertEqual(seen, [10, 11])
            return s.got
        got = self.run_async(go())
        self.assertEqual([{k: v for k, v in m.items() if k != "id"} for m in got], [
            {"cmd": "select", "rect": [10, 20, 300, 200]},
            {"cmd": "formation", "squad": 2, "shape": "wedge", "spacing": 14},
            {"cmd": "move", "squad": 2, "to": [[800, 500], [900, 600]], "queue": True},
            {"cmd": "follow", "squad": 2, "unit": 4711},
            {"cmd": "select", "ids": [999]},
        ])

    def test_wait_squads_times_out_naming_the_last_message(self):
        async def go():
            async with StandIn(answer) as s:
                async with flockd.connect_async(s.url, reconnect=False) as c:
                    await c.select(all=True)
                    with self.assertRaises(flockd.Timeout) as cm:
                        await c.wait_squads(lambda m: m.tick > 100, timeout=0.3)
                    self.assertIn("tick", str(cm.exception))
                    self.assertEqual(c._squads_waiters, [], "the waiter that timed out is gone")
        self.run_async(go())

    def test_the_blocking_client_has_the_squads_methods(self):
        async def serve(started, stop):
            async with StandIn(answer) as s:
                started.set_result(s.url)
                await stop
        loop = asyncio.new_event_loop()
        started, stop = loop.create_future(), loop.create_future()
        task = loop.create_task(serve(started, stop))
        url = loop.run_until_complete(started)
        import threading
        t = threading.Thread(target=loop.run_until_complete, args=(task,), daemon=True)
        t.start()
        try:
            with flockd.connect(url, reconnect=False) as c:
                self.assertEqual(c.select(all=True).units, 37)
                self.assertEqual(c.formation(squad=2, shape="box").squad, 2)
                self.assertEqual(c.patrol(squad=2, to=[(5, 5)]).squad, 2)
                self.assertEqual(c.wait_squads(lambda m: m.tick == 11, timeout=5).tick, 11)
                self.assertEqual(c.squad(2).formation, "box")
        finally:
            loop.call_soon_threadsafe(lambda: stop.done() or stop.set_result(None))
            t.join(5)


if __name__ == "__main__":
    unittest.main()
