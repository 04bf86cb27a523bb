#!/usr/bin/python3
"""flockd as a cluster on NATS (server/cluster/CLUSTER.md): a real `nats-server -js`
on a free loopback port with its store in a temporary folder, and three
flockd nodes joined to it with --nats. Checks that the room list agrees on
every node, that viewers on every node get the room's frames at the
snapshot rate, that a command through a node that does not own the room is
acked with its tick and takes effect, that kill -9 of the owner has its
rooms tick again on another node within 2 s while viewers elsewhere keep
their connection, that restarting nats-server loses no room, that a relay
tells its viewers when the room cannot be reached (NATS stopped, or no
frames) and when it is back, that a relay's welcome carries the owner's
current parameters, that joins of new rooms in quick succession spread
over the nodes, that a version 3 client on a relay gets the frames a
client of the owner with the same view gets (the relay taking from NATS
only the tiles its clients look at) and resumes on a key frame after the
owner dies, and that garbled or hostile messages on a room's subjects are
rejected and counted.

Usage: test_cluster.py FLOCKD_BINARY FLOCKCTL_BINARY [--functional | --timing] [--untimed]
       [TEST_NAME...]
The last line is "N passed, N failed".
"""

import asyncio
import contextlib
import glob
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import re
import sys
import tempfile
import threading
import time

import websockets

from flockd_harness import Client, Flockd, Suite, arg

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "client",
                                "python"))
import flockd  # noqa: E402

FLOCKD = arg(0, "build/server/flockd")
FLOCKCTL = arg(1, "build/client/cli/flockctl")
SUITE = Suite(timeout=180)
test = SUITE.test
timing = SUITE.timing
timely = SUITE.assert_timely
NODES = ("n1", "n2", "n3")


class Nats:
    """A nats-server with JetStream on a port it picks (-p -1), read from
    the ports file it writes; its store in a temporary folder kept across
    restart()."""

    def __init__(self, config=""):
        self.dir = tempfile.mkdtemp(prefix="flockd-nats-")
        self.proc = None
        self.port = None
        self.config = os.path.join(self.dir, "nats.conf")
        with open(self.config, "w") as f:
            f.write(config)

    def start(self, port=-1):
        ports = os.path.join(self.dir, "ports")
        shutil.rmtree(ports, ignore_errors=True)
        os.makedirs(ports)
        self.proc = subprocess.Popen(
            ["nats-server", "-c", self.config, "-a", "127.0.0.1", "-p", str(port), "-js",
             "-sd", os.path.join(self.dir, "store"), "--ports_file_dir", ports],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 10
        while time.time() < deadline:
            files = glob.glob(os.path.join(ports, "*.ports"))
            if files:
                with open(files[0]) as f:
                    text = f.read()
                if text.strip():
                    url = json.loads(text)["nats"][0]
                    self.port = int(url.rsplit(":", 1)[1])
                    return self
            time.sleep(0.05)
        raise RuntimeError("nats-server did not start")

    @property
    def url(self):
        return f"nats://127.0.0.1:{self.port}"

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)

    def restart(self):
        self.stop()
        self.start(self.port)

    def publish(self, subject, payload, reply=None):
        """Publishes raw bytes on subject (with a reply subject if given)
        with the plain NATS protocol."""
        head = f"PUB {subject} {reply} {len(payload)}" if reply else f"PUB {subject} {len(payload)}"
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as s:
            s.recv(4096)  # INFO
            s.sendall(b'CONNECT {"verbose":false}\r\n' +
                      f"{head}\r\n".encode() + payload +
                      b"\r\nPING\r\n")
            buf = b""
            while b"PONG" not in buf:
                buf += s.recv(4096)


class Node(Flockd):
    """A flockd node; kill() ends it with SIGKILL, which then counts as a
    clean exit. A node signs in to NATS (over TLS, maybe) and sets up its
    streams before it listens: a sanitizer's build on a loaded machine may
    take more than the default 10 s to."""

    killed = False

    def __init__(self, *args, start_timeout=40, **kw):
        super().__init__(*args, start_timeout=start_timeout, **kw)

    def kill(self):
        self.killed = True
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)  # a sanitizer's process on a loaded machine takes seconds to go

    def shutdown_problem(self):
        return None if self.killed else super().shutdown_problem()


@contextlib.contextmanager
def cluster(*extra, nats_config="", count=len(NODES)):
    nats = Nats(nats_config).start()
    try:
        with contextlib.ExitStack() as stack:
            nodes = [stack.enter_context(Node(FLOCKD, "--nats", nats.url, "--node-id", n,
                                              "--checkpoint-every", "1", *extra))
                     for n in NODES[:count]]
            yield nats, nodes
    finally:
        nats.stop()
        shutil.rmtree(nats.dir, ignore_errors=True)


def listing(node):
    return {r["name"]: r.get("node") for r in node.rooms()["rooms"]}


async def settled(nodes, rooms=("default",), timeout=10, not_on=None):
    """Waits until every node lists the same owner for each room (and
    none of them is `not_on`); returns {room: owner node id}."""
    deadline = time.time() + timeout
    while True:
        lists = [listing(n) for n in nodes]
        if all(lists[0].get(r) and lists[0][r] != not_on and
               all(lst.get(r) == lists[0][r] for lst in lists) for r in rooms):
            return {r: lists[0][r] for r in rooms}
        if time.time() > deadline:
            raise AssertionError(f"the nodes do not agree: {lists}")
        await asyncio.sleep(0.1)


def frame_message(term, seq, tick):
    """A well-formed frame message (CLUSTER.md §3.1, version 2) with no
    parts: the plan its key frame alone (21 entries), 22 lengths of 0."""
    head = b"FKCF" + struct.pack("<HHQQQq", 2, 0, term, seq, tick, 0)
    plan = struct.pack("<IB", seq & 0xFFFFFFFF, 1) + bytes([1, 0, 0]) + bytes(3 * 20)
    return head + plan + bytes(4 * 22)


async def wait_metric(node, name, at_least, timeout=5):
    deadline = time.time() + timeout
    while (node.metric(name) or 0) < at_least and time.time() < deadline:
        await asyncio.sleep(0.05)
    assert (node.metric(name) or 0) >= at_least, (name, node.metric(name), at_least)


def by_id(nodes, node_id):
    return nodes[NODES.index(node_id)]


V3_HEADER = struct.Struct("<2sBBBBBBQQffIIBBBBBBHH2sI")  # PROTOCOL.md §12.5


def varint(buf, at):
    v, shift = 0, 0
    while True:
        b = buf[at]
        at += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, at


