#!/usr/bin/python3
"""How many 1k-boid rooms one flockd runs before its ticks run late.

Usage:
    make bench-rooms                                  # builds, then runs this
    make bench-rooms BENCH_ARGS="--settle 5 -- --workers 2"
    rooms_bench.py FLOCKD [--room-boids 1000] [--settle 4] [--limit 200] [--start 2]
                   [--beside N [--seconds 10]] [-- FLOCKD_FLAGS...]

Starts FLOCKD on an ephemeral loopback port with its default settings, plus
`--max-rooms` from --limit (so the room cap is not what ends the run) and any
FLOCKD_FLAGS after `--`. Then it adds rooms of --room-boids boids one at a
time: each is created by a `join` from its own python3-websockets client,
which stays in it as a viewer and so receives its snapshots, as a real
viewer would (only their headers are decoded, to keep this process light).
After each addition it waits a second, then watches --settle seconds and
prints one row: the rooms (the default room counts; it holds flockd's
--boids, 1000 by default), the worst `late_p99_ms` of any room in
GET /api/rooms, the growth of flockd_tick_overruns_total in /metrics, the
slowest viewer's snapshot rate, and flockd's and this script's CPU use.

A row is late when the worst p99 lateness exceeds one tick period (16.7 ms
at 60 Hz) or ticks overran during the window. On a shared machine other
programs make ticks late too, so a late window during which everything else
used more than --busy of a core (default 0.5) does not count: it is measured
again, up to --retries times. A late row is then measured once more over
--p99-ticks ticks (flockd's p99 covers its last 1024 ticks, 17 s at 60 Hz,
so that window's figure is its own); if it is late again the run stops and
prints the last room count that kept time.

--beside N measures instead one --room-boids room beside a default room of
N boids (flockd --boids N --capacity N): the small room's p99 lateness every
second for --seconds, the big room's, and the overruns.
"""

import argparse
import asyncio
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from flockd_harness import Client, Flockd  # noqa: E402

OVERRUNS = "flockd_tick_overruns_total"


def cpu_seconds(pid):
    """User plus system CPU time of a process, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_busy_seconds():
    """CPU seconds every core spent busy since boot (/proc/stat): with
    flockd's and this process's own subtracted, what else ran meanwhile."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (sum(v[:8]) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")


class Window:
    """What flockd did between start() and stop(): lateness, overruns, rates, CPU."""

    def __init__(self, d, clients):
        self.d, self.clients = d, clients

    async def start(self):
        self.t0 = time.time()
        self.overruns0 = await asyncio.to_thread(self.d.metric, OVERRUNS) or 0
        self.cpu0 = cpu_seconds(self.d.proc.pid)
        self.own0 = time.process_time()
        self.busy0 = machine_busy_seconds()
        self.counts0 = [len(c.snapshots) for c in self.clients]

    async def stop(self):
        dt = time.time() - self.t0
        listing = await asyncio.to_thread(self.d.rooms)
        self.rooms = listing["rooms"]
        worst = max(self.rooms, key=lambda e: e["late_p99_ms"])
        self.worst_ms, self.worst_room = worst["late_p99_ms"], worst["name"]
        self.overruns = (await asyncio.to_thread(self.d.metric, OVERRUNS) or 0) - self.overruns0
        self.flockd_cpu = (cpu_seconds(self.d.proc.pid) - self.cpu0) / dt
        self.own_cpu = (time.process_time() - self.own0) / dt
        self.other_cpu = (machine_busy_seconds() - self.busy0) / dt - self.flockd_cpu \
            - self.own_cpu
        rates = [(len(c.snapshots) - n) / dt for c, n in zip(self.clients, self.counts0)]
        self.min_rate = min(rates) if rates else 0.0
        self.closed = [(c.welcome["room"], c.ws.close_code) for c in self.clients
                       if c.reader.done()]
        for c in self.clients:  # keep memory flat over a long run
            del c.snapshots[:-4]
        return self

    def late(self, period_ms):
        return self.worst_ms > period_ms or self.overruns > 0


