#!/usr/bin/python3
"""Snapshot version 2 in a live flockd (PROTOCOL.md §1, §5.4 keyframe, §11):
subprotocol choice, key frames for new streams, the keyframe command, a
client that skips frames, and keyframe requests in a loop. Frames are
decoded with client/examples/flocksnap.py, which checks every base and
every state hash: a frame it refuses fails the test.

Usage: test_v2.py FLOCKD_BINARY [--functional | --timing] [TEST_NAME...]
Each test starts its own flockd on an ephemeral loopback port. The last
line is "N passed, N failed".
"""

import asyncio
import json
import os
import socket
import sys
import urllib.parse

import websockets

from flockd_harness import Flockd, Suite, arg

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "client", "examples"))
import flocksnap  # noqa: E402

FLOCKD = arg(0, "build/server/flockd")
SUITE = Suite(timeout=120)
test = SUITE.test


class V2Client:
    """A connection that decodes every binary message with one
    flocksnap.Decoder, in arrival order; `frames` the decoded snapshots,
    `refused` the SnapshotErrors, `replies` the acks and errors. With
    `read_delay` it pauses after each message: a slow reader, which the
    server serves by skipping frames."""

    def __init__(self, ws, read_delay=0.0):
        self.ws = ws
        self.read_delay = read_delay
        self.dec = flocksnap.Decoder()
        self.frames, self.refused, self.replies, self.welcomes = [], [], [], []
        self.next_id = 1
        self.reader = asyncio.ensure_future(self._read())

    @classmethod
    async def connect(cls, url, offer=("flock.v2", "flock.v1"), read_delay=0.0):
        kw = {}
        if read_delay:  # little buffered on the way, so that the server soon skips
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.connect((urllib.parse.urlsplit(url).hostname, urllib.parse.urlsplit(url).port))
            kw = {"sock": sock, "max_queue": 1, "read_limit": 4096}
        ws = await websockets.connect(url, subprotocols=list(offer), max_size=None, **kw)
        c = cls(ws, read_delay)
        await c.wait_for(lambda: c.welcomes, 5)
        return c

    async def _read(self):
        try:
            async for msg in self.ws:
                if isinstance(msg, bytes):
                    try:
                        self.frames.append(self.dec.decode(msg))
                    except flocksnap.SnapshotError as e:
                        self.refused.append(e)
                else:
                    m = json.loads(msg)
                    if m.get("type") == "welcome":
                        self.dec.forget()
                        self.welcomes.append((len(self.frames), m))
                    elif m.get("type") in ("ack", "error"):
                        self.replies.append((len(self.frames), m))
                if self.read_delay:
                    await asyncio.sleep(self.read_delay)
        except websockets.ConnectionClosed:
            pass

    async def wait_for(self, cond, timeout):
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not cond():
            if loop.time() > deadline:
                raise AssertionError("timed out waiting")
            await asyncio.sleep(0.01)

    async def send(self, cmd, **args):
        i = self.next_id
        self.next_id += 1
        await self.ws.send(json.dumps({"cmd": cmd, "id": i, **args}))
        return i

    async def command(self, cmd, **args):
        i = await self.send(cmd, **args)
        await self.wait_for(lambda: any(r.get("id") == i for _, r in self.replies), 5)
        return next((at, r) for at, r in self.replies if r.get("id") == i)

    async def close(self):
        self.read_delay = 0  # a slow reader drains its backlog at once
        await self.ws.close()
        await self.reader


def kinds(frames):
    return [f.kind for f in frames]


@test
async def the_server_takes_the_clients_first_choice_and_the_welcome_names_it():
    with Flockd(FLOCKD, "--boids", "300") as d:
        for offer, version in ((("flock.v2", "flock.v1"), 2), (("flock.v1", "flock.v2"), 1),
                               (("flock.v1",), 1), (("flock.v2",), 2)):
            c = await V2Client.connect(d.url, offer)
            assert c.ws.subprotocol == f"flock.v{version}", (offer, c.ws.subprotocol)
            assert c.welcomes[0][1]["protocol"] == version, c.welcomes
            await c.wait_for(lambda: len(c.frames) >= 3, 5)
            assert all(f.version == version for f in c.frames), offer
            await c.close()
        # No subprotocol at all: version 1, as before version 2 existed.
        ws = await websockets.connect(d.url, max_size=None)
        welcome = json.loads(await ws.recv())
        assert welcome["protocol"] == 1 and (await ws.recv())[:3] == b"FK\x01"
        await ws.close()


@test
async def a_stream_starts_on_a_key_frame_and_deltas_follow_with_the_sim_hash():
    with Flockd(FLOCKD, "--boids", "2000") as d:
        c = await V2Client.connect(d.url)
        # The deltas sized are those a snapshot period apart (60 / 20 Hz: 3
        # ticks): a loaded sanitizer build may send fewer snapshots
        # (PROTOCOL.md §6.7), whose deltas span more ticks.
        def at_rate():
            return [b for a, b in zip(c.frames, c.frames[1:])
                    if b.kind == "delta" and b.tick - a.tick == 3]
        await c.wait_for(lambda: len(at_rate()) >= 25, 60)  # generous: a loaded sanitizer build
        assert c.refused == [], c.refused
        assert c.frames[0].kind == "key", kinds(c.frames[:3])
        ticks = [f.tick for f in c.frames]
        assert all(b > a for a, b in zip(ticks, ticks[1:])), ticks
        # Every frame carries the simulation's hash of its tick, and it
        # changes as the flock moves.
        assert len({f.sim_hash for f in c.frames}) == len(c.frames)
        deltas = at_rate()
        size = sum(f.size for f in deltas) / sum(len(f.qx) for f in deltas)
        assert size < 2.5, f"{size:.2f} bytes per boid in deltas"
        await c.close()


