#!/usr/bin/python3
"""A chaos run of a flockd cluster (server/cluster/CLUSTER.md §2, §2.1).

Three real flockd nodes on one real nats-server with JetStream. On every
node an admin client spawns one boid at a time in the `default` room
(never despawned: the room's boid count is the count of spawns applied)
and a viewer watches it. A driver, seeded, picks a fault every few
seconds: kill -9 of a node (restarted under the same id a little later),
SIGSTOP of a node for a couple of seconds then SIGCONT, or a restart of
nats-server (same store). When the time is up the faults stop, the
cluster settles, and a checker proves:

- every command sent on a connection that stayed open got exactly one
  reply: an ack, or `unavailable`;
- every acked spawn is in the room exactly once: the boid count every
  node shows is at least the start plus the acked spawns and at most that
  plus the spawns whose outcome nobody could know (sent on a connection
  that died with its node, or refused with "outcome is unknown":
  PROTOCOL.md §5.7);
- after each fault, the viewers of the nodes that were not hit got a new
  frame again within the failover bound (FAILOVER_S); then, the spawns
  paused until every live command is answered, the room's boids are
  held to the same bounds, and the faults after which they were off are
  listed (the first names what broke it);
- every node agrees on the room's tick and boids at the end;
- no node exited but the killed ones, and no node wrote a sanitizer
  report.

Usage: chaos.py FLOCKD [--seconds N] [--seed S] [--logs DIR]
`make chaos` runs it for 30 minutes (CHAOS_SECONDS), `make test` for 30 s.
It prints a line per fault and, last, a FIGURES line and a JSON summary.
"""

import argparse
import asyncio
import collections
import json
import os
import random
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))

from flockd_harness import SANITIZER_REPORTS, Client  # noqa: E402
from test_cluster import NODES, Nats, Node, settled  # noqa: E402

FAILOVER_S = 10.0  # a viewer streams again within this of a fault (generous: sanitizers)
UNKNOWN = "outcome is unknown"  # in a refusal's message: it may have taken effect (§5.7)
SPAWN_EVERY_S = 0.5  # 3 nodes x 2/s: half an hour stays within a room's 16,384 boids


class Member:
    """One node's process and its two clients."""

    def __init__(self, node_id):
        self.id = node_id
        self.node = None
        self.admin = None
        self.viewer = None
        self.sent = {}  # command id -> time sent, on the current admin connection
        self.unknown = 0  # spawns whose connection died without their reply
        self.replies = {}  # command id -> replies, of connections that lived
        self.next_id = 1
        self.down = False
        self.killed_nodes = []
        self.counts = collections.Counter()  # the cluster's counters, over the node's lives

    def take_counts(self):
        """Adds the node's cluster counters (/metrics) to self.counts: at
        its kill and at the end, so each life counts once."""
        try:
            body = self.node.http("/metrics")[2]
        except OSError:
            return
        for line in body.splitlines():
            if line.startswith("flockd_cluster_") and "_total{" in line:
                name = line.split("_total{")[0][len("flockd_cluster_"):]
                self.counts[name] += int(line.rsplit(" ", 1)[1])

    def start(self, flockd, nats_url):
        self.node = Node(flockd, "--nats", nats_url, "--node-id", self.id,
                         "--checkpoint-every", "1", stop_timeout=60)
        self.node.__enter__()
        self.down = False

    async def connect(self):
        # Both connections made before the spawner sees the admin: a spawn
        # sent while the viewer connects would go into the settled
        # connection's ids, and its reply would count nowhere.
        self.sent = {}
        admin = await Client.connect(self.node.url, headers_only=True)
        viewer = await Client.connect(self.node.url, headers_only=True)
        self.admin, self.viewer = admin, viewer

    def settle_connection(self, died):
        """The admin connection ends: its replies are counted; a command
        without one is unknown if the connection died with its node."""
        if not self.admin:
            return
        got = {}
        for r in self.admin.replies:
            if "id" in r:
                got.setdefault(r["id"], []).append(r)
        for i in self.sent:
            if i in got:
                self.replies[i] = got[i]
            elif died:
                self.unknown += 1
            else:
                self.replies[i] = []
        self.sent = {}

    async def spawn(self):
        if self.down or not self.admin:
            return
        i = self.next_id
        self.next_id += 1
        # Counted as sent before the send yields: a kill may settle the
        # connection meanwhile, and the node may have read it by then.
        sent = self.sent
        sent[i] = time.time()
        try:
            await self.admin.ws.send(json.dumps({"cmd": "spawn", "id": i, "n": 1, "group": 0,
                                                 "x": 200.0, "y": 200.0}))
        except Exception:  # the connection died with its node: nothing was sent
            sent.pop(i, None)


async def spawner(members, stop, paused):
    while not stop.is_set():
        for m in members:
            if not paused.is_set():
                await m.spawn()
        await asyncio.sleep(SPAWN_EVERY_S)