def v3_frame(buf):
    """A version 3 frame's header (PROTOCOL.md §12.5) and the kind of each
    of its parts: "empty", "key" or "delta" (their bodies are skipped)."""
    (magic, version, kind, flags, shift, sample, _, tick, _time, _w, _h, seq, room_boids,
     _cols, _rows, rect_cols, rect_rows, rect_x, rect_y, nobst, ntarg, _,
     frame_hash) = V3_HEADER.unpack_from(buf, 0)
    assert magic == b"FK" and version == 3 and kind == 1, (magic, version, kind)
    at = V3_HEADER.size + 16 * nobst + 9 * ntarg
    kinds = []
    for _ in range(rect_cols * rect_rows):
        k = buf[at] & 3
        at += 1
        if k == 0:
            kinds.append("empty")
            continue
        at += k == 2  # the gaps
        _, at = varint(buf, at)  # count
        packed, at = varint(buf, at)
        if k == 1:
            _, at = varint(buf, at)  # plain_len
        at += packed
        kinds.append("key" if k == 1 else "delta")
    assert at == len(buf), (at, len(buf))
    return {"tick": tick, "seq": seq, "flags": flags, "shift": shift, "sample": sample,
            "rect": [rect_x, rect_y, rect_cols, rect_rows], "room_boids": room_boids,
            "sections": bytes(buf[V3_HEADER.size:V3_HEADER.size + 16 * nobst + 9 * ntarg]),
            "frame_hash": frame_hash, "kinds": kinds}


class V3Client(Client):
    """A client of version 3 (flock.v3): `snapshots` holds (arrival, frame)
    with each frame as v3_frame() reads it."""

    def __init__(self, ws):
        super().__init__(ws)
        self.decode = v3_frame

    @classmethod
    async def connect(cls, url, **kw):
        ws = await websockets.connect(url, subprotocols=["flock.v3"], max_size=None, **kw)
        c = cls(ws)
        await c.wait_for(lambda: c.welcome is not None, 5)
        return c


# A room of 8,000 boids: the world grows to 12 x 8 tiles of 400 units.
V3_ROOM = ("--boids", "8000", "--capacity", "16384")


@test
async def room_list_agrees_on_every_node():
    with cluster() as (_, nodes):
        owner = (await settled(nodes))["default"]
        assert owner in NODES, owner
        for n in nodes:
            status = json.loads(n.http("/healthz")[2])
            assert status["nats"] == "connected", status
        # A room made by a join on one node is listed by all, with its node.
        c = await Client.connect(nodes[1].url)
        assert (await c.join("second", "admin", boids=0))["type"] == "ack"
        owners = await settled(nodes, ("default", "second"))
        second = owners["second"]
        await c.next_snapshot()  # its owner ticks it
        # Every node shows the room as it is on its owner.
        r = await c.command("spawn", n=10, group=1, x=100.0, y=100.0, spread=10.0)
        assert r["type"] == "ack", r
        deadline = time.time() + 5
        while time.time() < deadline and any(
                next(e for e in n.rooms()["rooms"] if e["name"] == "second")["boids"] != 10
                for n in nodes):
            await asyncio.sleep(0.1)
        for n in nodes:
            entry = next(e for e in n.rooms()["rooms"] if e["name"] == "second")
            assert entry["boids"] == 10 and entry["node"] == second, entry
        await c.close()


@timing
async def viewers_on_every_node_get_frames_at_the_snapshot_rate():
    with cluster() as (_, nodes):
        owner = (await settled(nodes))["default"]
        viewers = [await Client.connect(n.url, headers_only=True) for n in nodes]
        await asyncio.sleep(1)
        start = [len(v.snapshots) for v in viewers]
        await asyncio.sleep(5)
        # A lease that lapsed on a starved machine (sanitizers, load) moves
        # the room, which goes back to its checkpoint's tick (CLUSTER.md):
        # the frames' order is checked when the owner stayed.
        moved = (await settled(nodes))["default"] != owner
        for node, v, s in zip(nodes, viewers, start):
            ticks = [snap["tick"] for _, snap in v.snapshots[s:]]
            rate = len(ticks) / 5
            assert rate > 0, (node.port, "no frames")
            timely(rate >= 18, (node.port, rate))
            assert moved or (ticks == sorted(ticks) and len(set(ticks)) == len(ticks)), ticks
        if moved:
            print(f"the room moved from {owner} during the test: its ticks' order not checked")
        for v in viewers:
            await v.close()


@test
async def a_command_through_a_non_owner_is_acked_and_takes_effect():
    with cluster() as (_, nodes):
        owner = (await settled(nodes))["default"]
        other = next(n for i, n in zip(NODES, nodes) if i != owner)
        watcher = await Client.connect(by_id(nodes, owner).url)
        c = await Client.connect(other.url)
        r = await c.command("obstacle_add", x=300.0, y=200.0, r=25.0)
        assert r["type"] == "ack" and r["tick"] > 0, r
        snap = await watcher.next_snapshot(after_tick=r["tick"])
        assert any(abs(o[1] - 300) < 1 and abs(o[2] - 200) < 1 for o in snap["obstacles"]), snap
        # An error comes back unchanged, in order after the command before it.
        bad = await c.command("spawn", n=0)
        assert bad["type"] == "error" and bad["code"] == "out_of_range", bad
        # The relay's own viewers see the obstacle too.
        mine = await c.next_snapshot(after_tick=r["tick"])
        assert mine["obstacle_count"] == 1, mine
        forwarded = other.metric(f'flockd_cluster_commands_forwarded_total{{node="{NODES[nodes.index(other)]}"}}')
        assert forwarded >= 2, forwarded
        await c.close()
        await watcher.close()


async def welcome_showing(url, room, shows, within=1.0):
    """Joins `room` on url again and again until a welcome satisfies
    shows(welcome); returns that welcome and how long it took (seconds),
    or fails after `within` seconds (what CLUSTER.md §3.5 promises: the
    owner's message on its way, else its republish every second)."""
    t0 = time.time()
    while True:
        c = await Client.connect(url)
        if room != "default":
            assert (await c.join(room, "viewer"))["type"] == "ack"
        w = c.welcome
        await c.close()
        if shows(w):
            return w, time.time() - t0
        assert time.time() - t0 < within, (room, w["values"], w.get("groups"))
        await asyncio.sleep(0.02)


@test
async def a_relays_welcome_shows_the_owners_current_parameters():
    # No checkpoint in the test's time: a copy cannot learn them from one.
    with cluster("--checkpoint-every", "60") as (_, nodes):
        owner_id = (await settled(nodes))["default"]
        relays = [n for n in nodes if n is not by_id(nodes, owner_id)]
        # Through the owner, then through a relay: a later welcome on the
        # other relay (which has the room) shows each.
        for via, value in ((by_id(nodes, owner_id), 123.5), (relays[0], 77.25)):
            setter = await Client.connect(via.url)
            assert setter.welcome["role"] == "admin", setter.welcome
            r = await setter.command("params", max_speed=value)
            assert r["type"] == "ack", r
            _, took = await welcome_showing(relays[1].url, "default",
                                            lambda w, v=value: w["values"]["max_speed"] == v)
            print(f"a relay's welcome showed max_speed {value} {took * 1000:.0f} ms after the ack")
            await setter.close()
        # A room the joining node does not have yet: its copy opens with
        # the owner's parameters, every group's (asked for as it opens).
        maker = await Client.connect(nodes[0].url)
        assert (await maker.join("tuned", "admin", boids=50))["type"] == "ack"
        tuned_owner = (await settled(nodes, ("default", "tuned")))["tuned"]
        await maker.next_snapshot()
        r = await maker.command("params", group=3, fov=90.0)
        assert r["type"] == "ack", r
        r = await maker.command("params", w_cohesion=2.5)
        assert r["type"] == "ack", r
        far_id = next(i for i in NODES if i not in (tuned_owner, "n1"))
        far = await Client.connect(by_id(nodes, far_id).url)
        assert (await far.join("tuned", "viewer"))["type"] == "ack"
        w = far.welcome
        assert w["room"] == "tuned" and w["values"]["w_cohesion"] == 2.5, w["values"]
        assert w["groups"]["3"]["fov"] == 90.0, w.get("groups")
        # A change after the copy opened reaches its later welcomes.
        r = await maker.command("params", group=3, fov=45.0)
        assert r["type"] == "ack", r
        await welcome_showing(by_id(nodes, far_id).url, "tuned",
                              lambda w: w.get("groups", {}).get("3", {}).get("fov") == 45.0)
        for x in (maker, far):
            await x.close()


