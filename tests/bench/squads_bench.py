#!/usr/bin/python3
"""What a room's squads' orders cost its tick, and how fast an order is acked.

Usage:
    squads_bench.py FLOCKD [--teams 8] [--units 500] [--seconds 20]

Starts one flockd (ephemeral loopback port) with two rts rooms side by
side, "orders" and "still", each with --teams players of --units units.
In both, every player puts its units in two squads (half by a rectangle,
the rest), the first in a wedge and the second in a box, and sends them
somewhere. Then, for --seconds, every player of "orders" re-orders its
first squad once a second (a move to a random point, alternating with a
patrol), while "still"'s squads carry on without new orders. At the end
each room's admin reads the room's tick p99 (stats: its last 1,024
ticks), the players' move commands' ack round trips give the ack
p50/p99 against the room's tick period, and flockd_command_reply_seconds
(/metrics) over the same window the server's own (arrival to the reply
written to the socket) as the least bucket holding 99 %. One row per room, then one JSON
line.
"""

import argparse
import asyncio
import random
import re
import subprocess
import sys
import time
import urllib.request

from fanout_bench import free_port, listening
from teams_bench import Member


async def open_room(url, room, teams):
    admin = Member()
    await admin.open(url, "admin", "admin", room=room)
    players = []
    for k in range(teams):
        p = Member()
        r = await p.open(url, "player", f"p{k}", room=room)
        p.team = r["team"]
        players.append(p)
    return admin, players


async def squads_of(p, w, h, rng):
    """Two squads: the units above the room's middle in a wedge, the rest in a box."""
    await p.command("select", all=True, squad=2)
    r = await p.command("select", rect=[0, 0, w, h / 2], squad=1)
    if r["type"] != "ack":  # every unit below the middle: split by the other half
        await p.command("select", rect=[0, h / 2, w, h / 2], squad=1)
        await p.command("select", rect=[0, 0, w / 2, h], squad=1)
    for squad, shape in ((1, "wedge"), (2, "box")):
        await p.command("formation", squad=squad, shape=shape)
        await p.command("move", squad=squad, to=[[rng.uniform(0, w), rng.uniform(0, h)]])


async def reorder(p, w, h, rng, until, acks):
    k = 0
    while time.monotonic() < until:
        t = time.monotonic()
        point = [[rng.uniform(0, w), rng.uniform(0, h)]]
        r = await p.command("move" if k % 2 == 0 else "patrol", squad=1, to=point)
        if r["type"] == "ack":
            acks.append(1e3 * (time.monotonic() - t))
        k += 1
        await asyncio.sleep(max(0.0, 1.0 - (time.monotonic() - t)))


def reply_buckets(port):
    """flockd_command_reply_seconds' cumulative buckets: {le: count}."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as f:
        text = f.read().decode()
    return {float(le) if le != "+Inf" else float("inf"): float(n) for le, n in re.findall(
        r'^flockd_command_reply_seconds_bucket\{le="([^"]+)"\} (\S+)$', text, re.M)}


def bucket_p99(before, after):
    """The least bucket bound holding 99 % of the replies between two reads."""
    total = after[float("inf")] - before[float("inf")]
    for le in sorted(after):
        if total and after[le] - before.get(le, 0) >= 0.99 * total:
            return le, total
    return None, total


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else None


async def run(flockd, teams, units, seconds):
    port = free_port()
    proc = subprocess.Popen([flockd, "--host", "127.0.0.1", "--port", str(port), "--boids", "0",
                             "--team-units", str(units), "--team-cap", str(units),
                             "--max-teams", str(teams)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        if not listening(port, 10):
            sys.exit("squads_bench: flockd did not listen")
        url = f"ws://127.0.0.1:{port}/ws"
        rooms = {name: await open_room(url, name, teams) for name in ("orders", "still")}
        rng = random.Random(7)
        for admin, players in rooms.values():
            w, h = admin.joined_world["width"], admin.joined_world["height"]
            for p in players:
                await squads_of(p, w, h, rng)
        admin, players = rooms["orders"]
        w, h = admin.joined_world["width"], admin.joined_world["height"]
        acks = []
        before = reply_buckets(port)
        until = time.monotonic() + seconds
        await asyncio.gather(*(reorder(p, w, h, random.Random(k), until, acks)
                               for k, p in enumerate(players)))
        server_p99, replies = bucket_p99(before, reply_buckets(port))
        stats = {name: (await a.command("stats"))["stats"] for name, (a, _) in rooms.items()}
        tick_hz = admin.joined_tick_hz
        for admin, players in rooms.values():
            for s in [admin] + players:
                await s.close()
    finally:
        proc.terminate()
        proc.wait(10)
    return {"teams": teams, "units": units, "seconds": seconds, "tick_hz": tick_hz,
            "tick_ms": 1e3 / tick_hz,
            "tick_p99_ms": {k: v["tick_ms_p99"] for k, v in stats.items()},
            "tick_mean_ms": {k: v["tick_ms_mean"] for k, v in stats.items()},
            "acks": len(acks), "ack_p50_ms": pct(acks, 0.5), "ack_p99_ms": pct(acks, 0.99),
            "server_replies": replies, "server_reply_p99_bucket_ms": 1e3 * server_p99}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("flockd")
    ap.add_argument("--teams", type=int, default=8)
    ap.add_argument("--units", type=int, default=500)
    ap.add_argument("--seconds", type=float, default=20.0)
    a = ap.parse_args()
    r = asyncio.run(run(a.flockd, a.teams, a.units, a.seconds))
    print(f"{a.teams} teams x {a.units} units, {a.seconds:.0f} s, a tick {r['tick_ms']:.2f} ms:")
    for name in ("orders", "still"):
        print(f"  {name:6s}  tick mean {r['tick_mean_ms'][name]:.3f} ms  "
              f"p99 {r['tick_p99_ms'][name]:.3f} ms")
    print(f"  tick p99 with orders - without: "
          f"{r['tick_p99_ms']['orders'] - r['tick_p99_ms']['still']:+.3f} ms")
    print(f"  {r['acks']} orders acked: p50 {r['ack_p50_ms']:.2f} ms, p99 {r['ack_p99_ms']:.2f} ms "
          f"(a tick + 2 ms: {r['tick_ms'] + 2:.2f} ms), round trips at the client")
    print(f"  the server's {r['server_replies']:.0f} replies (arrival to socket): p99 within "
          f"{r['server_reply_p99_bucket_ms']:.1f} ms (flockd_command_reply_seconds' bucket)")
    print(__import__("json").dumps(r))


if __name__ == "__main__":
    main()
