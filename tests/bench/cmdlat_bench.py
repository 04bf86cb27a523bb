#!/usr/bin/python3
"""How long a command waits for its ack while flockd feeds many viewers.

Usage:
    cmdlat_bench.py FLOCKD FLOCKCTL [--boids 2000] [--viewers 0 1000 5000]
                    [--seconds 10] [--every-ms 13]
                    [--compare flockd:--net-threads=1 /tmp/old/flockd:--net-threads=1]
                    [-- FLOCKD_FLAGS...]

For each --compare case, BINARY:FLAGS (flags joined by '+'; BINARY is
"flockd" for the one given first, or the path of another build to set
beside it; "default" for the first binary without flags) one flockd is
started (ephemeral loopback port, one room of --boids
boids, limits raised for the viewers); then, for each --viewers count,
`flockctl load` holds that many viewers while a probe (one Python
websockets client, a player of the same room) sends a seek every
--every-ms and times each ack from the send to its arrival. flockd applies
a command as soon as a tick worker is free, between two steps; a build
that applied commands at the next tick had a tick period (1/tick_hz, from
the welcome) for floor. The figure to watch is p99 against one tick + 2 ms.

Prints one row per case and viewer count: acks, p50, p90, p99 and worst in
ms, the tick period, and flockctl load's fps p50 / p1 for the viewers;
then, from flockd's flockd_command_reply_seconds histogram over the probe
(arrival of the message to the reply written to the socket, so without
the probe's own time on a loaded machine), the share of replies within
one tick and within one tick + 2 ms, and the bucket its p99 falls in.
A build without that histogram shows "-".
The machine is shared: compare the rows of one run.
"""

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fanout_bench import Flockd, split_flockd_flags  # noqa: E402

import websockets  # noqa: E402


def percentile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q / 100 * len(xs)))] if xs else float("nan")


async def probe(url, seconds, every_ms):
    """Sends a seek every every_ms for seconds; returns (latencies in ms,
    tick period in ms, errors)."""
    async with websockets.connect(url, subprotocols=["flock.v2", "flock.v1"],
                                  max_size=None, ping_interval=None) as ws:
        tick_ms = None
        while tick_ms is None:
            msg = await ws.recv()
            if isinstance(msg, str):
                m = json.loads(msg)
                if m.get("type") == "welcome":
                    tick_ms = 1000.0 / m["tick_hz"]
        sent, lat, errors = {}, [], []

        async def reader():
            async for msg in ws:
                if isinstance(msg, bytes):
                    continue
                m = json.loads(msg)
                t = sent.pop(m.get("id"), None)
                if t is None:
                    continue
                if m.get("type") == "ack":
                    lat.append((time.perf_counter() - t) * 1000)
                else:
                    errors.append(m)

        task = asyncio.create_task(reader())
        end = time.perf_counter() + seconds
        n = 0
        next_at = time.perf_counter()
        while time.perf_counter() < end:
            n += 1
            x, y = 100 + (n * 37) % 1400, 100 + (n * 53) % 800
            sent[n] = time.perf_counter()
            await ws.send(json.dumps({"cmd": "seek", "id": n, "group": 0, "x": x, "y": y}))
            next_at += every_ms / 1000
            await asyncio.sleep(max(0.0, next_at - time.perf_counter()))
        await asyncio.sleep(0.5)  # the last acks
        task.cancel()
        return lat, tick_ms, errors, len(sent)


def reply_histogram(d):
    """flockd's reply-latency buckets as {upper bound in s: count}, or {}."""
    try:
        body = urllib.request.urlopen(f"http://127.0.0.1:{d.port}/metrics", timeout=5).read()
    except OSError:
        return {}
    out = {}
    for line in body.decode().splitlines():
        if line.startswith("flockd_command_reply_seconds_bucket{le=\""):
            le = line.split('"')[1]
            out[float("inf") if le == "+Inf" else float(le)] = float(line.split()[-1])
    return out