def tally(members):
    """(acked, unknown) so far: the settled replies and those of the live
    connections' commands answered once."""
    acked = unknown = 0
    for m in members:
        got = {}
        for r in (m.admin.replies if m.admin else []):
            if "id" in r and r["id"] in m.sent:
                got.setdefault(r["id"], []).append(r)
        for rs in list(m.replies.values()) + list(got.values()):
            if len(rs) == 1:
                acked += rs[0]["type"] == "ack"
                unknown += rs[0]["type"] != "ack" and UNKNOWN in rs[0]["message"]
        unknown += m.unknown
    return acked, unknown


async def audit(members, base):
    """With the spawns paused: every live command answered (at most 12 s,
    a relay sends again for 8), then the room's boids against what the
    replies allow. A string for the fault's line; None if a command stayed
    in flight (nothing to judge)."""
    def in_flight(m):
        answered = {r.get("id") for r in m.admin.replies}
        return any(i not in answered for i in m.sent)

    deadline = time.time() + 12
    while any(m.admin and in_flight(m) for m in members if not m.down):
        if time.time() > deadline:
            return None
        await asyncio.sleep(0.1)
    await asyncio.sleep(0.5)  # a frame after the last command applied
    acked, unknown = tally(members)
    live = [m for m in members if not m.down and m.viewer and m.viewer.snapshots]
    if not live:
        return None
    count = boids(live[0])
    if count > base + acked + unknown:
        return f"boids {count}: {count - base - acked - unknown} beyond the acked and unknown"
    if count < base + acked:
        return f"boids {count}: {base + acked - count} acked spawns missing"
    return None


async def streaming_again(members, hit, t0):
    """Seconds until every viewer of a node not hit had a frame after t0."""
    waits = []
    for m in members:
        if m is hit or m.down:
            continue
        v = m.viewer
        deadline = t0 + FAILOVER_S
        while not any(t > t0 + 0.05 for t, _ in v.snapshots[-50:]):
            if time.time() > deadline:
                raise AssertionError(f"the viewer on {m.id} had no frame {FAILOVER_S} s after "
                                     f"the fault")
            await asyncio.sleep(0.05)
        waits.append(next(t for t, _ in v.snapshots[-50:] if t > t0 + 0.05) - t0)
    return max(waits) if waits else 0.0


async def fault(rng, members, nats, flockd, log):
    kind = rng.choice(["kill", "kill", "stop", "nats"])
    t0 = time.time()
    if kind == "nats":
        await asyncio.get_running_loop().run_in_executor(None, nats.stop)
        await asyncio.sleep(rng.uniform(0.5, 2.0))
        await asyncio.get_running_loop().run_in_executor(None, lambda: nats.start(nats.port))
        log.append({"fault": "nats restart", "at": round(t0, 2)})
        return None, time.time()
    m = rng.choice(members)
    if kind == "stop":
        m.node.proc.send_signal(signal.SIGSTOP)
        await asyncio.sleep(rng.uniform(1.0, 3.0))
        m.node.proc.send_signal(signal.SIGCONT)
        log.append({"fault": f"SIGSTOP {m.id}", "at": round(t0, 2)})
        return m, t0
    m.down = True
    m.settle_connection(died=True)
    await asyncio.get_running_loop().run_in_executor(None, m.take_counts)
    m.node.kill()
    m.killed_nodes.append(m.node)
    for c in (m.admin, m.viewer):
        c.reader.cancel()
    m.admin = m.viewer = None
    log.append({"fault": f"kill -9 {m.id}", "at": round(t0, 2)})
    await asyncio.sleep(rng.uniform(1.0, 3.0))
    m.start(flockd, nats.url)
    await m.connect()
    return m, t0


def boids(member):
    return member.viewer.snapshots[-1][1]["boid_count"]


