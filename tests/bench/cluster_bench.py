#!/usr/bin/python3
"""What running flockd as a cluster on NATS costs and how fast it heals.

Usage:
    cluster_bench.py FLOCKD [--trials 10] [--seconds 10] [--boids 1000]
                     [--flockctl FLOCKCTL --viewers 1000] [--rooms 45 --room-boids 1000]
                     [-- FLOCKD_FLAGS...]

Starts nats-server -js on a free loopback port (store in a temporary
folder) and three flockd nodes joined to it (tests/integration/
test_cluster.py's helpers), then prints two figures:

- relay: a viewer on the node that owns `default` and one on each other
  node watch for --seconds; for every tick both received, the relayed
  viewer's arrival time minus the local viewer's (the relay overhead), and
  each viewer's frame age (arrival minus the frame's server time), p50,
  p99 and worst, in ms.
- fanout (with --flockctl): `flockctl load --clients VIEWERS` against
  each node at once, for --seconds: every node's viewers' snapshot rate
  (p50 and the slowest percent, p1) and frame age p99, from flockctl's
  report. The nodes run with --max-per-ip raised for the viewers.
- rooms (with --rooms): that many rooms of --room-boids boids, made by
  joins spread over the three nodes in turn (the cluster places each on
  the least loaded node; its viewer watches it from the node it joined),
  watched --seconds; then how many each node ticks and every room's p99
  tick lateness from its owner's /metrics: median and worst.
- failover: --trials times, kill -9 of the node that owns `default`; the
  time from the kill to the first frame at each viewer on the two
  surviving nodes (the worst of the two per trial), then the killed node is
  started again under its id and the cluster settles. Median and worst.

Every process runs on this machine: the figures include the viewers'
own Python decoding, and the machine is shared.
"""

import argparse
import asyncio
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))

import test_cluster as tc  # noqa: E402
from flockd_harness import Client  # noqa: E402


def pct(values, p):
    v = sorted(values)
    return v[min(len(v) - 1, int(p / 100 * len(v)))]


def row(name, values):
    print(f"  {name:<34} p50 {pct(values, 50):7.2f}  p99 {pct(values, 99):7.2f}  "
          f"worst {max(values):7.2f}  ({len(values)} frames)")


async def relay(nodes, seconds):
    owner = (await tc.settled(nodes))["default"]
    local_node = tc.by_id(nodes, owner)
    others = [n for n in nodes if n is not local_node]
    local = await Client.connect(local_node.url, headers_only=True)
    far = [await Client.connect(n.url, headers_only=True) for n in others]
    for c in [local] + far:
        await c.next_snapshot()
    await asyncio.sleep(seconds)
    arrival = {s["tick"]: t for t, s in local.snapshots}
    print(f"relay overhead, owner {owner}, {seconds} s:")
    row("local viewer frame age (ms)",
        [(t - s["time_us"] / 1e6) * 1e3 for t, s in local.snapshots[5:]])
    for n, c in zip(others, far):
        row(f"relayed viewer frame age (ms), {tc.NODES[nodes.index(n)]}",
            [(t - s["time_us"] / 1e6) * 1e3 for t, s in c.snapshots[5:]])
        row("  minus the local viewer's (ms)",
            [(t - arrival[s["tick"]]) * 1e3 for t, s in c.snapshots[5:] if s["tick"] in arrival])
    for c in [local] + far:
        await c.close()


def fanout(nodes, flockctl, viewers, seconds):
    """flockctl load against every node at once; one row per node."""
    import subprocess
    procs = [subprocess.Popen([flockctl, "load", "--url", n.url, "--clients", str(viewers),
                               "--seconds", str(seconds), "--threads", "1"],
                              stdout=subprocess.PIPE, text=True) for n in nodes]
    print(f"fanout: {viewers} viewers on each node, {seconds} s:")
    for node_id, p in zip(tc.NODES, procs):
        out, _ = p.communicate(timeout=seconds + 120)
        r = json.loads(out.strip().splitlines()[-1])
        print(f"  {node_id}: connected {r['connected']}/{r['clients']}, snapshots/s per viewer "
              f"p50 {r['client_rate_p50']:.1f} p1 {r['client_rate_p1']:.1f}, age p50 "
              f"{r['age_ms_p50']:.1f} ms p99 {r['age_ms_p99']:.1f} ms, failures {r['failures']}")


