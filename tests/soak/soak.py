#!/usr/bin/python3
"""Soak: one flockd under mixed load for DURATION seconds; its resident
memory, open descriptors and threads must stay flat once it has warmed up.

Usage: soak.py FLOCKD_BINARY [--seconds N] [--warmup N] [--bound-kib N]
               [--every N] [--csv FILE] [--svg FILE] [--seed N] [--keep]

flockd runs as in production, over TLS (a self-signed pair made with
openssl), with --checkpoint-dir and --record (temporary folders),
checkpoints every second, rooms expiring 2 s after their last member and
RTS teams waiting 1 s for their player. Concurrently, until the time is up:

- churn: clients connect (protocol 1, 2 or 3), join rooms (sandbox, rts,
  one never named before, the default room) with any role, send a few
  commands, hop to another room, and leave by a clean close or by
  dropping the connection; others drop a connection before or during the
  TLS handshake;
- at the rate limit: admins send a mix of commands (seek, obstacles,
  params, spawn and despawn, stats, ping) at the welcome's `limits.rate`
  (PROTOCOL.md §5.6), every one acked;
- past it: a client sends a burst of `burst` + 50 pings, is refused
  `rate_limited` past its bucket and, once it backs off, answered again;
  another keeps going and is closed with 1008;
- slow consumers (a 4 KiB receive buffer): some stop reading for 2-5 s
  (under --stale-timeout, 10 s) and must be served again after; some for
  15 s, closed by the stale rule (1008, or 1006 when the reset of the
  socket it left unread, 5 s later, took the close frame: §7.2); some read
  one message every 0.1-0.25 s for 20 s (a sixth to a half of the
  stream) and must stay;
- viewers with views (protocol 3, the client library): a `view` every
  1-4 s, sometimes the whole world; whole-room viewers (protocols 1, 2, 3)
  stay connected throughout and must get frames that decode;
- flockwars matches (server/scripts) in rooms a join creates, played to
  their end by two players;
- SIGHUP every 10 s, with the other certificate pair and a new version of
  the room script installed: every service thread must reload the pair,
  the scripts must be read again, a new connection must get the new
  certificate.

Every few seconds the sampler reads flockd's VmRSS and Threads
(/proc/PID/status), its open descriptors (/proc/PID/fd) and its clients,
rooms and heap in use (/metrics: what malloc has handed out). The first
quarter of the run (the first 5 minutes of an hour; at least 30 s) is the
warm-up. At its end and at the end of the run the load stops and the soak
waits for every client and every room but the default one to be gone:
those two quiet readings bound the measured part
(tests/soak/soak_report.py defines its figures).

It fails (exit 1) when the heap in use grew by more than the bound
between the quiet readings, when the RSS drift over the measured part
(the growth a least-squares line through its samples under load gives
it) exceeds the bound in a run of 10 minutes or more, when descriptors or
threads grew between the quiet readings, when flockd exits or writes a
sanitizer report, or when a client that keeps the rules got anything it
should not: an error reply, a missing reply, a closed connection, frames
that stop or do not decode.

The bound is 2 MiB (--bound-kib) for every length of run. The quiet
readings are the same state of flockd, so the heap's growth between them
is a leak's whole size, whatever the load did meanwhile: in the 3 minutes
of make soak-short, about 3 KiB a connection, 45 bytes a command or 170
KiB a SIGHUP; in the hour (make soak), about 140 bytes a connection. RSS
also follows what glibc's heaps keep free after the load's peaks, which a
short run is still meeting (its line has read +0.1 to +2.4 MiB with the
heap +0.1 to +0.3 MiB): the hour judges it, where 2 MiB is a climb of 0.6
KiB a second. A sanitizer build's memory is printed, not judged (its
allocator is not glibc's, ASan's quarantine holds freed memory, and
LeakSanitizer reports leaks at exit).

At the end it prints the samples as CSV (time, rss_kib, heap_kib, fds,
threads, clients, rooms), what the load did, the figures and PASS or
FAIL; --csv and --svg write the samples and a plot of them to files.
"""

import argparse
import asyncio
import collections
import itertools
import json
import os
import random
import resource
import shutil
import signal
import socket
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [os.path.join(ROOT, "tests", "integration"), os.path.join(ROOT, "client", "python")]

import websockets  # noqa: E402

import flockd  # noqa: E402  the client library, client/python
import soak_report  # noqa: E402
from flockd_harness import (SANITIZER_REPORTS, Flockd, der_of, install_pair,  # noqa: E402
                            sanitizer_of, self_signed_pair, served_certificate, unverified)

STALE_S = 10  # --stale-timeout: a client that takes no snapshot this long is closed
NET_THREADS = 2
SANDBOXES = [f"sb{i}" for i in range(6)]
RTS_ROOMS = ["rts0", "rts1"]
SIGHUP_EVERY_S = 10
REPLY_S = 15  # how long a reply may take on a loaded machine
RAMP_S = 10  # how long the load takes to reach its level again after a quiet reading
SCRIPT = "flockwars"


