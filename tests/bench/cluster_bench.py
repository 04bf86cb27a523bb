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
- failover: --trials times, kill -9 of the node that owns `default`
  while an admin on another node spawns one boid every 50 ms (20
  commands/s, from 2 s before the kill to 3 s after); the time from the
  kill to the first frame at each viewer on the two surviving nodes (the
  worst of the two per trial); the commands acked, refused and never
  answered; acked spawns missing from the room the new owner carries on
  (its boid count against the start plus the acked spawns); and whether
  the new owner carried the room on from its command log (CLUSTER.md
  §2.1; the integration test checks its state hash against the old
  owner's last frame). Then the killed node is started
  again under its id and the cluster settles. Median and worst, totals.
- ack (with --ack SECONDS): a second cluster beside the first, its nodes
  run with --cluster-log off, each on its own nats-server; a client on
  each cluster's owner node and one on another node send `seek` commands
  one at a time, the four in turn, for SECONDS; each command's round trip
  to its ack, p50, p99 and worst, log on beside log off.

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
    admin = await Client.connect(others[0].url, headers_only=True)
    for v in viewers:
        await v.next_snapshot()
    await asyncio.sleep(1.5)  # a checkpoint of the room (--checkpoint-every 1)
    base = viewers[0].snapshots[-1][1]["boid_count"]
    sending = asyncio.ensure_future(tc.send_spawns(admin, 5.0))
    await asyncio.sleep(2.0)
    t_kill = time.time()
    owner.kill()
    await asyncio.sleep(0.3)
    counts = [len(v.snapshots) for v in viewers]
    for v, k in zip(viewers, counts):
        await v.wait_for(lambda v=v, k=k: len(v.snapshots) > k, 10)
    worst = max(v.snapshots[k][0] - t_kill for v, k in zip(viewers, counts))
    ids = await sending
    try:
        await admin.wait_for(lambda: all(any(r.get("id") == i for r in admin.replies)
                                         for i in ids), 20)
    except AssertionError:
        pass
    answers = [[r for r in admin.replies if r.get("id") == i] for i in ids]
    acked = sum(1 for a in answers if a and a[0]["type"] == "ack")
    unanswered = sum(1 for a in answers if not a)
    twice = sum(1 for a in answers if len(a) > 1)
    new_owner = (await tc.settled(others, not_on=owner_id))["default"]
    tick = viewers[0].snapshots[-1][1]["tick"]
    await viewers[0].next_snapshot(after_tick=tick + 2, timeout=10)
    lost = base + acked - viewers[0].snapshots[-1][1]["boid_count"]
    line = next((m for m in map(tc.RESUMED.search, tc.by_id(nodes, new_owner).stderr) if m), None)
    for v in viewers + [admin]:
        await v.close()
    restart(owner_id)
    return {"worst": worst, "was": owner_id, "now": new_owner, "sent": len(ids),
            "acked": acked, "refused": len(ids) - acked - unanswered, "unanswered": unanswered,
            "twice": twice, "lost": lost, "resumed": bool(line)}


async def ack_side_by_side(args, nodes, flags):
    """Ack round trips with the command log on (nodes) and off (a second
    cluster), the four clients in turn."""
    nats = tc.Nats().start()
    off = []
    try:
        for node_id in tc.NODES[:2]:
            n = tc.Node(args.flockd, "--nats", nats.url, "--node-id", node_id,
                        "--checkpoint-every", "1", "--cluster-log", "off", *flags)
            n.__enter__()
            off.append(n)
        clients = {}
        for name, cluster in (("on", nodes), ("off", off)):
            owner_id = (await tc.settled(cluster))["default"]
            owner = tc.by_id(cluster, owner_id)
            other = next(n for n in cluster if n is not owner)
            clients[f"log {name}, client on the owner"] = await Client.connect(owner.url,
                                                                                headers_only=True)
            clients[f"log {name}, client on another node"] = await Client.connect(
                other.url, headers_only=True)
        for c in clients.values():  # the round trips read the sockets themselves
            c.reader.cancel()
        rtts = {k: [] for k in clients}
        end = time.time() + args.ack
        x, n = 0.0, 0
        while time.time() < end:
            for k, c in clients.items():
                x, n = (x + 37.0) % 1500, n + 1
                t0 = time.perf_counter()
                await c.ws.send(json.dumps({"cmd": "seek", "id": n, "group": 0, "x": x,
                                            "y": 300.0}))
                while True:
                    m = await asyncio.wait_for(c.ws.recv(), 10)
                    if isinstance(m, str) and json.loads(m).get("id") == n:
                        break
                rtts[k].append((time.perf_counter() - t0) * 1e3)
                assert json.loads(m)["type"] == "ack", m
            await asyncio.sleep(0.02)
        print(f"ack round trips over {args.ack:.0f} s (a tick is {1000 / 60:.1f} ms), ms:")
        for k, v in rtts.items():
            print(f"  {k:<34} p50 {pct(v, 50):7.2f}  p99 {pct(v, 99):7.2f}  "
                  f"worst {max(v):7.2f}  ({len(v)} commands)")
        for c in clients.values():
            await c.ws.close()
    finally:
        for n in off:
            n.__exit__(None, None, None)
        nats.stop()


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
    ap.add_argument("--ack", type=float, default=0.0)
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
        if args.ack:
            await ack_side_by_side(args, nodes, flags)
        times, trials = [], []
        for trial in range(args.trials):
            t = await one_failover(nodes, start)
            times.append(t["worst"])
            trials.append(t)
            print(f"failover {trial + 1}: {t['was']} -> {t['now']}: first frame "
                  f"{t['worst'] * 1e3:.0f} ms after kill -9; {t['sent']} commands, "
                  f"{t['acked']} acked, {t['refused']} refused, {t['unanswered']} unanswered, "
                  f"{t['twice']} answered twice, {t['lost']} acked spawns lost; resumed from the "
                  f"log: {t['resumed']}", flush=True)
        if times:
            print(f"failover over {len(times)} trials: median {statistics.median(times) * 1e3:.0f} ms, "
                  f"worst {max(times) * 1e3:.0f} ms; {sum(t['sent'] for t in trials)} commands, "
                  f"{sum(t['acked'] for t in trials)} acked, "
                  f"{sum(t['unanswered'] for t in trials)} unanswered, "
                  f"{sum(t['twice'] for t in trials)} answered twice, "
                  f"{sum(t['lost'] for t in trials)} acked lost; "
                  f"{sum(t['resumed'] for t in trials)} of {len(trials)} resumed from the log")
    finally:
        for n in nodes:
            n.__exit__(None, None, None)
        nats.stop()


if __name__ == "__main__":
    asyncio.run(main())