@test
async def an_rts_rooms_teams_are_decided_by_its_owner_node_only():
    with cluster("--room-expiry", "60") as (_, nodes):
        await settled(nodes)
        # A player makes an RTS room: it stays on the player's node, which
        # decides its teams.
        home = nodes[1]
        first = await Client.connect(home.url)
        r = await first.join("war", "player", mode="rts", name="ann")
        assert r["type"] == "ack" and r["team"] == 1, r
        owners = await settled(nodes, ("default", "war"))
        assert owners["war"] == NODES[1], owners
        # A player on another node is sent to the owner, by name, and
        # holds no team anywhere; a viewer there is welcome.
        for other in (nodes[0], nodes[2]):
            c = await Client.connect(other.url)
            refused = await c.join("war", "player", mode="rts", name="bob")
            assert refused["type"] == "error" and refused["code"] == "bad_room", refused
            assert f"node {NODES[1]}" in refused["message"], refused
            assert c.welcome["room"] == "default", c.welcome  # nothing changed
            assert (await c.join("war", "viewer"))["type"] == "ack"
            assert c.welcome["room"] == "war" and "team" not in c.welcome, c.welcome
            await c.close()
        # On the owner the next player gets the next team: no team was
        # given away elsewhere.
        second = await Client.connect(home.url)
        r = await second.join("war", "player", mode="rts", name="cat")
        assert r["type"] == "ack" and r["team"] == 2, r
        await second.wait_for(lambda: second.rosters and len(second.rosters[-1]["players"]) == 2, 5)
        teams = sorted(p["team"] for p in second.rosters[-1]["players"])
        assert teams == [1, 2], second.rosters[-1]
        for x in (first, second):
            await x.close()


@test
async def a_room_made_on_one_node_is_served_on_another_with_its_password():
    # Rooms expire 1 s after their last member here; checkpoints every 1 s.
    with cluster("--room-expiry", "1") as (_, nodes):
        await settled(nodes)
        maker = await Client.connect(nodes[0].url)
        r = await maker.join("locked", "player", password="s3cret", boids=300)
        assert r["type"] == "ack", r
        first = (await settled(nodes, ("default", "locked")))["locked"]
        await asyncio.sleep(1.5)  # its first checkpoint carries the password
        # A node that neither ticks the room nor has its maker.
        far_id = next(i for i in NODES if i not in (first, "n1"))
        far = await Client.connect(by_id(nodes, far_id).url)
        refused = await far.join("locked", "player", password="wrong")
        assert refused["type"] == "error" and refused["code"] == "forbidden", refused
        assert (await far.join("locked", "viewer"))["type"] == "ack"
        assert far.welcome["room"] == "locked", far.welcome
        snap = await far.next_snapshot()
        assert len(snap["boids"]) == 300, len(snap["boids"])
        # The maker leaves: the room may have nobody on its owner, but a
        # viewer elsewhere, so it neither expires nor moves.
        await maker.close()
        await asyncio.sleep(3)
        owners = await settled(nodes, ("locked",))
        assert owners["locked"] == first, owners
        tick = far.snapshots[-1][1]["tick"]
        await far.next_snapshot(after_tick=tick)
        await far.close()


@test
async def a_join_creates_its_room_on_the_least_loaded_node():
    with cluster() as (_, nodes):
        owner = (await settled(nodes))["default"]  # it ticks 1,000 boids
        await asyncio.sleep(1.5)  # every node's heartbeat is in
        c = await Client.connect(by_id(nodes, owner).url)
        r = await c.join("placed", "player", password="pw", boids=200)
        assert r["type"] == "ack", r
        owners = await settled(nodes, ("default", "placed"))
        assert owners["placed"] != owner, owners
        # Its client stays on the node it joined: frames relayed, commands
        # forwarded, the password the join set kept where it ticks.
        snap = await c.next_snapshot(timeout=5)
        assert len(snap["boids"]) == 200, len(snap["boids"])
        ack = await c.command("obstacle_add", x=50.0, y=50.0, r=10.0)
        assert ack["type"] == "ack", ack
        there = await Client.connect(by_id(nodes, owners["placed"]).url)
        refused = await there.join("placed", "player", password="nope")
        assert refused["type"] == "error" and refused["code"] == "forbidden", refused
        assert (await there.join("placed", "player", password="pw"))["type"] == "ack"
        await there.next_snapshot()
        assert there.welcome["room"] == "placed"
        # A second room goes elsewhere than the first, at once: the first
        # counts where it was placed from until a heartbeat of its node
        # written after it took the room.
        d = await Client.connect(by_id(nodes, owner).url)
        assert (await d.join("placed2", "viewer", boids=200))["type"] == "ack"
        owners = await settled(nodes, ("default", "placed", "placed2"))
        assert len(set(owners.values())) == 3, owners
        for x in (c, d, there):
            await x.close()


@test
async def joins_of_new_rooms_in_quick_succession_spread_over_the_nodes():
    with cluster("--room-expiry", "60", "--boids", "1000") as (_, nodes):
        owner = (await settled(nodes))["default"]  # it ticks 1,000 boids
        await asyncio.sleep(1.5)  # every node's heartbeat is in
        others = [i for i in NODES if i != owner]
        names = [f"quick{k}" for k in range(6)]
        clients = []
        # A join every quarter of a second: heartbeats (every second) written
        # before a placed room opened arrive between them.
        for k, name in enumerate(names):  # each join through another node
            c = await Client.connect(nodes[k % 3].url, headers_only=True)
            assert (await c.join(name, "viewer", boids=200))["type"] == "ack"
            clients.append(c)
            await asyncio.sleep(0.25)
        owners = await settled(nodes, ("default", *names))
        # 200-boid rooms: the two idle nodes take turns (600 boids each in
        # the end, still fewer than the default room's 1,000).
        per_node = {i: sum(1 for r in names if owners[r] == i) for i in NODES}
        assert per_node == {owner: 0, others[0]: 3, others[1]: 3}, (per_node, owners)
        for c in clients:
            await c.close()