def server_args(tmp):
    """flockd's settings for the soak: TLS, checkpoints, recording, short
    expiry and grace, two tick and two service threads."""
    return ["--tls-cert", os.path.join(tmp, "live.crt"), "--tls-key", os.path.join(tmp, "live.key"),
            "--checkpoint-dir", os.path.join(tmp, "ckpt"), "--checkpoint-every", "1",
            "--record", os.path.join(tmp, "rec"), "--scripts-dir", os.path.join(tmp, "scripts"),
            "--room-expiry", "2", "--grace", "1", "--max-rooms", "48", "--boids", "600",
            "--capacity", "4096", "--workers", "2", "--net-threads", str(NET_THREADS),
            "--stale-timeout", str(STALE_S)]


def prepare(tmp):
    """The folders, two certificate pairs (a and b; a installed as live)
    and the scripts folder with the sample script."""
    for sub in ("ckpt", "rec", "scripts"):
        os.makedirs(os.path.join(tmp, sub))
    pairs = [self_signed_pair(tmp, "a", cn="first"), self_signed_pair(tmp, "b", cn="second")]
    install_pair(pairs[0], os.path.join(tmp, "live.crt"), os.path.join(tmp, "live.key"))
    write_script(tmp, 0)
    return pairs


def write_script(tmp, version):
    """The sample script with a comment naming this version: a new text,
    which a reload takes (replaced at once, never read half written)."""
    with open(os.path.join(ROOT, "server", "scripts", SCRIPT + ".lua")) as f:
        text = f.read()
    path = os.path.join(tmp, "scripts", SCRIPT + ".lua")
    with open(path + ".tmp", "w") as f:
        f.write(f"{text}\n-- soak version {version}\n")
    os.replace(path + ".tmp", path)


# ---- one raw connection ---------------------------------------------------------------------

class Conn:
    """A WebSocket connection whose reading the soak controls: clearing
    `readable` stops reading (the socket fills), `read_gap` slows it to one
    message per that many seconds. Counts frames, keeps the welcome and
    the phases of the room-wide game messages, routes replies to their commands."""

    def __init__(self, ws):
        self.ws = ws
        self.frames = 0
        self.welcome, self.welcomes = None, 0
        self.phases = []  # of the room-wide game messages, in order
        self.pending = {}
        self.ids = itertools.count(1)
        self.readable = asyncio.Event()
        self.readable.set()
        self.read_gap = 0.0
        self.reader = asyncio.ensure_future(self._read())

    @classmethod
    async def open(cls, run, proto="flock.v1", rcvbuf=None):
        """Connects and waits for the welcome; rcvbuf: a receive buffer of
        this size and the library's own buffering cut to a message."""
        kw = {}
        if rcvbuf:
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
            sock.setblocking(False)
            try:
                await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", run.d.port))
            except OSError:
                sock.close()
                raise
            kw = dict(sock=sock, server_hostname="localhost", max_queue=1, read_limit=4096)
        ws = await websockets.connect(run.d.url, ssl=run.tls, subprotocols=[proto],
                                      max_size=None, compression=None, ping_interval=None,
                                      open_timeout=REPLY_S, close_timeout=3, **kw)
        c = cls(ws)
        await c.until(lambda: c.welcomes, REPLY_S, "the welcome")
        run.count("connections")
        return c

    async def _read(self):
        try:
            while True:
                await self.readable.wait()
                msg = await self.ws.recv()
                if self.read_gap:
                    await asyncio.sleep(self.read_gap)
                self._take(msg)
        except websockets.ConnectionClosed:
            pass
        for fut in self.pending.values():
            if not fut.done():
                fut.set_result(None)
        self.pending.clear()

    def _take(self, msg):
        if isinstance(msg, bytes):
            self.frames += 1
            return
        m = json.loads(msg)
        kind = m.get("type")
        if kind == "welcome":
            self.welcome, self.welcomes = m, self.welcomes + 1
        elif kind == "game" and "team" not in m:
            self.phases.append(m.get("state", {}).get("phase"))
        elif kind in ("ack", "error"):
            fut = self.pending.pop(m.get("id"), None)
            if fut is not None and not fut.done():
                fut.set_result(m)

    @property
    def closed(self):
        return self.reader.done()

    async def until(self, cond, timeout, what):
        deadline = time.monotonic() + timeout
        while not cond():
            if self.closed:
                raise ConnectionError(f"closed ({self.ws.close_code}) waiting for {what}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {what} within {timeout} s")
            await asyncio.sleep(0.05)

    async def send(self, cmd, **args):
        """Sends a command; returns a future of its reply (None: the
        connection closed first)."""
        i = next(self.ids)
        fut = asyncio.get_running_loop().create_future()
        self.pending[i] = fut
        await self.ws.send(json.dumps({"cmd": cmd, "id": i, **args}))
        return fut

    async def ask(self, cmd, **args):
        return await asyncio.wait_for(await self.send(cmd, **args), REPLY_S)

    async def join(self, room, role, **args):
        """The join's reply; after an ack, once the new room's welcome came."""
        seen = self.welcomes
        r = await self.ask("join", room=room, role=role, **args)
        if r and r["type"] == "ack":
            await self.until(lambda: self.welcomes > seen, REPLY_S, "the new room's welcome")
        return r

    async def close(self):
        await self.ws.close()
        await asyncio.wait([self.reader], timeout=5)

    async def drop(self):
        """Ends the connection without a close frame."""
        self.ws.transport.abort()
        await asyncio.wait([self.reader], timeout=5)
        self.reader.cancel()