def server_side(before, after, tick_ms):
    """What the histogram says of the replies between two readings."""
    if not after:
        return "server -"
    delta = {le: after[le] - before.get(le, 0) for le in sorted(after)}
    total = delta[float("inf")]
    if not total:
        return "server: no replies"

    def within(ms):  # share at the largest bound <= ms (to 0.05 ms: the bounds are rounded)
        les = [le for le in delta if le * 1000 <= ms + 0.05]
        return delta[max(les)] / total if les else 0.0

    p99 = next(le for le in sorted(delta) if delta[le] >= 0.99 * total)
    shares = ", ".join(f"{le * 1000:g}: {delta[le] / total * 100:.1f}" for le in sorted(delta)
                       if le != float("inf") and delta[le] < total)
    return (f"server: {total:.0f} replies, {within(tick_ms) * 100:.1f} % within a tick, "
            f"{within(tick_ms + 2) * 100:.1f} % within a tick + 2 ms, p99 <= {p99 * 1000:g} ms"
            + (f"; % within ms {shares}" if shares else ""))


def run_case(a, binary, flags, viewers):
    d = Flockd(binary, a.boids, max(viewers, 1), flags)
    try:
        load = None
        if viewers:
            load = subprocess.Popen(
                [a.flockctl, "load", "--url", d.url, "--clients", str(viewers), "--seconds",
                 str(a.seconds + 3), "--threads", "2", "--timeout", "30"],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for line in load.stderr:  # the viewers are all connected
                if "measuring" in line:
                    break
        before = reply_histogram(d)
        lat, tick_ms, errors, lost = asyncio.run(probe(d.url, a.seconds, a.every_ms))
        server = server_side(before, reply_histogram(d), tick_ms)
        fps = {}
        if load:
            out = load.stdout.read()
            load.wait()
            lines = out.strip().splitlines()
            fps = json.loads(lines[-1]) if lines else {}
        return lat, tick_ms, errors, lost, fps, server
    finally:
        d.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("flockd")
    ap.add_argument("flockctl")
    ap.add_argument("--boids", type=int, default=2000)
    ap.add_argument("--viewers", type=int, nargs="+", default=[0, 1000, 5000])
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--every-ms", type=float, default=13)
    ap.add_argument("--compare", nargs="+", default=["default"])
    argv, extra = split_flockd_flags(sys.argv[1:])
    a = ap.parse_args(argv)
    print(f"# seek every {a.every_ms:g} ms for {a.seconds:g} s, room of {a.boids} boids",
          flush=True)
    # Side by side: every case at one viewer count before the next count.
    for viewers in a.viewers:
        for case in a.compare:
            binary, _, flags = ("flockd:" if case == "default" else case).partition(":")
            binary = a.flockd if binary == "flockd" else binary
            flags = [f for f in flags.split("+") if f]
            lat, tick_ms, errors, lost, fps, server = run_case(a, binary, extra + flags,
                                                                viewers)
            print(f"{case:<28} {viewers:>5} viewers: {len(lat)} acks, "
                  f"p50 {statistics.median(lat) if lat else float('nan'):.1f} ms, "
                  f"p90 {percentile(lat, 90):.1f}, p99 {percentile(lat, 99):.1f}, "
                  f"worst {max(lat) if lat else float('nan'):.1f} "
                  f"(a tick {tick_ms:.1f} ms; target p99 <= {tick_ms + 2:.1f}); "
                  f"errors {len(errors)}, unanswered {lost}"
                  + (f"; viewers connected {fps.get('connected')}, fps p50 "
                     f"{fps.get('client_rate_p50')}, p1 {fps.get('client_rate_p1')}"
                     if viewers else "") + f"\n{'':<28}   {server}", flush=True)
            for e in errors[:3]:
                print(f"    error: {e}", flush=True)


if __name__ == "__main__":
    main()
