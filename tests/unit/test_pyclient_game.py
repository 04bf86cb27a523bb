#!/usr/bin/python3
"""The flockd Python library's room scripts (PROTOCOL.md §14), against a
stand-in server on loopback: `game(**members)` and `send_game(members)`
send what they are given and return the ack or raise the script's
refusal (Refused); the welcome's script is `room_script`; `game`
messages are kept room-wide (`room_game`) and per team (`team_games`),
reach `on("game")` and wake `wait_game`; `script` messages reach
`on("script")`; another room's welcome forgets them. (The command's
checks: test_pyclient_schema.py; against the real server:
tests/integration/test_game_clients.py, run by hand.)

    /usr/bin/python3 tests/unit/test_pyclient_game.py [-v]
"""

import asyncio
import json
import os
import sys
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "client", "python"))

import websockets  # noqa: E402

import flockd  # noqa: E402

SCRIPT = {"name": "flockwars", "hash": "9b9114032e7b01a1"}


def welcome(room="w1", script=SCRIPT):
    w = {"type": "welcome", "protocol": 2, "room": room, "mode": "rts", "role": "player",
         "team": 2, "tick": 1, "tick_hz": 60, "snapshot_hz": 20,
         "world": {"width": 1600, "height": 1000, "edges": "contain", "capacity": 16384,
                   "max_obstacles": 64},
         "limits": {"max_message": 4096}, "params": [], "values": {}}
    if script:
        w["script"] = script
    return w


def game(tick, state, team=None):
    m = {"type": "game", "tick": tick, "state": state}
    if team is not None:
        m["team"] = team
    return m


LOBBY = {"phase": "lobby", "round": 1, "ready": {}, "actions": ["ready", "unready"]}


def answer(m):
    """The flockwars lobby, played by hand: ready starts the countdown."""
    if m["cmd"] == "join":
        return [{"type": "ack", "id": m["id"], "tick": 5, "room": m["room"], "role": "player",
                 "client": 9, "team": 1, "rejoin": "ab"},
                welcome(m["room"], None if m["room"] == "plain" else SCRIPT)]
    if m.get("action") == "ready":
        return [{"type": "ack", "id": m["id"], "tick": 20},
                game(20, dict(LOBBY, ready=[2])),
                game(20, {"phase": "countdown", "round": 1, "ready": [2], "time_left": 3}),
                game(21, {"score": 4}, team=2)]
    if m.get("action") == "disable":
        return [{"type": "ack", "id": m["id"], "tick": 22},
                {"type": "script", "room": "w1", "name": "flockwars", "hash": SCRIPT["hash"],
                 "status": "disabled", "reason": "its instruction budget"}]
    return [{"type": "error", "id": m["id"], "code": "refused",
             "message": f"game: unknown action: {m.get('action')}"}]


class StandIn:
    """A loopback server that welcomes a player of team 2 in a scripted room,
    sends the lobby's state, answers each command as `answer` says and
    records what it got."""

    def __init__(self):
        self.got = []

    async def handler(self, ws, path=None):
        await ws.send(json.dumps(welcome()))
        await ws.send(json.dumps(game(1, LOBBY)))
        async for text in ws:
            m = json.loads(text)
            self.got.append(m)
            for reply in answer(m):
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


def sent(got):
    return [{k: v for k, v in m.items() if k != "id"} for m in got]