async def measure(d, clients, seconds):
    w = Window(d, clients)
    await w.start()
    await asyncio.sleep(seconds)
    return await w.stop()


async def judged(d, clients, args, period_ms, n, total, seconds):
    """A window that counts: on time, or late while the machine was quiet
    enough to blame flockd (or late after --retries busy windows)."""
    w = await measure(d, clients, seconds)
    for _ in range(args.retries):
        if not w.late(period_ms) or w.other_cpu <= args.busy:
            break
        print_row(n, total, w, "late, machine busy; again")
        w = await measure(d, clients, seconds)
    return w


async def add_room(d, name, boids):
    """A viewer client in a new room of `boids` boids; None and the reply if refused."""
    c = await Client.connect(d.url, headers_only=True)
    r = await c.join(name, "viewer", boids=boids)
    if r["type"] != "ack":
        await c.close()
        return None, r
    return c, r


ROW = "{:>5} {:>8} {:>10} {:>12} {:>9} {:>10} {:>7} {:>7} {:>7}  {}"


def print_row(n, boids, w, verdict):
    print(ROW.format(n, boids, f"{w.worst_ms:.3f}", w.worst_room, f"+{w.overruns:.0f}",
                     f"{w.min_rate:.1f}", f"{100 * w.flockd_cpu:.0f}%", f"{100 * w.own_cpu:.0f}%",
                     f"{100 * max(w.other_cpu, 0):.0f}%", verdict), flush=True)


async def count_rooms(args, flags):
    with Flockd(args.flockd, "--max-rooms", str(args.limit + 1), *flags) as d:
        probe = await Client.connect(d.url, headers_only=True)
        tick_hz, snapshot_hz = probe.welcome["tick_hz"], probe.welcome["snapshot_hz"]
        default_boids = (await probe.next_snapshot())["boid_count"]
        await probe.close()
        period_ms = 1000 / tick_hz
        full = max(args.settle, args.p99_ticks / tick_hz + 1)  # p99 of this window only
        print(f"flockd {' '.join(flags) or '(defaults)'}; rooms of {args.room_boids} boids, "
              f"ticks at {tick_hz:g} Hz (period {period_ms:.1f} ms), snapshots at "
              f"{snapshot_hz:g} Hz; the default room has {default_boids} boids; "
              f"{args.settle:g} s per row; {os.cpu_count()} cores")
        print("CPU columns: flockd, this script, and everything else on the machine, in % "
              "of one core")
        print(ROW.format("rooms", "boids", "worst p99", "(room)", "overruns", "min snap/s",
                         "flockd", "bench", "others", ""))
        clients, kept, total = [], None, default_boids
        for n in range(1, args.limit + 1):
            c, r = await add_room(d, f"bench{n:03d}", args.room_boids)
            if c is None:
                print(f"room {n + 1} refused: {r.get('code')}: {r.get('message')}")
                break
            clients.append(c)
            total += args.room_boids
            if n < args.start - 1:
                continue
            await asyncio.sleep(1)  # past the creation
            w = await judged(d, clients, args, period_ms, n + 1, total, args.settle)
            if w.closed:
                print_row(n + 1, total, w, "viewers closed")
                print("viewers closed by flockd (room, close code): "
                      + ", ".join(f"{r} {code}" for r, code in w.closed))
                break
            if w.late(period_ms):
                print_row(n + 1, total, w, f"late; again for {full:.0f} s")
                w = await judged(d, clients, args, period_ms, n + 1, total, full)
                if w.late(period_ms):
                    print_row(n + 1, total, w, "late")
                    break
            print_row(n + 1, total, w, "kept time")
            kept = n + 1
        for c in clients:
            await c.close()
    if kept is None:
        print("no room count kept time")
    else:
        print(f"last count that kept time: {kept} rooms ({kept - 1} of {args.room_boids} boids "
              f"beside the default room of {default_boids})"
              + (" -- the --limit, not flockd, ended the run" if kept == args.limit + 1 else ""))