@timing
async def kill_9_of_the_owner_moves_its_rooms_within_2_seconds():
    with cluster() as (nats, nodes):
        owner_id = (await settled(nodes))["default"]
        owner = by_id(nodes, owner_id)
        others = [n for n in nodes if n is not owner]
        viewers = [await Client.connect(n.url, headers_only=True) for n in others]
        await viewers[0].next_snapshot()
        await asyncio.sleep(1.5)  # a checkpoint taken (--checkpoint-every 1)
        t_kill = time.time()
        owner.kill()
        await asyncio.sleep(0.3)  # frames in flight at the kill are not the new owner's
        counts = [len(v.snapshots) for v in viewers]
        for v, k in zip(viewers, counts):
            await v.wait_for(lambda v=v, k=k: len(v.snapshots) > k, 5)
        first = [v.snapshots[k][0] - t_kill for v, k in zip(viewers, counts)]
        timely(max(first) <= 2.0, first)
        new_owner = (await settled(others, not_on=owner_id))["default"]
        assert new_owner != owner_id, new_owner
        # The viewers kept their connection and the room goes on.
        for v in viewers:
            tick = v.snapshots[-1][1]["tick"]
            await v.next_snapshot(after_tick=tick)
        taken = by_id(nodes, new_owner).metric(
            f'flockd_cluster_lease_takeovers_total{{node="{new_owner}"}}')
        assert taken >= 1, taken
        # NATS said nobody listens to the dead owner's asks (CLUSTER.md §2).
        # The answer must come within 100 ms, else the lease's expiry takes
        # the room (as safely, later): a timing, which --untimed runs (the
        # sanitizers' builds, on a loaded machine) do not hold it to.
        said = [ln for ln in by_id(nodes, new_owner).stderr if 'owns room "default"' in ln]
        assert said, by_id(nodes, new_owner).stderr
        timely(said[-1].rstrip().endswith("connection to NATS is gone"), said)
        # A frame of the dead owner's term (any term up to its own) is
        # recognisably stale: dropped and counted, not shown.
        relay_id = next(i for i in NODES if i not in (owner_id, new_owner))
        relay = by_id(nodes, relay_id)
        stale = f'flockd_cluster_frames_stale_total{{node="{relay_id}"}}'
        before = relay.metric(stale)
        nats.publish("flockd.room.default.frame", frame_message(term=1, seq=10**6, tick=10**9))
        await wait_metric(relay, stale, before + 1)
        assert all(s["tick"] < 10**9 for v in viewers for _, s in v.snapshots), "stale frame shown"
        print(f"failover: first frame {max(first) * 1000:.0f} ms after kill -9")
        for v in viewers:
            await v.close()


async def send_spawns(c, seconds, period=0.05):
    """One spawn every `period` for `seconds`, not waiting for replies:
    the ids sent."""
    ids, end = [], time.time() + seconds
    while time.time() < end:
        i = 1000 + len(ids)
        await c.ws.send(json.dumps({"cmd": "spawn", "id": i, "n": 1, "group": 0,
                                    "x": 300.0, "y": 300.0}))
        ids.append(i)
        await asyncio.sleep(period)
    return ids


async def frames_of(client, out):
    """(arrival time, tick, sim_hash) of every frame client takes, into out."""
    async with client.snapshots(fresh=False, maxlen=100000) as frames:
        async for snap in frames:
            out.append((time.time(), snap.frame.tick, snap.frame.sim_hash, snap.frame.count))


RESUMED = re.compile(r'room "default" resumed from checkpoint \d+ and its command log at tick '
                     r'\d+, state hash [0-9a-f]{16}; at tick (\d+), the last the old owner '
                     r"showed here, the log's state hash was ([0-9a-f]{16})")


# The measure: commands at 20/s through the node that does not own
# the room, the owner killed -9 in the middle. Every command gets one
# reply; every acked spawn is in the room that goes on; the new owner
# carries on at the tick the old one last published, with its state hash.
@test
async def kill_9_of_the_owner_loses_no_acked_command_and_answers_every_one():
    with cluster(count=2) as (nats, nodes):
        owner_id = (await settled(nodes))["default"]
        owner = by_id(nodes, owner_id)
        other = next(n for n in nodes if n is not owner)
        viewer = flockd.Client(other.url.replace("http", "ws"))
        await viewer.start()
        seen = []
        watching = asyncio.ensure_future(frames_of(viewer, seen))
        admin = await Client.connect(other.url, headers_only=True)
        await admin.next_snapshot()
        await asyncio.sleep(1.2)  # a checkpoint taken (--checkpoint-every 1)
        base = seen[-1][3]
        sending = asyncio.ensure_future(send_spawns(admin, 6.0))
        await asyncio.sleep(3.0)
        t_kill = time.time()
        owner.kill()
        ids = await sending
        await admin.wait_for(lambda: all(any(r.get("id") == i for r in admin.replies)
                                         for i in ids), 20)
        replies = {i: [r for r in admin.replies if r.get("id") == i] for i in ids}
        assert all(len(rs) == 1 for rs in replies.values()), "a command answered twice"
        acked = sum(rs[0]["type"] == "ack" for rs in replies.values())
        refused = [rs[0] for rs in replies.values() if rs[0]["type"] != "ack"]
        assert all(r["code"] == "unavailable" for r in refused), refused
        await settled([other], not_on=owner_id)
        tick = seen[-1][1]
        await viewer.wait_for(lambda s: s.frame.tick > tick + 2, 10)
        count = seen[-1][3]
        after = [t for t, *_ in seen if t > t_kill + 0.05]
        line = next((m for m in map(RESUMED.search, other.stderr) if m), None)
        print(f"FIGURES kill -9 under 20 commands/s: {len(ids)} sent, {acked} acked, "
              f"{len(refused)} refused unavailable {[r['message'] for r in refused]}, 0 "
              f"unanswered; boids {count} = {base} + "
              f"{count - base}; first new frame {(after[0] - t_kill) * 1000:.0f} ms after the kill",
              flush=True)
        assert count == base + acked, (count, base, acked, [ln for ln in other.stderr
                                                            if "room" in ln])
        # The log replayed from the checkpoint reaches, at the old owner's
        # last frame here, that frame's state hash (the frame may reach the
        # viewer after the kill on a loaded machine: the first frame of that
        # tick is the old owner's).
        assert line, other.stderr
        t, h = int(line.group(1)), int(line.group(2), 16)
        old = [(tk, hs) for ts, tk, hs, _ in seen if tk == t]
        assert old and old[0][1] == h, (t, hex(h), old, seen[-5:])
        watching.cancel()
        await viewer.close()
        await admin.close()


def stale_frames(nodes, every):
    """Frames of an old term the nodes (of the cluster `every`) dropped."""
    return sum(n.metric(f'flockd_cluster_frames_stale_total{{node="{NODES[every.index(n)]}"}}')
               for n in nodes)


