#!/usr/bin/python3
"""What the fog of war costs per snapshot as an rts room's teams grow.

Usage:
    teams_bench.py FLOCKD [--teams 1 2 4 8] [--units 500] [--seconds 10]
                   [--sight 150]

For each team count T in turn, starts a flockd of its own (ephemeral
loopback port, --boids 0, --team-units UNITS), opens an rts room "war"
with a version 3 admin (the whole room) and T version 3 players (each its
team's fogged frames), sends every team's units toward the middle and on
to random points every 1.5 s so that they meet and part, lets them settle
for 3 s, then reads over --seconds from /metrics: the room's version 3
encode time per snapshot (the tiles of every boid, each team's sight and
each team's tiles: flockd_frame_encode_seconds_total{kind="v3"} over
flockd_snapshots_encoded_total), the room's mean tick, and flockd's whole
CPU (the parts encoded for the clients and the splices included). One row
per T, then one JSON line. Every player drains its frames.
"""

import argparse
import asyncio
import json
import random
import re
import subprocess
import sys
import time
import urllib.request

import websockets

from fanout_bench import cpu_s, free_port, listening

def metrics(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as f:
        text = f.read().decode()

    def one(pattern):
        m = re.search(r"^" + re.escape(pattern) + r" (\S+)$", text, re.M)
        return float(m.group(1)) if m else 0.0
    return {"v3_s": one('flockd_frame_encode_seconds_total{kind="v3"}'),
            "snapshots": one("flockd_snapshots_encoded_total"),
            "tick_sum": one("flockd_tick_duration_seconds_sum"),
            "ticks": one("flockd_tick_duration_seconds_count")}


class Member:
    """A version 3 connection that joins and then drains its frames."""

    async def open(self, url, role, name, room="war"):
        self.ws = await websockets.connect(url, subprotocols=["flock.v3"], max_size=None)
        self.welcome = json.loads(await self.ws.recv())
        self.frames, self.next_id, self.waiting = 0, 1, {}
        self.reader = asyncio.create_task(self.read())
        r = await self.command("join", room=room, role=role, mode="rts", name=name)
        if r["type"] != "ack":
            sys.exit(f"teams_bench: join refused: {r}")
        return r

    async def read(self):
        async for m in self.ws:
            if isinstance(m, bytes):
                self.frames += 1
                continue
            msg = json.loads(m)
            if msg.get("type") == "welcome":  # the room joined: its world and tick rate
                self.joined_world, self.joined_tick_hz = msg["world"], msg["tick_hz"]
            fut = self.waiting.pop(msg.get("id"), None)
            if fut:
                fut.set_result(msg)

    async def command(self, cmd, **args):
        self.next_id += 1
        fut = asyncio.get_running_loop().create_future()
        self.waiting[self.next_id] = fut
        await self.ws.send(json.dumps({"cmd": cmd, "id": self.next_id, **args}))
        return await asyncio.wait_for(fut, 10)

    async def close(self):
        self.reader.cancel()
        await self.ws.close()


async def run(flockd, teams, units, seconds, sight):
    port = free_port()
    proc = subprocess.Popen([flockd, "--host", "127.0.0.1", "--port", str(port), "--boids", "0",
                             "--team-units", str(units), "--team-cap", str(units),
                             "--max-teams", str(max(teams, 1))],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        if not listening(port, 10):
            sys.exit("teams_bench: flockd did not listen")
        url = f"ws://127.0.0.1:{port}/ws"
        admin = Member()
        await admin.open(url, "admin", "admin")
        players = []
        for k in range(teams):
            p = Member()
            r = await p.open(url, "player", f"p{k}")
            p.team = r["team"]
            players.append(p)
        for p in players:
            await admin.command("params", group=p.team, sight_radius=sight)
        w, h = admin.welcome["world"]["width"], admin.welcome["world"]["height"]
        rng = random.Random(7)

        async def steer(until):
            move = 0
            while time.monotonic() < until:
                for p in players:
                    x, y = (w / 2, h / 2) if move % 2 == 0 else (rng.uniform(0, w), rng.uniform(0, h))
                    await p.command("seek", group=p.team, x=x, y=y)
                move += 1
                await asyncio.sleep(1.5)
        t_end = time.monotonic() + 3 + seconds
        steering = asyncio.create_task(steer(t_end))
        await asyncio.sleep(3)
        m0, c0, t0 = metrics(port), cpu_s(proc.pid), time.monotonic()
        f0 = sum(p.frames for p in players)
        await asyncio.sleep(seconds)
        m1, c1, t1 = metrics(port), cpu_s(proc.pid), time.monotonic()
        f1 = sum(p.frames for p in players)
        await steering
        for s in [admin] + players:
            await s.close()
    finally:
        proc.terminate()
        proc.wait(10)
    snaps = m1["snapshots"] - m0["snapshots"]
    ticks = m1["ticks"] - m0["ticks"]
    return {"teams": teams, "units": teams * units,
            "v3_ms_per_snapshot": 1e3 * (m1["v3_s"] - m0["v3_s"]) / snaps if snaps else None,
            "tick_ms": 1e3 * (m1["tick_sum"] - m0["tick_sum"]) / ticks if ticks else None,
            "cpu_share": (c1 - c0) / (t1 - t0),
            "player_fps": (f1 - f0) / (t1 - t0) / teams if teams else None}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("flockd")
    ap.add_argument("--teams", type=int, nargs="+", default=[1, 2, 4, 8])
    ap.add_argument("--units", type=int, default=500)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--sight", type=float, default=150)
    a = ap.parse_args()
    if any(t < 1 or t > 255 for t in a.teams):
        sys.exit("teams_bench: --teams wants counts from 1 to 255")
    rows = []
    print(f"# rts room, {a.units} units a team, sight {a.sight:g}, {a.seconds:g} s each")
    for t in a.teams:
        r = asyncio.run(run(a.flockd, t, a.units, a.seconds, a.sight))
        rows.append(r)
        per_team = r["v3_ms_per_snapshot"] / t if r["v3_ms_per_snapshot"] is not None else float("nan")
        print(f"{t:>3} teams, {r['units']:>5} units: version 3 encode {r['v3_ms_per_snapshot']:.3f} ms "
              f"a snapshot ({per_team:.3f} ms a team), tick {r['tick_ms']:.3f} ms, flockd "
              f"{100 * r['cpu_share']:.0f}% of a core, {r['player_fps']:.1f} frames/s a player",
              flush=True)
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