@test
async def keyframe_is_acked_and_the_next_frame_is_a_key_frame():
    with Flockd(FLOCKD, "--boids", "1000") as d:
        c = await V2Client.connect(d.url)
        await c.wait_for(lambda: len(c.frames) >= 5, 5)
        before = d.metric("flockd_keyframes_requested_total")
        for _ in range(3):
            at, r = await c.command("keyframe")
            assert r["type"] == "ack", r
            await c.wait_for(lambda: len(c.frames) > at, 5)
            assert c.frames[at].kind == "key", kinds(c.frames[at - 1:at + 2])
            await asyncio.sleep(0.2)
        assert d.metric("flockd_keyframes_requested_total") == before + 3
        assert c.refused == []
        # On a version 1 connection it is acked too and changes nothing.
        v1 = await V2Client.connect(d.url, ("flock.v1",))
        _, r = await v1.command("keyframe")
        assert r["type"] == "ack", r
        await v1.close()
        await c.close()


@test
async def a_client_that_skips_frames_decodes_every_frame_it_gets():
    # Small frames at most (--max-room-boids), so a small send buffer.
    with Flockd(FLOCKD, "--boids", "1000", "--capacity", "1000", "--max-room-boids", "1000",
                "--snapshot-hz", "30") as d:
        fast = await V2Client.connect(d.url)
        slow = await V2Client.connect(d.url, read_delay=0.1)  # about 10 frames a second

        # Skipping: its frames are deltas on older bases (gaps > 1), or key
        # frames once deltas have come (a stream starts on key frames), never
        # a frame it cannot decode. It skips once the buffers between (the
        # client library's, both kernels') are full: seconds, more on a
        # loaded machine. A service thread held up for a snapshot period
        # (a sanitizer build beside other tests) makes every client skip one
        # early: wait for the slow client's own skipping, past 15 frames.
        def skipped():
            ks = kinds(slow.frames)
            return any(f.kind == "delta" and f.gap1 > 1 for f in slow.frames) or \
                ("delta" in ks and "key" in ks[ks.index("delta"):])
        await slow.wait_for(lambda: skipped() and len(slow.frames) >= 15, 30)
        assert slow.refused == [] and fast.refused == [], (slow.refused, fast.refused)
        assert len(slow.frames) >= 15 and len(fast.frames) > 2 * len(slow.frames), \
            (len(slow.frames), len(fast.frames))
        ticks = [f.tick for f in slow.frames]
        assert all(b > a for a, b in zip(ticks, ticks[1:])), ticks
        # A tick both received decodes to the same boids.
        by_tick = {f.tick: f for f in fast.frames}
        common = [f for f in slow.frames if f.tick in by_tick]
        assert common
        for f in common:
            g = by_tick[f.tick]
            assert (f.qx, f.qy, f.heading, f.group) == (g.qx, g.qy, g.heading, g.group)
        await fast.close()
        await slow.close()


@test
async def keyframe_requests_in_a_loop_are_rate_limited_and_others_notice_nothing():
    with Flockd(FLOCKD, "--boids", "1000") as d:
        watcher = await V2Client.connect(d.url)
        looper = await V2Client.connect(d.url)
        await watcher.wait_for(lambda: len(watcher.frames) >= 5, 5)
        settled = len(watcher.frames)
        burst = looper.welcomes[0][1]["limits"]["burst"]
        for _ in range(burst + 50):
            await looper.send("keyframe")
        await looper.wait_for(lambda: len(looper.replies) >= burst + 50 or
                              looper.reader.done(), 10)
        codes = [r.get("code") for _, r in looper.replies if r["type"] == "error"]
        assert codes and set(codes) == {"rate_limited"}, codes[:5]
        assert d.metric("flockd_keyframes_requested_total") <= burst + 50 - len(codes)
        n = len(watcher.frames)
        await watcher.wait_for(lambda: len(watcher.frames) >= n + 10, 5)
        assert watcher.refused == [] and looper.refused == []
        # The stream settled on deltas before the loop (its first frames are
        # key frames: the room encodes deltas once a client takes them). A
        # frame that follows its predecessor without a gap is a delta: only
        # a watcher that fell behind on a busy machine may be handed a key.
        frames = watcher.frames[settled - 1:]
        keys = [(a.seq, b.seq) for a, b in zip(frames, frames[1:])
                if b.kind == "key" and b.seq == a.seq + 1]
        assert not keys, f"another client's keyframe requests changed this stream: {keys}"
        await watcher.close()
        await looper.close()


if __name__ == "__main__":
    SUITE.main()