# Fencing: an owner stopped (SIGSTOP) for longer than its lease wakes up
# fenced: no frame of its old term reaches any relay, a command sent to it
# is forwarded to the new owner or refused, never applied by it, and its
# own viewer is served the new owner's frames.
@test
async def an_owner_woken_from_sigstop_after_losing_its_lease_never_acts_as_owner():
    with cluster() as (nats, nodes):
        owner_id = (await settled(nodes))["default"]
        owner = by_id(nodes, owner_id)
        others = [n for n in nodes if n is not owner]
        local = await Client.connect(owner.url, headers_only=True)
        far = await Client.connect(others[0].url, headers_only=True)
        await far.next_snapshot()
        await asyncio.sleep(1.5)  # a checkpoint taken (--checkpoint-every 1)
        base = (await far.next_snapshot())["boid_count"]
        owner.proc.send_signal(signal.SIGSTOP)
        try:
            new_id = (await settled(others, not_on=owner_id, timeout=15))["default"]
            stale = stale_frames(others, nodes)
            tick = far.snapshots[-1][1]["tick"]
            await far.next_snapshot(after_tick=tick, timeout=10)
        finally:
            owner.proc.send_signal(signal.SIGCONT)
        # A stopped owner's connection stays: its lease ran out whole.
        said = [ln for ln in by_id(nodes, new_id).stderr if 'owns room "default"' in ln]
        assert said and "connection to NATS is gone" not in said[-1], said
        # At once, before its steward can see the lease gone: a spawn.
        r = await local.command("spawn", n=5, group=0, x=100.0, y=100.0, timeout=15)
        assert r["type"] == "ack" or r["code"] == "unavailable", r
        await settled(nodes, timeout=15)
        assert listing(owner)["default"] == new_id
        tick = far.snapshots[-1][1]["tick"]
        snap = await far.next_snapshot(after_tick=tick + 2, timeout=10)
        added = 5 if r["type"] == "ack" else 0
        assert snap["boid_count"] == base + added, (snap["boid_count"], base, r)
        # Its own viewer is served the new owner's frames.
        mine = await local.next_snapshot(after_tick=snap["tick"], timeout=10)
        assert abs(mine["tick"] - snap["tick"]) < 60, (mine["tick"], snap["tick"])
        await asyncio.sleep(1.0)
        assert stale_frames(others, nodes) == stale, "a frame of the stopped owner's term was published"
        fenced = owner.metric(f'flockd_cluster_frames_fenced_total{{node="{owner_id}"}}')
        print(f"FIGURES SIGSTOP of the owner: new owner {new_id}; after SIGCONT the spawn got "
              f"{r['type']}, {fenced:.0f} frames fenced, 0 stale frames at the relays", flush=True)
        await local.close()
        await far.close()


# Bad input from NATS: a message that is no batch of records lands in a
# room's command log. The owner's next batch is refused (the log is not as
# it left it): it steps down and takes the room back at once; the log does
# not read, which is said and counted, and the room carries on from its
# checkpoint, the command sent again acked.
@test
async def a_corrupt_command_log_is_refused_and_the_room_goes_on_from_its_checkpoint():
    with cluster() as (nats, nodes):
        owner_id = (await settled(nodes))["default"]
        owner = by_id(nodes, owner_id)
        other = next(n for n in nodes if n is not owner)
        c = await Client.connect(other.url, headers_only=True)
        await c.next_snapshot()
        await asyncio.sleep(1.5)  # a checkpoint taken
        r = await c.command("seek", group=0, x=5.0, y=5.0, timeout=15)  # the owner wrote last
        assert r["type"] == "ack", r
        nats.publish("flockd.log.default", b"\x05\x00\x00\x00garbage, not a record")
        # Its batch refused, the owner steps down without answering this
        # relay's command, which is sent again and applied by the room
        # taken back: acked once.
        r = await c.command("seek", group=0, x=10.0, y=10.0, timeout=20)
        assert r["type"] == "ack", r

        def refused():
            return sum(n.metric("flockd_command_logs_refused_total") or 0 for n in nodes)
        deadline = time.time() + 15
        while refused() < 1 and time.time() < deadline:
            await asyncio.sleep(0.1)
        assert refused() >= 1, [ln for n in nodes for ln in n.stderr if "room" in ln]
        said = [ln for n in nodes for ln in n.stderr if "command log does not read" in ln]
        assert said, [ln for n in nodes for ln in n.stderr if "room" in ln]
        await settled(nodes)
        tick = c.snapshots[-1][1]["tick"]
        await c.next_snapshot(after_tick=tick, timeout=10)
        deadline = time.time() + 10
        while (r := await c.command("seek", group=0, x=20.0, y=20.0))["type"] != "ack":
            assert time.time() < deadline, r  # the takeover settling
            await asyncio.sleep(0.2)
        await c.close()


class Cut:
    """A TCP proxy on loopback in front of nats-server, for one node, on a
    thread of its own (a node's start blocks the test's loop): cut() drops
    its connections and refuses new ones until heal()."""

    def __init__(self, port):
        self.port, self.cut_off, self.pipes = port, False, set()
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        threading.Thread(target=self._run, args=(ready,), daemon=True).start()
        ready.wait(10)

    def _run(self, ready):
        asyncio.set_event_loop(self.loop)
        self.server = self.loop.run_until_complete(
            asyncio.start_server(self._serve, "127.0.0.1", 0))
        self.url = f"nats://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"
        ready.set()
        self.loop.run_forever()

    async def _serve(self, reader, writer):
        if self.cut_off:
            writer.close()
            return
        up_r, up_w = await asyncio.open_connection("127.0.0.1", self.port)
        pair = (writer, up_w)
        self.pipes.add(pair)

        async def pump(r, w):
            try:
                while data := await r.read(65536):
                    w.write(data)
                    await w.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                w.close()
        await asyncio.gather(pump(reader, up_w), pump(up_r, writer))
        self.pipes.discard(pair)

    def _cut(self):
        self.cut_off = True
        for a, b in list(self.pipes):
            a.transport.abort()
            b.transport.abort()

    def cut(self):
        self.loop.call_soon_threadsafe(self._cut)

    def heal(self):
        self.loop.call_soon_threadsafe(setattr, self, "cut_off", False)

    def close(self):
        self.cut()
        self.loop.call_soon_threadsafe(self.loop.stop)


# Fencing of a partition: the owner alone loses NATS (its proxy cut). The
# others take the room over; a command sent to the cut node meanwhile is
# refused (its log cannot store it), never applied there; when NATS comes
# back the cut node relays the new owner's room, its viewer on its stream.
@test
async def an_owner_cut_off_from_nats_alone_gives_the_room_up_and_applies_nothing():
    nats = Nats().start()
    proxy = Cut(nats.port)
    try:
        with contextlib.ExitStack() as stack:
            cut = stack.enter_context(Node(FLOCKD, "--nats", proxy.url, "--node-id", "n1",
                                           "--checkpoint-every", "1"))
            await settled([cut])  # n1 owns the default room before the others come
            others = [stack.enter_context(Node(FLOCKD, "--nats", nats.url, "--node-id", n,
                                               "--checkpoint-every", "1")) for n in NODES[1:]]
            nodes = [cut] + others
            assert (await settled(nodes))["default"] == "n1"
            local = await Client.connect(cut.url, headers_only=True)
            far = await Client.connect(others[0].url, headers_only=True)
            await far.next_snapshot()
            await asyncio.sleep(1.5)  # a checkpoint taken
            base = (await far.next_snapshot())["boid_count"]
            proxy.cut()
            await settled(others, not_on="n1", timeout=15)  # another node took it
            r = await local.command("spawn", n=7, group=0, x=100.0, y=100.0, timeout=10)
            assert r["type"] == "error" and r["code"] == "unavailable", r
            proxy.heal()
            # Every node agrees on the owner again (that node, or on a machine
            # loaded enough for leases to lapse, the next taker: the boids
            # below say whether anything was lost or applied twice).
            await settled(nodes, timeout=20)
            tick = far.snapshots[-1][1]["tick"]
            snap = await far.next_snapshot(after_tick=tick + 2, timeout=10)
            assert snap["boid_count"] == base, (snap["boid_count"], base)
            mine = await local.next_snapshot(after_tick=snap["tick"], timeout=10)
            assert mine["boid_count"] == base, (mine, base)
            # Once its steward has seen the lease gone (a step or two after
            # NATS is back; longer under a sanitizer), it forwards: acked.
            deadline = time.time() + 15
            while (r := await local.command("spawn", n=7, group=0, x=100.0, y=100.0,
                                            timeout=10))["type"] != "ack":
                assert r["code"] == "unavailable" and time.time() < deadline, r
                await asyncio.sleep(0.2)
            await local.close()
            await far.close()
    finally:
        proxy.close()
        nats.stop()
        shutil.rmtree(nats.dir, ignore_errors=True)