async def rooms(nodes, count, boids, seconds):
    viewers = []
    for i in range(count):
        c = await Client.connect(nodes[i % 3].url, headers_only=True)
        r = await c.join(f"r{i}", "viewer", boids=boids, timeout=10)
        assert r["type"] == "ack", r
        viewers.append(c)
    names = [f"r{i}" for i in range(count)]
    owners = await tc.settled(nodes, names, timeout=30)
    await asyncio.sleep(seconds)
    late = []
    for name in names:
        n = tc.by_id(nodes, owners[name])
        late.append(n.metric(f'flockd_room_tick_lateness_seconds_p99{{room="{name}"}}') * 1e3)
    per_node = {i: sum(1 for o in owners.values() if o == i) for i in tc.NODES}
    print(f"rooms: {count} rooms of {boids} boids, owned {per_node}, after {seconds} s: "
          f"p99 tick lateness median {statistics.median(late):.2f} ms, worst {max(late):.2f} ms")
    for c in viewers:
        await c.close()


async def one_failover(nodes, restart):
    owner_id = (await tc.settled(nodes))["default"]
    owner = tc.by_id(nodes, owner_id)
    others = [n for n in nodes if n is not owner]
    viewers = [await Client.connect(n.url, headers_only=True) for n in others]
    for v in viewers:
        await v.next_snapshot()
    await asyncio.sleep(1.5)  # a checkpoint of the room (--checkpoint-every 1)
    t_kill = time.time()
    owner.kill()
    await asyncio.sleep(0.3)
    counts = [len(v.snapshots) for v in viewers]
    for v, k in zip(viewers, counts):
        await v.wait_for(lambda v=v, k=k: len(v.snapshots) > k, 10)
    worst = max(v.snapshots[k][0] - t_kill for v, k in zip(viewers, counts))
    new_owner = (await tc.settled(others, not_on=owner_id))["default"]
    for v in viewers:
        await v.close()
    restart(owner_id)
    return worst, owner_id, new_owner


async def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("flockd")
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--boids", type=int, default=1000)
    ap.add_argument("--flockctl")
    ap.add_argument("--viewers", type=int, default=1000)
    ap.add_argument("--rooms", type=int, default=0)
    ap.add_argument("--room-boids", type=int, default=1000)
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    args = ap.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    tc.FLOCKD = args.flockd
    flags = ["--boids", str(args.boids), "--max-per-ip", str(args.viewers + 100),
             "--max-rooms", str(args.rooms + 16)] + extra
    nats = tc.Nats().start()
    nodes = []

    def start(node_id):
        n = tc.Node(args.flockd, "--nats", nats.url, "--node-id", node_id,
                    "--checkpoint-every", "1", *flags)
        n.__enter__()
        if node_id in tc.NODES[:len(nodes)]:
            old = nodes[tc.NODES.index(node_id)]
            old.__exit__(None, None, None)
            nodes[tc.NODES.index(node_id)] = n
        else:
            nodes.append(n)

    try:
        for node_id in tc.NODES:
            start(node_id)
        await relay(nodes, args.seconds)
        if args.flockctl:
            await tc.settled(nodes)
            fanout(nodes, args.flockctl, args.viewers, args.seconds)
        if args.rooms:
            await rooms(nodes, args.rooms, args.room_boids, args.seconds)
        times = []
        for trial in range(args.trials):
            worst, was, now = await one_failover(nodes, start)
            times.append(worst)
            print(f"failover {trial + 1}: {was} -> {now}: first frame {worst * 1e3:.0f} ms "
                  "after kill -9", flush=True)
        if times:
            print(f"failover over {len(times)} trials: median {statistics.median(times) * 1e3:.0f} ms, "
                  f"worst {max(times) * 1e3:.0f} ms")
    finally:
        for n in nodes:
            n.__exit__(None, None, None)
        nats.stop()


if __name__ == "__main__":
    asyncio.run(main())
