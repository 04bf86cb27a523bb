#!/usr/bin/python3
"""The client libraries' room scripts (PROTOCOL.md §14) against a real
flockd: the Python library joins a scripted room it creates, sees the
welcome's script, sends game actions (acked, or refused with the script's
reason), keeps the latest room-wide game state and follows it from lobby to
playing; the JS library does the same from node; two
client/examples/flockwars_bot.py bots play a short match out to a winner
(exit 0, phase lines, units lines, "winner: team N").

Usage: test_game_clients.py FLOCKD_BINARY [TEST_NAME...]
"""

import asyncio
import os
import re
import subprocess
import sys
import tempfile

from flockd_harness import Flockd, Suite, arg

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "client", "python"))

import flockd  # noqa: E402

FLOCKD = arg(0, "build/server/flockd")
SUITE = Suite(timeout=240)
test = SUITE.test

SCRIPTS = os.path.join(ROOT, "server", "scripts")
SERVER = ("--scripts-dir", SCRIPTS, "--boids", "0", "--team-cap", "2000")
BOT = os.path.join(ROOT, "client", "examples", "flockwars_bot.py")


@test
async def the_python_library_plays_a_scripted_room_from_its_lobby():
    with Flockd(FLOCKD, *SERVER) as d:
        async with flockd.connect_async(d.url) as a, flockd.connect_async(d.url) as b:
            await a.join("w1", "player", mode="rts", script="flockwars", teams=2)
            await b.join("w1", "player", mode="rts", script="flockwars")
            assert a.room_script.name == "flockwars" and len(a.room_script.hash) == 16
            lobby = await a.wait_game(lambda g: g.state.phase == "lobby", timeout=10)
            assert "ready" in lobby.state.actions, lobby
            try:
                await a.game(action="fly")
                raise AssertionError("an unknown action was taken")
            except flockd.Refused as e:
                assert "unknown action" in e.message, e
            try:
                await a.game(action="units", n=50)  # an admin's
                raise AssertionError("a player set the units")
            except flockd.Refused as e:
                assert "admin" in e.message, e
            assert (await a.game(action="ready")).tick >= 0
            await b.send_game({"action": "ready"})
            playing = await a.wait_game(lambda g: g.state.phase == "playing", timeout=15)
            assert playing.state.time_left > 0, playing
            counted = await b.wait_game(lambda g: g.state.get("units"), timeout=10)
            assert counted.state.units == [200, 200], counted
            assert a.game_phase == "playing"
        async with flockd.connect_async(d.url) as plain:
            try:
                await plain.game(action="ready")
                raise AssertionError("a room without a script took a game command")
            except flockd.BadArgument as e:
                assert "no script" in e.message, e
            assert plain.room_script is None


JS_CHECK = r"""
import { connect } from '%(lib)s';
const url = process.argv[2];
const a = await connect(url, { timeoutMs: 10000 });
const b = await connect(url, { timeoutMs: 10000 });
await a.join({ room: 'js1', role: 'player', mode: 'rts', script: 'flockwars', teams: 2 });
await b.join({ room: 'js1', role: 'player', mode: 'rts' });
if (!a.roomScript || a.roomScript.name !== 'flockwars') throw new Error('no script in the welcome');
await a.waitGame((m) => m.state.phase === 'lobby', { timeoutMs: 10000 });
let code = null;
try { await a.game({ action: 'fly' }); } catch (e) { code = e.code; }
if (code !== 'refused') throw new Error(`an unknown action: ${code}`);
await a.game({ action: 'ready' });
await b.game({ action: 'ready' });
await a.waitGame((m) => m.state.phase === 'playing', { timeoutMs: 15000 });
console.log(`phase ${a.gamePhase}`);
await a.close();
await b.close();
"""


@test
async def the_js_library_plays_a_scripted_room_from_its_lobby():
    lib = os.path.abspath(os.path.join(ROOT, "client", "js", "src", "index.js"))
    with Flockd(FLOCKD, *SERVER) as d, tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "check.mjs")
        with open(script, "w", encoding="utf-8") as f:
            f.write(JS_CHECK % {"lib": lib})
        env = dict(os.environ, NODE_PATH=os.path.join(ROOT, "client", "js", "node_modules"))
        proc = await asyncio.create_subprocess_exec(
            "node", script, d.url, cwd=os.path.join(ROOT, "client", "js"), env=env,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        out, _ = await asyncio.wait_for(proc.communicate(), 60)
        text = out.decode()
        assert proc.returncode == 0 and "phase playing" in text, text


@test
async def two_bots_play_flockwars_to_a_winner():
    with Flockd(FLOCKD, *SERVER) as d:
        args = [sys.executable, BOT, "--url", d.url, "--room", "bots", "--until-end",
                "--seconds", "200"]
        first = await asyncio.create_subprocess_exec(
            *args, "--teams", "2", "--units", "60", "--time-limit", "40",
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        await asyncio.sleep(1.5)  # the first one creates the room and sets it up
        second = await asyncio.create_subprocess_exec(
            *args, "--home", "0.5", "--attackers", "1",
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        outs = await asyncio.wait_for(asyncio.gather(first.communicate(), second.communicate()),
                                      220)
        for proc, (out, _) in zip((first, second), outs):
            text = out.decode()
            assert proc.returncode == 0, text
            for line in ("phase lobby", "phase playing", "phase ended"):
                assert line in text, (line, text)
            assert re.search(r"^units tick \d+: team 1 \d+, team 2 \d+$", text, re.M), text
            assert re.search(r"^winner: (team [12]|none)$", text, re.M), text
        assert "units per team: 60" in outs[0][0].decode()


if __name__ == "__main__":
    sys.exit(SUITE.main())