# ---- the run: its flockd, its findings, its samples ----------------------------------------

class Run:
    """What the actors share: flockd, the client TLS context, what went
    unexpectedly, counts of what the load did, the samples."""

    def __init__(self, d, tmp, pairs, seed):
        self.d, self.tmp, self.pairs = d, tmp, pairs
        self.tls = unverified()
        self.rng = random.Random(seed)
        self.t0 = time.monotonic()
        self.problems = []
        self.counts = collections.Counter()
        self.samples = []
        self.loaded = None  # (from, to): when the measured part's load ran
        self.fresh = itertools.count()
        self.over = False  # flockd is gone: stop
        self.only = None  # the kinds of actor to run (None: all)
        self.stderr_seen = 0

    def now(self):
        return time.monotonic() - self.t0

    def count(self, what, n=1):
        self.counts[what] += n

    def unexpected(self, who, what):
        line = f"{self.now():7.1f} s  {who}: {what}"
        self.problems.append(line)
        print("UNEXPECTED " + line, flush=True)

    def acked(self, who, what, reply):
        """Whether reply is an ack; anything else is unexpected."""
        if reply is not None and reply["type"] == "ack":
            self.count("commands acked")
            return True
        self.unexpected(who, f"{what}: " + ("the connection closed before its reply"
                                            if reply is None else json.dumps(reply)))
        return False

    def still_open(self, who, c):
        if c.closed:
            self.unexpected(who, f"the connection was closed ({c.ws.close_code} "
                            f"{c.ws.close_reason!r})")
            return False
        return True


async def keep_going(run, who, until, body):
    """Runs body(run, who, until) again and again until `until`, but starts
    no cycle that would run past it by much (LONG_CYCLES); an exception is
    unexpected, and the actor goes on after a second."""
    while time.monotonic() < until and not run.over:
        if left(until) < LONG_CYCLES.get(body, 0):
            await asyncio.sleep(left(until))
            return
        try:
            await body(run, who, until)
        except Exception as e:  # report it and go on
            mine = [f for f in traceback.extract_tb(e.__traceback__) if f.filename == __file__]
            where = f" (soak.py line {mine[-1].lineno}, in {mine[-1].name})" if mine else ""
            run.unexpected(who, f"{type(e).__name__}: {e}{where}")
            await asyncio.sleep(1)


def left(until):
    return max(0.0, until - time.monotonic())


# ---- the actors: one cycle each -------------------------------------------------------------

def pick_room(run):
    """A room and the join's arguments: a sandbox of a few, an rts room, one
    never named before, or the default room; any role."""
    rng = run.rng
    role = rng.choice(["viewer", "player", "player", "admin"])
    x = rng.random()
    if x < 0.45:
        return rng.choice(SANDBOXES), dict(role=role, boids=rng.randrange(50, 300))
    if x < 0.65:
        return rng.choice(RTS_ROOMS), dict(role=role, mode="rts")
    if x < 0.9:
        return f"tmp{next(run.fresh)}", dict(role=role, boids=rng.randrange(20, 200))
    return "default", dict(role=role)


async def light_commands(run, who, c, role, mode):
    """A few commands a member of this role may send; each must be acked."""
    for _ in range(run.rng.randrange(4)):
        if role == "viewer" or mode == "rts" or run.rng.random() < 0.5:
            cmd, args = run.rng.choice([("ping", {}), ("stats", {})])
        else:
            cmd, args = "seek", dict(group=run.rng.randrange(4), x=100.0, y=100.0)
        if not run.acked(who, cmd, await c.ask(cmd, **args)):
            return