class AgainstAStandIn(unittest.TestCase):
    def run_async(self, coro):
        return asyncio.new_event_loop().run_until_complete(asyncio.wait_for(coro, 20))

    def test_game_sends_its_members_and_keeps_the_latest_state(self):
        async def go():
            async with StandIn() as s:
                async with flockd.connect_async(s.url, reconnect=False) as c:
                    seen = []
                    c.on("game", lambda e: seen.append((e.message.team, e.message.tick)))
                    self.assertEqual((c.room_script.name, c.room_script.hash),
                                     (SCRIPT["name"], SCRIPT["hash"]))
                    first = await c.wait_game(lambda g: True, timeout=5)
                    self.assertEqual((first.state.phase, first.state.actions),
                                     ("lobby", ["ready", "unready"]))
                    self.assertIsNone(first.state.winner)  # a conventional key left out
                    self.assertIsNone(first.team)
                    ack = await c.game(action="ready")
                    self.assertEqual(ack.tick, 20)
                    g = await c.wait_game(lambda g: g.state.phase == "countdown", timeout=5)
                    self.assertEqual((g.state.time_left, g.state.ready), (3, [2]))
                    mine = await c.wait_game(lambda g: g.state.score == 4, timeout=5, team=2)
                    self.assertEqual((mine.team, mine.tick), (2, 21))
                    self.assertEqual(c.team_games, {2: mine})
                    self.assertEqual(c.room_game, g)
                    self.assertEqual(c.game_phase, "countdown")
                    self.assertEqual(seen, [(None, 1), (None, 20), (None, 20), (2, 21)])
                    with self.assertRaises(flockd.Refused) as cm:
                        await c.send_game({"action": "fly", "timeout": 3, "to": {"x": 1}})
                    self.assertEqual(cm.exception.message, "game: unknown action: fly")
                    self.assertFalse(cm.exception.client_side)
                    with self.assertRaises(flockd.TooLarge) as cm:
                        await c.game(note="x" * 1100)
                    self.assertTrue(cm.exception.client_side)
            return s.got
        got = self.run_async(go())
        self.assertEqual(sent(got), [
            {"cmd": "game", "action": "ready"},
            {"cmd": "game", "action": "fly", "timeout": 3, "to": {"x": 1}},
        ])

    def test_script_messages_reach_admins_watchers_and_another_room_forgets(self):
        async def go():
            async with StandIn() as s:
                async with flockd.connect_async(s.url, reconnect=False) as c:
                    statuses = []
                    c.on("script", lambda e: statuses.append(e.message))
                    await c.wait_game(lambda g: True, timeout=5)
                    await c.game(action="ready")
                    await c.wait_game(lambda g: True, timeout=5, team=2)
                    await c.game(action="disable")
                    for _ in range(100):
                        if statuses:
                            break
                        await asyncio.sleep(0.01)
                    self.assertEqual((statuses[0].status, statuses[0].reason),
                                     ("disabled", "its instruction budget"))
                    self.assertIs(c.script_status, statuses[0])
                    await c.join("plain", "player", mode="rts")
                    self.assertIsNone(c.room_script)
                    self.assertIsNone(c.room_game)
                    self.assertIsNone(c.game_phase)
                    self.assertIsNone(c.script_status)
                    self.assertEqual(c.team_games, {})
                    with self.assertRaises(flockd.Timeout) as cm:
                        await c.wait_game(lambda g: True, timeout=0.2)
                    self.assertIn("game message", str(cm.exception))
                    self.assertEqual(c._game_waiters, [], "the waiter that timed out is gone")
            return s.got
        got = self.run_async(go())
        self.assertEqual(sent(got)[-1], {"cmd": "join", "room": "plain", "role": "player",
                                         "mode": "rts"})

    def test_a_join_names_the_script_of_the_room_it_creates(self):
        async def go():
            async with StandIn() as s:
                async with flockd.connect_async(s.url, reconnect=False) as c:
                    await c.join("w2", "player", mode="rts", script="flockwars", teams=2)
            return s.got
        got = self.run_async(go())
        self.assertEqual(sent(got), [{"cmd": "join", "room": "w2", "role": "player",
                                      "mode": "rts", "teams": 2, "script": "flockwars"}])

    def test_the_blocking_client_has_the_game_methods(self):
        async def serve(started, stop):
            async with StandIn() as s:
                started.set_result(s.url)
                await stop
        loop = asyncio.new_event_loop()
        started, stop = loop.create_future(), loop.create_future()
        task = loop.create_task(serve(started, stop))
        url = loop.run_until_complete(started)
        t = threading.Thread(target=loop.run_until_complete, args=(task,), daemon=True)
        t.start()
        try:
            with flockd.connect(url, reconnect=False) as c:
                self.assertEqual(c.room_script.name, "flockwars")
                self.assertEqual(c.game(action="ready").tick, 20)
                self.assertEqual(c.wait_game(lambda g: g.state.phase == "countdown",
                                             timeout=5).tick, 20)
                with self.assertRaises(flockd.Refused):
                    c.send_game({"action": "nothing"})
                self.assertEqual(c.game_phase, "countdown")
        finally:
            loop.call_soon_threadsafe(lambda: stop.done() or stop.set_result(None))
            t.join(5)

    def test_a_game_message_reads_as_attributes(self):
        g = flockd.Game({"type": "game", "tick": 7, "team": 3,
                         "state": {"phase": "ended", "winner": 3, "units": [0, 0, 120]}})
        self.assertEqual((g.tick, g.team, g.state.phase, g.state.winner), (7, 3, "ended", 3))
        self.assertEqual(g.state.units, [0, 0, 120])
        self.assertIsNone(g.state.message)
        with self.assertRaises(AttributeError):
            g.state.not_there
        self.assertIsNone(flockd.Welcome({"type": "welcome"}).script)


if __name__ == "__main__":
    unittest.main()