async def beside(args, flags):
    big = str(args.beside)
    with Flockd(args.flockd, "--boids", big, "--capacity", big, *flags) as d:
        c, r = await add_room(d, "small", args.room_boids)
        if c is None:
            sys.exit(f"the small room was refused: {r}")
        tick_hz, snapshot_hz = c.welcome["tick_hz"], c.welcome["snapshot_hz"]
        print(f"flockd --boids {big} --capacity {big} {' '.join(flags)}; a {args.room_boids}-boid "
              f"room beside the {big}-boid default room; {os.cpu_count()} cores")
        print(f"{'s':>3} {'small p99 ms':>13} {'big p99 ms':>11} {'big ticks/s':>12} "
              f"{'overruns':>9} {'snap/s':>7} {'flockd':>7} {'others':>7}")
        await asyncio.sleep(2)  # past the creation
        small, bigs, total_over, counts, big_hz = [], [], 0, [], []
        big_tick = (await asyncio.to_thread(d.room, "default"))["tick"]
        for s in range(1, args.seconds + 1):
            w = await measure(d, [c], 1.0)
            by = {e["name"]: e for e in w.rooms}
            small.append(by["small"]["late_p99_ms"])
            bigs.append(by["default"]["late_p99_ms"])
            big_hz.append(by["default"]["tick"] - big_tick)
            big_tick = by["default"]["tick"]
            total_over += w.overruns
            counts.append(w.min_rate)
            print(f"{s:>3} {small[-1]:>13.3f} {bigs[-1]:>11.3f} {big_hz[-1]:>12} "
                  f"{w.overruns:>+9.0f} {w.min_rate:>7.1f} {100 * w.flockd_cpu:>6.0f}% "
                  f"{100 * max(w.other_cpu, 0):>6.0f}%", flush=True)
        await c.close()
    period_ms = 1000 / tick_hz
    print(f"{args.room_boids}-boid room beside a {big}-boid room: p99 lateness max "
          f"{max(small):.3f} ms, median {statistics.median(small):.3f} ms (tick period "
          f"{period_ms:.1f} ms); big room p99 max {max(bigs):.3f} ms at "
          f"{statistics.mean(big_hz):.1f} ticks/s of {tick_hz:g}; snapshots "
          f"{statistics.mean(counts):.1f}/s of {snapshot_hz:g}; tick overruns +{total_over:.0f}")
    print("the small room kept time" if max(small) <= period_ms else "the small room ran late")


def main():
    argv = sys.argv[1:]
    flags = []
    if "--" in argv:
        i = argv.index("--")
        argv, flags = argv[:i], argv[i + 1:]
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("flockd", help="path to the flockd binary")
    p.add_argument("--room-boids", type=int, default=1000, help="boids per added room")
    p.add_argument("--settle", type=float, default=4, help="seconds watched per row")
    p.add_argument("--limit", type=int, default=200, help="most rooms to add")
    p.add_argument("--start", type=int, default=2,
                   help="rooms (the default one included) before the first row")
    p.add_argument("--p99-ticks", type=int, default=1024,
                   help="recent ticks late_p99_ms covers (LATE_SAMPLES in server/room/room_internal.h)")
    p.add_argument("--busy", type=float, default=0.5,
                   help="cores other programs may use in a late window that counts")
    p.add_argument("--retries", type=int, default=10,
                   help="busy late windows measured again before one counts anyway")
    p.add_argument("--beside", type=int, default=0,
                   help="measure one small room beside a default room of this many boids")
    p.add_argument("--seconds", type=int, default=10, help="--beside: seconds to watch")
    args = p.parse_args(argv)
    asyncio.run(beside(args, flags) if args.beside else count_rooms(args, flags))


if __name__ == "__main__":
    main()