async def run(flockd, seconds, seed, logs):
    rng = random.Random(seed)
    nats = Nats().start()
    members = [Member(n) for n in NODES]
    log, waits = [], []
    stop = asyncio.Event()
    try:
        for m in members:
            m.start(flockd, nats.url)
        await settled([m.node for m in members], timeout=30)
        for m in members:
            await m.connect()
        await members[0].viewer.next_snapshot(timeout=10)
        await asyncio.sleep(1.5)  # the room's first checkpoint
        base = boids(members[0])
        paused = asyncio.Event()
        spawning = asyncio.ensure_future(spawner(members, stop, paused))
        off = []  # faults after which the boids were not what the replies allow
        end = time.time() + seconds
        while time.time() < end:
            await asyncio.sleep(rng.uniform(3.0, 6.0))
            hit, t0 = await fault(rng, members, nats, flockd, log)
            try:
                waits.append(await streaming_again(members, hit, t0))
            except AssertionError:
                print(f"chaos: FAIL after fault {len(log)}, {log[-1]['fault']} at "
                      f"{time.strftime('%H:%M:%S', time.localtime(t0))}", flush=True)
                raise
            paused.set()
            wrong = await audit(members, base)
            paused.clear()
            if wrong:
                off.append({"fault": len(log), "what": log[-1]["fault"], "boids": wrong})
            print(f"chaos: {log[-1]['fault']}: viewers streaming again after "
                  f"{waits[-1]:.2f} s{'; ' + wrong if wrong else ''}", flush=True)
        stop.set()
        await spawning
        await settled([m.node for m in members], timeout=30)
        await asyncio.sleep(2.0)
        for m in members:  # every reply of the live connections (the relays send again 8 s)
            await m.admin.wait_for(lambda m=m: all(any(r.get("id") == i for r in m.admin.replies)
                                                   for i in m.sent), 20)
            m.settle_connection(died=False)
            m.take_counts()
        return check(members, base, log, waits, seed, seconds, off)
    finally:
        stop.set()
        for m in members:
            for c in (m.admin, m.viewer):
                if c:
                    await c.close()
            if m.node and m.node.proc.poll() is None:
                m.node.__exit__(None, None, None)
        nats.stop()
        if logs:  # whatever ended the run: a failed check, or a viewer that stayed dark
            keep_logs(members, logs)


def keep_logs(members, logs):
    """Every node's stderr, each life's, into the folder logs."""
    os.makedirs(logs, exist_ok=True)
    for m in members:
        for life, n in enumerate(n for n in m.killed_nodes + [m.node] if n):
            with open(os.path.join(logs, f"{m.id}.{life}.log"), "w") as f:
                f.write("".join(n.stderr))
    print(f"chaos: the nodes' output is in {logs}", flush=True)


def check(members, base, log, waits, seed, seconds, off):
    replies = [rs for m in members for rs in m.replies.values()]
    missing = sum(1 for rs in replies if len(rs) == 0)
    twice = sum(1 for rs in replies if len(rs) > 1)
    acked = sum(1 for rs in replies if len(rs) == 1 and rs[0]["type"] == "ack")
    refused = [rs[0] for rs in replies if len(rs) == 1 and rs[0]["type"] != "ack"]
    unknown = sum(m.unknown for m in members) + sum(UNKNOWN in r["message"] for r in refused)
    kinds = collections.Counter(r["message"].split(":")[0] for r in refused)
    counts = {m.id: boids(m) for m in members}
    ticks = {m.id: m.viewer.snapshots[-1][1]["tick"] for m in members}
    reports = [m.id for m in members for n in [m.node] + m.killed_nodes
               if any(r in "".join(n.stderr) for r in SANITIZER_REPORTS)]
    exited = [m.id for m in members if m.node.proc.poll() is not None]
    summary = {"seed": seed, "seconds": seconds, "faults": len(log),
               "sent": len(replies) + sum(m.unknown for m in members), "acked": acked,
               "refused": len(refused), "unknown": unknown, "missing": missing, "twice": twice,
               "boids": counts, "base": base, "ticks": ticks,
               "refusals": dict(kinds),
               "counters": dict(sum((m.counts for m in members), collections.Counter())),
               "streaming_again_max_s": round(max(waits, default=0.0), 2),
               "boids_off_after": off,
               "sanitizer_reports": reports, "exited": exited}
    print(f"FIGURES chaos seed {seed}, {seconds:.0f} s, {len(log)} faults: {summary['sent']} "
          f"spawns, {acked} acked, {len(refused)} refused, {unknown} of unknown outcome, "
          f"{missing} unanswered, {twice} answered twice; boids {counts} from {base}; viewers "
          f"streaming again within {summary['streaming_again_max_s']} s", flush=True)
    print(json.dumps(summary), flush=True)
    problems = []
    if missing or twice:
        problems.append(f"{missing} commands unanswered, {twice} answered twice")
    if any(r["code"] != "unavailable" for r in refused):
        problems.append(f"refusals other than unavailable: "
                        f"{[r for r in refused if r['code'] != 'unavailable'][:3]}")
    if len(set(counts.values())) != 1:
        problems.append(f"the nodes show different boid counts: {counts}")
    count = min(counts.values())
    if not base + acked <= count <= base + acked + unknown:
        problems.append(f"boids {count} not within [{base + acked}, {base + acked + unknown}]: "
                        f"an acked spawn lost or one applied twice")
    if reports or exited:
        problems.append(f"sanitizer reports on {reports}; nodes exited: {exited}")
    for p in problems:
        print(f"chaos: FAIL {p}", flush=True)
    return not problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("flockd")
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--logs", help="a folder for the nodes' output (each life's stderr)")
    a = ap.parse_args()
    ok = asyncio.run(run(a.flockd, a.seconds, a.seed, a.logs))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