# CLUSTER.md §2.1: a room's log is trimmed at checkpoints, but keeps 12 s
# of records, so that a takeover knows a forwarded command sent again.
@test
async def a_rooms_log_is_trimmed_at_checkpoints_but_keeps_12_seconds():
    with cluster(count=1) as (_, nodes):
        n = nodes[0]
        await settled(nodes)
        t0 = time.time()
        trims = f'flockd_cluster_log_trims_total{{node="{NODES[0]}"}}'
        stored = f'flockd_cluster_checkpoints_stored_total{{node="{NODES[0]}"}}'
        while time.time() < t0 + 8:
            await asyncio.sleep(0.5)
            assert n.metric(trims) == 0, (time.time() - t0, n.metric(stored))
        assert n.metric(stored) >= 4  # a checkpoint a second: 12 s not yet reached
        while n.metric(trims) == 0:
            assert time.time() < t0 + 30, n.metric(stored)
            await asyncio.sleep(0.5)
        assert time.time() - t0 >= 11, time.time() - t0


@test
async def an_owner_stopped_with_sigterm_hands_its_room_over_with_nothing_lost():
    with cluster("--checkpoint-every", "60") as (_, nodes):
        owner_id = (await settled(nodes))["default"]
        owner = by_id(nodes, owner_id)
        others = [n for n in nodes if n is not owner]
        c = await Client.connect(others[0].url, headers_only=True)
        await c.next_snapshot()
        r = await c.command("obstacle_add", x=500.0, y=400.0, r=30.0)
        assert r["type"] == "ack", r
        assert owner.terminate(timeout=10) == 0  # its last checkpoint, then its leases go
        new_owner = (await settled(others, not_on=owner_id))["default"]
        assert new_owner != owner_id
        # The command acked just before the stop is in the room that goes on.
        tick = c.snapshots[-1][1]["tick"]
        snap = await c.next_snapshot(after_tick=tick, timeout=10)
        await c.wait_for(lambda: c.snapshots[-1][1]["obstacle_count"] == 1 and
                         c.snapshots[-1][1]["tick"] > tick, 5)
        assert snap["obstacle_count"] == 1, snap
        await c.close()


@test
async def restarting_nats_server_loses_no_room():
    with cluster() as (nats, nodes):
        c = await Client.connect(nodes[0].url)
        assert (await c.join("kept", "player"))["type"] == "ack"
        await settled(nodes, ("default", "kept"))
        # A player of "kept" on another node: relayed frames, forwarded commands.
        far = await Client.connect(nodes[2].url, headers_only=True)
        assert (await far.join("kept", "player"))["type"] == "ack"
        await far.next_snapshot()
        await asyncio.get_running_loop().run_in_executor(None, nats.restart)
        owners = await settled(nodes, ("default", "kept"), timeout=20)
        # Still ticked by a node: the one it had, unless NATS stayed away
        # longer than a lease on a busy machine and another took it over
        # from its last checkpoint.
        assert owners["kept"] in NODES, owners
        for i, n in zip(NODES, nodes):
            await wait_metric(n, f'flockd_cluster_nats_reconnects_total{{node="{i}"}}', 1, 10)
        tick = far.snapshots[-1][1]["tick"]
        await far.next_snapshot(after_tick=tick, timeout=10)
        r = await far.command("obstacle_add", x=100.0, y=100.0, r=10.0, timeout=10)
        assert r["type"] == "ack", r
        snap = await c.next_snapshot(after_tick=r["tick"])
        assert len(snap["obstacles"]) == 1, snap["obstacles"]
        await far.close()
        await c.close()


def availability(client):
    return [m for m in client.messages if m.get("type") == "availability"]