async def half_handshake(run):
    """A connection dropped before TLS, or during the HTTP upgrade."""
    if run.rng.random() < 0.5:
        _, w = await asyncio.open_connection("127.0.0.1", run.d.port)
    else:
        _, w = await asyncio.open_connection("127.0.0.1", run.d.port, ssl=run.tls,
                                             server_hostname="localhost")
        w.write(b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n")
        await w.drain()
    w.transport.abort()
    run.count("connections dropped in the handshake")


async def churn(run, who, until):
    if run.rng.random() < 0.1:
        await half_handshake(run)
        return
    c = await Conn.open(run, run.rng.choice(["flock.v1", "flock.v2", "flock.v3"]))
    try:
        for _ in range(run.rng.choice([1, 1, 2])):
            room, args = pick_room(run)
            if not run.acked(who, f"join {room} {args}", await c.join(room, **args)):
                return
            run.count("joins")
            await light_commands(run, who, c, args["role"], args.get("mode"))
            await asyncio.sleep(min(left(until), run.rng.uniform(0.2, 2.5)))
        run.still_open(who, c)
    finally:
        if run.rng.random() < 0.5:
            await c.close()
        else:
            await c.drop()
            run.count("connections dropped without a close")


def hot_command(rng, state, world):
    """One command of the at-limit mix; state: the obstacles and spawns out."""
    x, y = rng.uniform(0, world["width"]), rng.uniform(0, world["height"])
    pick = rng.random()
    if pick < 0.1 and state["obstacles"]:
        return "obstacle_remove", dict(obstacle=state["obstacles"].pop())
    if pick < 0.2 and state["adding"] + len(state["obstacles"]) < 6:
        state["adding"] += 1
        return "obstacle_add", dict(x=x, y=y, r=10.0)
    if pick < 0.3:
        state["spawned"] = not state["spawned"]
        return ("spawn", dict(n=5, group=2, x=x, y=y)) if state["spawned"] else \
            ("despawn", dict(n=5, group=2))
    if pick < 0.4:
        return "params", dict(group=rng.randrange(4), w_alignment=rng.uniform(0.5, 1.5))
    if pick < 0.6:
        return "seek", dict(group=rng.randrange(4), x=x, y=y)
    if pick < 0.7:
        return "seek_clear", dict(group=rng.randrange(4))
    return rng.choice([("ping", {}), ("stats", {})])


async def at_limit(run, who, until):
    """An admin of room `hot` sends commands at the welcome's rate for 30-90
    s (catching up at most a quarter of its burst after a stall); every
    command must be acked."""
    c = await Conn.open(run)
    if not run.acked(who, "join hot", await c.join("hot", "admin", boids=200)):
        await c.close()
        return
    rate, burst = c.welcome["limits"]["rate"], c.welcome["limits"]["burst"]
    state = {"obstacles": [], "adding": 0, "spawned": False}
    out = set()

    def settle(cmd, fut):
        out.discard(fut)
        r = fut.result()
        if run.acked(who, cmd, r) and cmd == "obstacle_add":
            state["obstacles"].append(r["obstacle"])
        if cmd == "obstacle_add":
            state["adding"] -= 1

    end = time.monotonic() + min(left(until), run.rng.uniform(30, 90))
    t0, sent = time.monotonic(), 0
    while time.monotonic() < end and not c.closed:
        lag = time.monotonic() - (t0 + sent / rate)
        if lag > burst / 4 / rate:
            t0 += lag
        elif lag < 0:
            await asyncio.sleep(-lag)
        cmd, args = hot_command(run.rng, state, c.welcome["world"])
        fut = await c.send(cmd, **args)
        sent += 1
        out.add(fut)
        fut.add_done_callback(lambda f, cmd=cmd: settle(cmd, f))
        if len(out) > 64:
            await asyncio.wait(list(out), timeout=REPLY_S, return_when=asyncio.FIRST_COMPLETED)
    if out:
        await asyncio.wait(list(out), timeout=REPLY_S)
    if out or not run.still_open(who, c):
        run.unexpected(who, f"{len(out)} commands got no reply")
    run.count("commands sent at the rate limit", sent)
    for obstacle in state["obstacles"]:  # they would outlive it (§5.6) and fill the room
        run.acked(who, "obstacle_remove", await c.ask("obstacle_remove", obstacle=obstacle))
    await c.close()


async def over_limit(run, who, until):
    """Past the rate limit: a burst of `burst` + 50 pings, refused
    rate_limited past the bucket, then answered again after a pause; or
    pings without end, refused, then closed with 1008 (§5.6)."""
    c = await Conn.open(run)
    if not run.acked(who, "join hot", await c.join("hot", "player", boids=200)):
        await c.close()
        return
    burst = c.welcome["limits"]["burst"]
    if run.rng.random() < 0.5:
        futs = [await c.send("ping") for _ in range(burst + 50)]
        replies = await asyncio.wait_for(asyncio.gather(*futs), REPLY_S * 2)
        refused = tally(run, who, replies)
        if refused == 0:
            run.unexpected(who, f"{burst + 50} pings at once, none refused")
        await asyncio.sleep(2.5)  # the bucket refills
        run.acked(who, "ping after backing off", await c.ask("ping"))
        await c.close()
        return
    futs = []
    try:
        while not c.closed and len(futs) < 50 * burst:
            futs += [await c.send("ping") for _ in range(20)]
            await asyncio.sleep(0.01)
    except websockets.ConnectionClosed:
        pass
    await asyncio.wait([c.reader], timeout=REPLY_S)
    tally(run, who, [f.result() for f in futs if f.done()])
    if c.ws.close_code != 1008:
        run.unexpected(who, f"kept past the rate limit: closed with {c.ws.close_code}, not 1008")
    else:
        run.count("closed 1008 past the rate limit")
    await c.close()


def tally(run, who, replies):
    """Counts acks and rate_limited refusals; anything else is unexpected.
    Returns the refusals."""
    kinds = collections.Counter("ack" if r and r["type"] == "ack" else
                                r["code"] if r else "none" for r in replies)
    run.count("commands acked", kinds.pop("ack", 0))
    refused = kinds.pop("rate_limited", 0)
    run.count("refused rate_limited", refused)
    kinds.pop("none", None)  # sent after the close: no reply is due
    if kinds:
        run.unexpected(who, f"past the rate limit, refusals other than rate_limited: {dict(kinds)}")
    return refused


async def slow_consumer(run, who, until):
    """A viewer of room `big` (3,000 boids, 15 KB frames, 20 a second) on a
    4 KiB receive buffer that stops reading for a while, or reads one
    message every 0.1-0.25 s. Slower than that, its frames would come out
    of the server's send buffer (about 400 KB here) more than STALE_S late,
    and the stale rule closes it as it closes a stalled one."""
    c = await Conn.open(run, rcvbuf=4096)
    if not run.acked(who, "join big", await c.join("big", "viewer", boids=3000)):
        await c.close()
        return
    await asyncio.sleep(2)
    kind = run.rng.choice(["stall", "stall", "stall_long", "slow"])
    if kind == "slow":
        c.read_gap = run.rng.uniform(0.1, 0.25)
        await asyncio.sleep(min(left(until), 20))
        c.read_gap = 0
    else:
        c.readable.clear()
        await asyncio.sleep(STALE_S + 5 if kind == "stall_long" else run.rng.uniform(2, 5))
        c.readable.set()
    frames = c.frames
    reply = None if c.closed else await c.ask("ping")
    if kind == "stall_long" and reply is None and c.ws.close_code in (1006, 1008):
        # evicted (1008); 1006 when its close frame was lost to the reset
        # that closed the socket the client had not read
        run.count(f"slow consumers closed {c.ws.close_code}")
    elif run.acked(who, f"ping after {kind} (close code {c.ws.close_code})", reply):
        await c.until(lambda: c.frames > frames, REPLY_S, "frames after reading again")
        run.count(f"slow consumers served again ({kind})")
    await (c.close() if run.rng.random() < 0.5 else c.drop())


async def viewer_with_views(run, who, until):
    """A protocol 3 viewer (the client library) that moves its view every
    1-4 s for 20-60 s; every view acked, frames throughout."""
    room = run.rng.choice(["default", "hot", "big", SANDBOXES[0]])
    c = await flockd.connect_async(run.d.url, room=room, role="viewer", protocol=3, ssl=run.tls,
                                   reconnect=False, timeout=REPLY_S, connect_timeout=REPLY_S)
    run.count("connections")
    try:
        world = c.welcome.world
        end = time.monotonic() + min(left(until), run.rng.uniform(20, 60))
        while time.monotonic() < end and not c.closed:
            w = run.rng.uniform(50, world.width)
            h = run.rng.uniform(50, world.height)
            view = dict(x=0, y=0, w=world.width, h=world.height) if run.rng.random() < 0.15 \
                else dict(x=run.rng.uniform(0, world.width - w),
                          y=run.rng.uniform(0, world.height - h), w=w, h=h)
            await c.view(**view, px=run.rng.choice([320, 800, 1600]),
                         budget=run.rng.choice([20000, 200000, 2000000]))
            run.count("views acked")
            await asyncio.sleep(run.rng.uniform(1, 4))
        if c.frames == 0 or c.refused_frames or c.closed:
            run.unexpected(who, f"in {room}: {c.frames} frames, {c.refused_frames} refused, "
                           f"closed: {c.closed}")
    finally:
        await c.close()


async def watcher(run, who, until, protocol, room, boids):
    """A whole-room viewer (the client library) connected throughout: frames
    must keep coming (no gap of STALE_S) and decode."""
    c = await flockd.connect_async(run.d.url, room=room, role="viewer", boids=boids,
                                   protocol=protocol, ssl=run.tls, reconnect=False,
                                   timeout=REPLY_S, connect_timeout=REPLY_S)
    run.count("connections")
    try:
        seen, at = c.frames, time.monotonic()
        while time.monotonic() < until:
            await asyncio.sleep(1)
            if c.closed:
                run.unexpected(who, "its connection closed")
                return
            if c.frames > seen:
                seen, at = c.frames, time.monotonic()
            elif time.monotonic() - at > STALE_S:
                run.unexpected(who, f"no frame for {STALE_S} s")
                at = time.monotonic()
        if c.refused_frames:
            run.unexpected(who, f"{c.refused_frames} frames did not decode")
        run.count("frames to the whole-room viewers", c.frames)
    finally:
        await c.close()


def watchers():
    return [(f"watcher-v{p}", lambda r, w, u, p=p, room=room, b=b: watcher(r, w, u, p, room, b))
            for p, room, b in ((1, "hot", 200), (2, "default", None), (3, "big", 3000))]


async def match(run, who, until):
    """A flockwars match in a room a join creates: an admin sets 30 units a
    team and a time limit of 5-10 s, two players ready up, a viewer sees
    the match end; then everyone leaves."""
    room = f"war{next(run.fresh)}"
    game = dict(mode="rts", script=SCRIPT)
    conns = []
    try:
        admin = await Conn.open(run)
        conns.append(admin)
        if not run.acked(who, "create", await admin.join(room, "admin", teams=2, **game)):
            return
        run.acked(who, "units", await admin.ask("game", action="units", n=30))
        limit = run.rng.randrange(5, 11)
        run.acked(who, "time_limit", await admin.ask("game", action="time_limit", seconds=limit))
        for role in ("player", "player", "viewer"):
            conns.append(await Conn.open(run))
            if not run.acked(who, f"join as {role}", await conns[-1].join(room, role, **game)):
                return
        for p in conns[1:3]:
            run.acked(who, "ready", await p.ask("game", action="ready"))
        viewer = conns[3]
        try:
            await viewer.until(lambda: "ended" in viewer.phases, limit + 60, "the match's end")
        except TimeoutError as e:  # what each saw, to tell a match that never began
            seen = "; ".join(f"{c.frames} frames, phases {c.phases}" for c in conns)
            raise TimeoutError(f"{e} in {room} (admin, players, viewer: {seen})") from None
        run.count("matches played")
    finally:
        for c in conns:
            await (c.drop() if run.rng.random() < 0.3 else c.close())


def lines_with(lines, start, text):
    return [ln for ln in lines[start:] if text in ln]


async def sighup(run, who, until):
    """After SIGHUP_EVERY_S: the other certificate pair and a new version of
    the script installed, SIGHUP; every service thread reloads the pair,
    the scripts are read again, a new connection gets the new certificate."""
    await asyncio.sleep(min(left(until), SIGHUP_EVERY_S))
    if time.monotonic() >= until:
        return
    n = run.counts["SIGHUPs"] + 1
    pair = run.pairs[n % 2]
    install_pair(pair, os.path.join(run.tmp, "live.crt"), os.path.join(run.tmp, "live.key"))
    write_script(run.tmp, n)
    out, err = len(run.d.stdout), len(run.d.stderr)
    run.d.proc.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + REPLY_S
    while (len(lines_with(run.d.stdout, out, "TLS certificate")) < NET_THREADS
           or not lines_with(run.d.stderr, err, "room scripts read again")):
        if time.monotonic() > deadline:
            run.unexpected(who, f"SIGHUP {n}: not every reload said so: "
                           f"{run.d.stdout[out:] + run.d.stderr[err:]}")
            return
        await asyncio.sleep(0.1)
    bad = [ln for ln in run.d.stderr[err:] if "failed" in ln or "refused" in ln
           or "could not" in ln]
    if bad:
        run.unexpected(who, f"SIGHUP {n}: {bad}")
    der = await asyncio.get_running_loop().run_in_executor(None, served_certificate, run.d.port)
    if der != der_of(pair[0]):
        run.unexpected(who, f"SIGHUP {n}: a new connection got the old certificate")
    run.count("SIGHUPs")


# About how long the cycles that do not follow `until` take (load()
# waits up to 120 s for the last ones).
LONG_CYCLES = {slow_consumer: 2 + STALE_S + 5 + 3, match: 3 + 10 + 5}
ACTORS = ([(f"churn{i}", churn) for i in range(6)]
          + [(f"at-limit{i}", at_limit) for i in range(2)]
          + [("over-limit", over_limit)]
          + [(f"slow{i}", slow_consumer) for i in range(3)]
          + [(f"views{i}", viewer_with_views) for i in range(3)]
          + [("match", match), ("sighup", sighup)])


# ---- sampling and the phases ----------------------------------------------------------------

def proc_status(pid):
    """(VmRSS in KiB, threads, open descriptors) of process pid."""
    rss = threads = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
            elif line.startswith("Threads:"):
                threads = int(line.split()[1])
    return rss, threads, len(os.listdir(f"/proc/{pid}/fd"))


def gauges(d):
    """flockd_clients, flockd_rooms and flockd_heap_in_use_bytes (in KiB; 0
    where flockd's malloc is not glibc's) from /metrics."""
    values = {"flockd_heap_in_use_bytes": 0}
    for line in d.http("/metrics")[2].splitlines():
        name, _, value = line.partition(" ")
        if name in ("flockd_clients", "flockd_rooms", "flockd_heap_in_use_bytes"):
            values[name] = int(float(value))
    heap_kib = values["flockd_heap_in_use_bytes"] // 1024
    return values["flockd_clients"], values["flockd_rooms"], heap_kib


def take_sample(run):
    """One sample; None (and run.over) once flockd has exited."""
    if run.d.proc.poll() is not None:
        run.unexpected("flockd", f"exited with status {run.d.proc.returncode}")
        run.over = True
        return None
    news, run.stderr_seen = run.d.stderr[run.stderr_seen:], len(run.d.stderr)
    for line in news:
        if any(r in line for r in SANITIZER_REPORTS):
            run.unexpected("flockd", f"sanitizer report: {line.strip()}")
    try:
        rss, threads, fds = proc_status(run.d.proc.pid)
        clients, rooms, heap = gauges(run.d)
    except (OSError, ValueError, KeyError) as e:
        run.unexpected("sampler", f"{type(e).__name__}: {e}")
        return None
    return dict(time=run.now(), rss_kib=rss, heap_kib=heap, fds=fds, threads=threads,
                clients=clients, rooms=rooms)


async def sample(run):
    s = await asyncio.get_running_loop().run_in_executor(None, take_sample, run)
    if s:
        run.samples.append(s)
    return s


async def sampler(run, every):
    while not run.over:
        await sample(run)
        await asyncio.sleep(every)


def kind_of(who):
    """An actor's kind: its name without its number (churn, views, watcher-v...)."""
    return who.rstrip("0123456789")


async def load(run, until):
    """Every actor (of the kinds run.only, if given) until `until`, then
    until each has finished its cycle."""
    actors = [(who, body) for who, body in ACTORS + watchers()
              if not run.only or kind_of(who) in run.only]
    tasks = [asyncio.ensure_future(keep_going(run, who, until, body)) for who, body in actors]
    _, pending = await asyncio.wait(tasks, timeout=left(until) + 120)
    for t in pending:
        t.cancel()
    if pending and not run.over:
        run.unexpected("soak", f"{len(pending)} actors still busy 120 s after the load's end")


async def quiet(run, label):
    """Waits for every client and every room but the default one to go;
    then the quiet reading: the median RSS and the fewest descriptors and
    threads of five readings over two seconds."""
    deadline = time.monotonic() + 60
    while not run.over:
        s = await sample(run)
        if s and s["clients"] == 0 and s["rooms"] == 1:
            break
        if time.monotonic() > deadline:
            run.unexpected("soak", f"{label}: clients and rooms left 60 s after the load: {s}")
            break
        await asyncio.sleep(0.5)
    readings = []
    for _ in range(5):
        await asyncio.sleep(0.5)
        s = await sample(run)
        if s:
            readings.append(s)
    if not readings:
        return None
    q = dict(readings[-1])
    for key in ("rss_kib", "heap_kib"):
        q[key] = sorted(r[key] for r in readings)[len(readings) // 2]
    q["fds"] = min(r["fds"] for r in readings)
    q["threads"] = min(r["threads"] for r in readings)
    print(f"{run.now():7.1f} s  quiet reading at the {label}: rss {q['rss_kib']} KiB, "
          f"heap in use {q['heap_kib']} KiB, "
          f"fds {q['fds']}, threads {q['threads']}", flush=True)
    return q


async def soak(run, seconds, warmup, every):
    """The warm-up's load, a quiet reading, the measured part's load, a
    quiet reading: (start, end), or None when flockd is gone."""
    task = asyncio.ensure_future(sampler(run, every))
    await load(run, run.t0 + warmup)
    start = await quiet(run, "warm-up's end")
    # Judged from when the load is back at its level (rooms made, clients
    # connected, RAMP_S) to its planned end, not while it winds down.
    run.loaded = (run.now() + RAMP_S, seconds)
    await load(run, run.t0 + seconds)
    end = await quiet(run, "end")
    run.over = True
    await task
    return (start, end) if start and end else None


def totals(d):
    """flockd's own counts of the run (/metrics): connections, rooms,
    commands, skipped snapshots, script errors, each limit it enforced."""
    wanted = ("flockd_connections_total", "flockd_rooms_created_total",
              "flockd_rooms_expired_total", "flockd_commands_accepted_total",
              "flockd_snapshots_skipped_total", "flockd_script_errors_total")
    out = {}
    for line in d.http("/metrics")[2].splitlines():
        name, _, value = line.rpartition(" ")
        if name in wanted or (name.startswith("flockd_limit_hits_total") and float(value) > 0):
            out[name.replace("flockd_", "")] = int(float(value))
    return out


def cpu_seconds(pid):
    """User plus system CPU seconds of process pid so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# ---- main -----------------------------------------------------------------------------------

def options():
    p = argparse.ArgumentParser(description="flockd soak: see the module's docstring")
    p.add_argument("flockd")
    p.add_argument("--seconds", type=float, default=float(os.environ.get("SOAK_SECONDS", 180)))
    p.add_argument("--warmup", type=float, help="default: a quarter, 30 s to 5 minutes")
    p.add_argument("--bound-kib", type=int, default=2048)
    p.add_argument("--every", type=float, help="seconds between samples (default 2, 5 past "
                   "10 minutes)")
    p.add_argument("--csv")
    p.add_argument("--svg")
    p.add_argument("--seed", type=int, default=int(time.time()))
    p.add_argument("--keep", action="store_true", help="keep the temporary folder")
    p.add_argument("--only", help="run only these kinds of actor (comma-separated: churn, "
                   "at-limit, over-limit, slow, views, match, sighup, watcher-v1, watcher-v2, "
                   "watcher-v3): to find which part of the load a growth comes with")
    a = p.parse_args()
    if a.warmup is None:
        a.warmup = min(300.0, max(30.0, a.seconds / 4))
    if a.every is None:
        a.every = 2.0 if a.seconds <= 600 else 5.0
    if a.seconds < a.warmup + 30:
        p.error(f"--seconds must leave at least 30 s after the warm-up ({a.warmup:.0f} s)")
    return a


def report(run, a, ends, cpu, wall):
    """Prints the CSV, the counts, the figures and the verdict; writes the
    files asked for. Returns the exit status."""
    csv = soak_report.csv_text(run.samples)
    print("---- samples (csv) ----\n" + csv + "---- end of samples ----")
    for path, text in ((a.csv, csv), (a.svg, soak_report.svg(run.samples, a.warmup)
                                       if a.svg and run.samples else None)):
        if path and text:
            with open(path, "w") as f:
                f.write(text)
    print(f"soak: {wall:.0f} s, seed {a.seed}, warm-up {a.warmup:.0f} s, a sample every "
          f"{a.every:g} s; load: " + ", ".join(f"{v} {k}" for k, v in sorted(run.counts.items())))
    print(f"cpu: flockd {cpu[0]:.0f} s ({100 * cpu[0] / wall:.0f}% of a core), this driver "
          f"{cpu[1]:.0f} s ({100 * cpu[1] / wall:.0f}%)")
    why = list(run.problems)
    if run.d.proc.poll() is None:
        counts = totals(run.d)
        print("flockd's counts: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
        if counts.get("script_errors_total"):
            why.append(f"{counts['script_errors_total']} room scripts stopped by an error")
    if ends:
        judges, unjudged = soak_report.soak_judges(a.seconds, sanitizer_of(a.flockd))
        f = soak_report.figures(run.samples, *ends, run.loaded)
        print("\n".join(soak_report.summary(f, *ends, a.bound_kib, judges, unjudged)))
        why += soak_report.verdict(f, *ends, a.bound_kib, judges)
    else:
        why.append("no quiet readings: flockd is gone")
    print("soak: PASS" if not why else "soak: FAIL\n  " + "\n  ".join(why[:40]))
    return 1 if why else 0


def main():
    a = options()
    resource.setrlimit(resource.RLIMIT_NOFILE, (resource.getrlimit(resource.RLIMIT_NOFILE)[1],) * 2)
    tmp = tempfile.mkdtemp(prefix="flockd-soak-")
    status = 1
    try:
        pairs = prepare(tmp)
        t0 = time.monotonic()
        with Flockd(a.flockd, *server_args(tmp), stop_timeout=30) as d:
            run = Run(d, tmp, pairs, a.seed)
            run.only = set(a.only.split(",")) if a.only else None
            print(f"soak: flockd {d.proc.pid} on {d.url}, {a.seconds:.0f} s, seed {a.seed}",
                  flush=True)
            ends = asyncio.run(soak(run, a.seconds, a.warmup, a.every))
            cpu = (cpu_seconds(d.proc.pid) if d.proc.poll() is None else 0.0,
                   sum(resource.getrusage(resource.RUSAGE_SELF)[:2]))
            status = report(run, a, ends, cpu, time.monotonic() - t0)
    except AssertionError as e:  # flockd's exit: not 0, or a sanitizer report
        print(f"soak: FAIL\n  {e}")
        status = 1
    finally:
        if a.keep:
            print(f"soak: kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(status)


if __name__ == "__main__":
    main()