@test
async def losing_nats_keeps_owners_ticking_and_relays_say_the_room_is_unavailable():
    with cluster() as (nats, nodes):
        owner_id = (await settled(nodes))["default"]
        owner = by_id(nodes, owner_id)
        relay = next(n for n in nodes if n is not owner)
        local = await Client.connect(owner.url, headers_only=True)
        far = await Client.connect(relay.url, headers_only=True)
        await far.next_snapshot()
        await local.next_snapshot()
        assert "available" not in far.welcome, far.welcome
        watch = subprocess.Popen([FLOCKCTL, "watch", "--url", relay.url, "--seconds", "60"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            await asyncio.sleep(1.5)
            await asyncio.get_running_loop().run_in_executor(None, nats.stop)
            # The relay's viewer is told, without sending anything.
            await far.wait_for(lambda: availability(far), 5)
            told = availability(far)[0]
            assert told["room"] == "default" and told["available"] is False, told
            assert "NATS" in told["reason"], told
            assert json.loads(relay.http("/healthz")[2])["nats"] == "lost"
            r = await far.command("seek", group=0, x=10.0, y=10.0)
            assert r["type"] == "error" and "unavailable" in r["message"], r
            # A viewer that comes meanwhile reads it in its welcome.
            late = await Client.connect(relay.url, headers_only=True)
            assert late.welcome["available"] is False and late.welcome["reason"], late.welcome
            # The owner ticks on for its own viewer, which is told nothing.
            tick = local.snapshots[-1][1]["tick"]
            await local.next_snapshot(after_tick=tick + 30, timeout=15)  # TSan on a loaded machine
            assert not availability(local), local.messages
            await asyncio.sleep(1.5)  # flockctl watch prints a line of it
            await asyncio.get_running_loop().run_in_executor(None, lambda: nats.start(nats.port))
            await settled(nodes, timeout=20)
            tick = far.snapshots[-1][1]["tick"]
            await far.next_snapshot(after_tick=tick, timeout=10)
            # Both are told that it is back, once.
            for c in (far, late):
                await c.wait_for(lambda c=c: availability(c) and availability(c)[-1]["available"], 5)
            assert [m["available"] for m in availability(far)] == [False, True], availability(far)
            assert [m["available"] for m in availability(late)] == [True], availability(late)
            r = await far.command("seek", group=0, x=10.0, y=10.0)
            assert r["type"] == "ack", r
            await asyncio.sleep(1.5)
        finally:
            watch.terminate()
            out, err = watch.communicate(timeout=10)
        lines = [json.loads(ln) for ln in out.splitlines() if ln.startswith("{")]
        states = [ln["available"] for ln in lines]
        assert False in states and states[-1] is True, lines
        assert all("NATS" in ln["reason"] for ln in lines if not ln["available"]), lines
        assert "room default is unavailable" in err and "available again" in err, err
        await far.close()
        await late.close()
        await local.close()


@test
async def a_relay_whose_owner_sends_no_frames_says_the_room_is_unavailable():
    # Frames of 20,000 boids (100 kB in version 1) are larger than the
    # server takes (max_payload 64 kB): the owner holds its lease but no
    # frame reaches the relays.
    with cluster("--max-room-boids", "20000", nats_config="max_payload: 65536\n") as (_, nodes):
        await settled(nodes)
        maker = await Client.connect(nodes[0].url)
        assert (await maker.join("big", "admin", boids=20000))["type"] == "ack"
        owner_id = (await settled(nodes, ("default", "big")))["big"]
        far_id = next(i for i in NODES if i != owner_id)
        far = await Client.connect(by_id(nodes, far_id).url, headers_only=True)
        assert (await far.join("big", "viewer"))["type"] == "ack"
        await far.wait_for(lambda: availability(far), 2 + 3)
        told = availability(far)[0]
        assert told["room"] == "big" and told["available"] is False, told
        assert owner_id in told["reason"], told
        assert not [s for _, s in far.snapshots[far.welcome_at:]], "a frame came"
        # The lease stayed where it was: nobody took the room over.
        assert (await settled(nodes, ("big",)))["big"] == owner_id
        # Fewer boids: the frames fit again and the room is back.
        r = await maker.command("reset", boids=300)
        assert r["type"] == "ack", r
        await far.wait_for(lambda: availability(far)[-1]["available"], 5)
        await far.next_snapshot()
        await far.close()
        await maker.close()


@test
async def garbled_messages_on_room_subjects_are_rejected_and_counted():
    with cluster() as (nats, nodes):
        owner = (await settled(nodes))["default"]
        relay_id = next(i for i in NODES if i != owner)
        relay = by_id(nodes, relay_id)
        viewer = await Client.connect(relay.url, headers_only=True)
        await viewer.next_snapshot()
        name = f'flockd_cluster_messages_rejected_total{{node="{relay_id}"}}'
        before = relay.metric(name)
        hostile = [b"", b"garbage", b"FKCF" + b"\x02\x00" + b"\xff" * 200,
                   b"FKCF\x02\x00\x00\x00" + struct.pack("<QQQq", 5, 1, 1, 0) + b"\x07" * 156,
                   os.urandom(5000)]
        for h in hostile:
            nats.publish("flockd.room.default.frame", h)
        nats.publish(f"flockd.node.{relay_id}.reply", b"FKCR\x01\x00" + b"\x00" * 50)
        nats.publish(f"flockd.room.default.want", b"FKCW\x02\x00\x00\x00\xff\xff\xff\xff")
        # Tiles for the relay (CLUSTER.md §3.8): garbage, and a header of
        # another grid.
        nats.publish(f"flockd.room.default.tiles.{relay_id}", os.urandom(3000))
        other_grid = b"FKCT\x01\x00\xfe\xfe" + struct.pack("<QQfff", 99, 1, 1.0, 1.0, 1.0)
        nats.publish(f"flockd.room.default.tiles.{relay_id}", other_grid + b"\x01" + bytes(43))
        # Parameters with NaN for every value, for the relay's welcomes.
        nats.publish("flockd.room.default.params",
                     b"FKCP\x01\x00\x0d\x00\x01\x00\x00\x00" + b"\x00" + b"\xff" * 52)
        await wait_metric(relay, name, before + len(hostile) + 4)
        late = await Client.connect(relay.url)
        assert late.welcome["values"]["max_speed"] == 100, late.welcome["values"]
        await late.close()
        # A garbled question for the owner's parameters.
        owner_name = f'flockd_cluster_messages_rejected_total{{node="{owner}"}}'
        owner_before = by_id(nodes, owner).metric(owner_name)
        nats.publish("flockd.room.default.ask", b"FKCA\x01\x00\x07")
        # A good question whose answer would go to a room's subject.
        nats.publish("flockd.room.default.ask", b"FKCA\x01\x00\x00\x00",
                     reply="flockd.room.default.frame")
        # A relay's view of a super-tile past the grid (CLUSTER.md §3.7).
        nats.publish("flockd.room.default.view",
                     b"FKCV\x01\x00\x00\x02\x04\x03\x01\x01x1\x00\x00\x00\x00\xff\xff")
        await wait_metric(by_id(nodes, owner), owner_name, owner_before + 3)
        # The room goes on for the relay's viewer; every node still answers.
        tick = viewer.snapshots[-1][1]["tick"]
        await viewer.next_snapshot(after_tick=tick)
        await settled(nodes)
        await viewer.close()


async def same_view(clients, **view):
    """Sends each client the same view; returns the acks."""
    acks = [await c.command("view", **view) for c in clients]
    for a in acks:
        assert a["type"] == "ack", a
    return acks


@test
async def a_version_3_client_on_a_relay_gets_the_frames_of_one_on_the_owner():
    with cluster(*V3_ROOM, count=2) as (_, nodes):
        owner_id = (await settled(nodes))["default"]
        owner = by_id(nodes, owner_id)
        relay_id = next(i for i in NODES[:2] if i != owner_id)
        relay = by_id(nodes, relay_id)
        clients = [await V3Client.connect(n.url) for n in (owner, relay)]
        for c in clients:  # the relay has relayed a frame (before one its ack says tick 0)
            await c.next_snapshot(timeout=10)
        acks = await same_view(clients, x=1000.0, y=800.0, w=1600.0, h=900.0)
        for k in ("rect", "shift", "sample", "rate"):
            assert acks[0][k] == acks[1][k], acks
        # The relay's ack names the owner's tick it saw last, not its own idle world's.
        assert acks[1]["tick"] > 0 and abs(acks[1]["tick"] - acks[0]["tick"]) < 60, acks
        await asyncio.sleep(0.5)  # the view's frames on both (the relay asked for its tiles)
        start = [len(c.snapshots) for c in clients]

        def alike():
            frames = [{f["tick"]: f for _, f in c.snapshots[s:]} for c, s in zip(clients, start)]
            return frames, sorted(set(frames[0]) & set(frames[1]))
        # 1.5 s at least; on a starved machine (a sanitizer's build) up to 10 s.
        await asyncio.sleep(1.5)
        for _ in range(85):
            if len(alike()[1]) >= 8:
                break
            await asyncio.sleep(0.1)
        frames, common = alike()
        # (30 at 20 snapshots a second; fewer in a sanitizer's build.)
        assert len(common) >= 8, (len(frames[0]), len(frames[1]), len(common))
        # The same boids at the same tick: frame_hash sums the tile hashes
        # of every boid's id, position, heading and group (PROTOCOL.md §12.7).
        for t in common:
            a, b = (dict(frames[k][t]) for k in (0, 1))
            a.pop("kinds"), b.pop("kinds")
            assert a == b, (t, a, b)
        assert frames[1][common[-1]]["rect"] == acks[1]["rect"]
        assert relay.metric(f'flockd_cluster_tiles_received_total{{node="{relay_id}"}}') > 0
        print(f"{len(common)} frames alike at the same ticks on the owner and a relay")
        for c in clients:
            await c.close()


@test
async def a_relay_takes_from_nats_only_the_tiles_its_clients_look_at():
    with cluster(*V3_ROOM, count=2) as (_, nodes):
        owner_id = (await settled(nodes))["default"]
        relay_id = next(i for i in NODES[:2] if i != owner_id)
        relay = by_id(nodes, relay_id)

        def tiles(*names):
            """The relay's tiles metrics `names`, read at once."""
            text = relay.http("/metrics")[2]
            values = [float(line.split()[-1]) for n in names for line in text.splitlines()
                      if line.startswith(f'flockd_cluster_tiles_{n}{{node="{relay_id}"}}')]
            assert len(values) == len(names), names
            return values if len(names) > 1 else values[0]
        c = await V3Client.connect(relay.url)
        grid = c.welcome["stream"]["tiles"]
        ack = (await same_view([c], x=1000.0, y=800.0, w=800.0, h=500.0))[0]
        assert ack["shift"] == 0 and ack["sample"] == 0, ack
        # Its rect, of the 12 x 8 (a view that does not move has no ring).
        wanted = ack["rect"][2] * ack["rect"][3]
        assert wanted < grid["cols"] * grid["rows"] // 6, (wanted, grid)
        deadline = time.time() + 3  # the whole room's tiles linger a second
        while tiles("wanted") != wanted and time.time() < deadline:
            await asyncio.sleep(0.05)
        assert tiles("wanted") == wanted, (tiles("wanted"), wanted)
        await asyncio.sleep(0.3)
        was = tiles("received_total", "parts_received_total")
        for _ in range(10):  # a second, or up to 5 on a starved machine (TSan)
            await asyncio.sleep(0.5)
            now = tiles("received_total", "parts_received_total")
            if now[0] - was[0] >= 5 and _ >= 1:
                break
        msgs, parts = now[0] - was[0], now[1] - was[1]
        assert msgs >= 5 and parts == wanted * msgs, (msgs, parts, wanted)
        assert c.snapshots[-1][1]["rect"] == ack["rect"]
        # Its client gone, the relay asks for no tile after a second.
        await c.close()
        deadline = time.time() + 3
        while tiles("wanted") and time.time() < deadline:
            await asyncio.sleep(0.05)
        assert tiles("wanted") == 0
        await asyncio.sleep(0.3)
        parts = tiles("parts_received_total")
        await asyncio.sleep(0.5)
        assert tiles("parts_received_total") == parts


@test
async def after_the_owner_dies_version_3_clients_resume_on_a_key_frame():
    with cluster(*V3_ROOM) as (_, nodes):
        owner_id = (await settled(nodes))["default"]
        owner = by_id(nodes, owner_id)
        others = [n for n in nodes if n is not owner]
        clients = [await V3Client.connect(n.url) for n in others]
        await same_view(clients, x=1000.0, y=800.0, w=1600.0, h=900.0)
        await asyncio.sleep(1.5)  # a checkpoint taken
        for c in clients:  # the views' frames are deltas (a while under TSan on a loaded machine)
            await c.wait_for(lambda c=c: c.snapshots and "delta" in c.snapshots[-1][1]["kinds"], 10)
        t_kill = time.time()
        before = [len(c.snapshots) for c in clients]
        owner.kill()
        counts = []
        for c, b in zip(clients, before):
            await c.wait_for(lambda c=c, b=b: len(c.snapshots) > b + 8 and
                             c.snapshots[-1][0] > t_kill + 1.0, 10)
            # The new owner's first frame is the first whose number jumps
            # past the last relayed one's by more than the bases a client
            # holds (room_relay.c: a new owner continues the numbers so;
            # frames in flight at the kill, the dead owner's, may come
            # first): every part a key, none on a base of the dead owner's
            # frames; then deltas on it again.
            seq = [f["seq"] for _, f in c.snapshots]
            k = next(i for i in range(b, len(seq)) if seq[i] - seq[i - 1] > 4)
            counts.append(k)
            first = c.snapshots[k][1]
            assert first["kinds"] and "delta" not in first["kinds"], first
            assert "delta" in c.snapshots[-1][1]["kinds"], c.snapshots[-1][1]
        took = max(c.snapshots[k][0] for c, k in zip(clients, counts)) - t_kill
        print(f"failover: version 3 key frames {took:.2f} s after kill -9")
        for c in clients:
            await c.close()


@test
async def an_rts_spectator_on_a_relay_sees_what_one_on_the_owner_sees_as_late():
    # With an admin token, clients on loopback are viewers, not admins.
    delay = ("--spectator-delay", "1", "--admin-token", "t0k")
    with cluster(*V3_ROOM, *delay, count=2) as (_, nodes):
        await settled(nodes)
        home = nodes[0]  # a player's rts room stays on its node
        player = await Client.connect(home.url)
        assert (await player.join("war", "player", mode="rts", name="ann"))["type"] == "ack"
        await settled(nodes, ("default", "war"))
        admin = await Client.connect(home.url)
        assert (await admin.join("war", "admin", token="t0k"))["type"] == "ack"
        r = await admin.command("spawn", n=100, group=2, x=1000.0, y=800.0, spread=600.0)
        assert r["type"] == "ack", r
        await asyncio.sleep(1.2)  # its first checkpoint: the relay's copy is an rts room
        clients = [await V3Client.connect(n.url) for n in nodes]
        for c in clients:
            assert (await c.join("war", "viewer"))["type"] == "ack"
            assert c.welcome["stream"]["audience"] == "delayed", c.welcome["stream"]
        await asyncio.sleep(1.8)  # a second of delay, then the whole room's frames on both
        start = [len(c.snapshots) for c in clients]
        deadline = time.time() + 10  # five frames both got (a sanitizer's are fewer a second)
        while True:
            await asyncio.sleep(0.2)
            frames = [{f["tick"]: f for _, f in c.snapshots[s:]} for c, s in zip(clients, start)]
            common = sorted(set(frames[0]) & set(frames[1]))
            if len(common) >= 5 or time.time() > deadline:
                break
        assert len(common) >= 5, (len(frames[0]), len(frames[1]), len(common))
        for t in common:
            a, b = (dict(frames[k][t]) for k in (0, 1))
            a.pop("kinds"), b.pop("kinds")
            assert a == b and a["flags"] & 8, (t, a, b)  # the same, delayed
        last = frames[1][common[-1]]
        assert any(k != "empty" for k in last["kinds"]), last  # the boids spawned
        for c in clients + [player, admin]:
            await c.close()


if __name__ == "__main__":
    SUITE.main(skip_args=2)
