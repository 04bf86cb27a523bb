#!/usr/bin/python3
"""Hostile clients against a real flockd, with a well-behaved viewer watching.

Usage: test_hostile.py FLOCKD_BINARY [--functional | --timing] [--untimed] [TEST_NAME...]
Each test starts its own flockd, measures a viewer over a quiet baseline
window, then again while one kind of abuse runs, and checks that the abuser
gets the reply or close code proto/PROTOCOL.md gives, that the room keeps
its tick rate, that the viewer keeps its frame rate and snapshot age, that
memory stays bounded and that the server is healthy afterwards. Every bound
on time is relative to the baseline of the same run. --untimed (what
sanitizer builds run, beside other tests) measures no window: the attacks,
their replies, memory and health are checked, and that the viewer is still
served. The last line is "N passed, N failed".
"""

import asyncio
import base64
import json
import os
import select
import socket
import struct
import threading
import time

from flockd_harness import Client, Flockd, Suite, arg

FLOCKD = arg(0, "build/server/flockd")
SUITE = Suite(timeout=120)
test = SUITE.test
timing = SUITE.timing
timely = SUITE.assert_timely

BOIDS = "2000"

# Memory bounds. The server keeps per connection one max_message buffer and
# at most 256 queued replies, and per room a queue of 1,024 commands: an
# attack may cost a few MiB (sanitizer builds add shadow memory and allocator
# regions), but nothing may grow with the number of messages sent: keeping a
# KiB per command would take the flood's 20,000 past its bound.
RSS_BOUND_KIB = 8192
RSS_BOUND_FLOOD_KIB = 16384  # 20,000 commands and replies through the queues
# For attacks that are about parsing or queues, not about the per-connection
# rate limit (tested on its own below): a limit they never reach.
NO_RATE_LIMIT = ("--rate", "100000", "--burst", "100000")

# Under AddressSanitizer freed memory waits in a quarantine (256 MiB by
# default) and counts in RSS; a small one keeps RSS close to live memory, so
# the bounds below mean the same in every build. Other builds ignore this.
os.environ["ASAN_OPTIONS"] = ":".join(
    filter(None, [os.environ.get("ASAN_OPTIONS"), "quarantine_size_mb=1"]))


# --- a minimal WebSocket client over a plain socket --------------------------

def frame(opcode, payload, fin=True, rsv=0, mask=None):
    """One masked client frame (RFC 6455 §5.2)."""
    n = len(payload)
    head = bytes([(0x80 if fin else 0) | (rsv << 4) | opcode])
    if n < 126:
        head += bytes([0x80 | n])
    elif n < 65536:
        head += bytes([0x80 | 126]) + struct.pack(">H", n)
    else:
        head += bytes([0x80 | 127]) + struct.pack(">Q", n)
    key = mask if mask is not None else os.urandom(4)
    if n:
        stream = (key * (n // 4 + 1))[:n]
        payload = (int.from_bytes(payload, "little")
                   ^ int.from_bytes(stream, "little")).to_bytes(n, "little")
    return head + key + payload


class RawWS:
    """A WebSocket connection that writes whatever frames it is given."""

    def __init__(self, port, timeout=10, origin=None):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(("GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
                           "Connection: Upgrade\r\nSec-WebSocket-Key: " + key + "\r\n"
                           "Sec-WebSocket-Protocol: flock.v1\r\n"
                           + ("Origin: " + origin + "\r\n" if origin else "")
                           + "Sec-WebSocket-Version: 13\r\n\r\n").encode())
        got = b""
        while b"\r\n\r\n" not in got:
            chunk = self.sock.recv(65536)
            assert chunk, "closed during the handshake"
            got += chunk
        head, rest = got.split(b"\r\n\r\n", 1)
        assert head.startswith(b"HTTP/1.1 101"), head
        self.buf, self.pos = bytearray(rest), 0
        opcode, payload = self.recv_frame()
        assert opcode == 1 and json.loads(payload)["type"] == "welcome", (opcode, payload)

    def _need(self, n):
        while len(self.buf) - self.pos < n:
            if self.pos > (1 << 20):
                del self.buf[:self.pos]
                self.pos = 0
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise EOFError
            self.buf += chunk

    def recv_frame(self):
        """(opcode, payload) of the next whole server frame."""
        self._need(2)
        p = self.pos
        b0, b1 = self.buf[p], self.buf[p + 1]
        assert not b1 & 0x80, "server frames are not masked"
        n, off = b1 & 0x7F, 2
        if n == 126:
            self._need(4)
            n, off = struct.unpack_from(">H", self.buf, p + 2)[0], 4
        elif n == 127:
            self._need(10)
            n, off = struct.unpack_from(">Q", self.buf, p + 2)[0], 10
        self._need(off + n)
        p = self.pos
        payload = bytes(self.buf[p + off:p + off + n])
        self.pos = p + off + n
        return b0 & 0x0F, payload

    def send(self, data):
        self.sock.sendall(data)

    def replies(self, count):
        """The next `count` JSON text messages, snapshots skipped, and the
        room's news of its clock (`dilation`, PROTOCOL.md §6.7), which a
        sanitizer's build under a flood may send any time."""
        out = []
        while len(out) < count:
            opcode, payload = self.recv_frame()
            if opcode == 1:
                m = json.loads(payload)
                if m.get("type") != "dilation":
                    out.append(m)
            elif opcode == 8:
                raise AssertionError("closed: %r" % payload)
        return out

    def close_code(self):
        """The code of the server's close frame; None if the connection
        ended without one."""
        try:
            while True:
                opcode, payload = self.recv_frame()
                if opcode == 8:
                    return struct.unpack(">H", payload[:2])[0] if len(payload) >= 2 else 1005
        except (EOFError, ConnectionResetError, socket.timeout):
            return None

    def close(self):
        self.sock.close()


def send_in_background(ws, chunks, gap=0):
    """Writes the chunks from a thread (the server may close mid-way)."""
    def run():
        try:
            for c in chunks:
                ws.sock.sendall(c)
                if gap:
                    time.sleep(gap)
        except OSError:
            pass
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def close_code_after(port, *frames, gap=0):
    """Connects, writes the frames (`gap` seconds apart) while reading,
    returns the close code."""
    ws = RawWS(port)
    sender = send_in_background(ws, frames, gap)
    code = ws.close_code()
    sender.join(10)
    ws.close()
    return code


def http_raw(port, request, timeout=10):
    """Sends raw HTTP bytes; returns (status or None, everything read)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    got = b""

    def send():
        try:
            s.sendall(request)
        except OSError:
            pass
    t = threading.Thread(target=send, daemon=True)
    t.start()
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
            head, sep, body = got.partition(b"\r\n\r\n")
            if sep:
                m = [l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")]
                if m and len(body) >= int(m[0].split(b":")[1]):
                    break
    except (ConnectionResetError, socket.timeout):
        pass
    s.close()
    t.join(10)
    status = None
    if got.startswith(b"HTTP/1."):
        status = int(got.split(b" ", 2)[1])
    return status, got


def http_answer(port, request, timeout=5):
    """Sends raw HTTP bytes and reads until the server closes the connection
    or `timeout` passes. Returns (status or None, head as lower-case text,
    body bytes, whether the server closed)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    got, closed = b"", False
    try:
        s.sendall(request)
        while True:
            chunk = s.recv(65536)
            if not chunk:
                closed = True
                break
            got += chunk
    except ConnectionResetError:
        closed = True
    except socket.timeout:
        pass
    s.close()
    head, _, body = got.partition(b"\r\n\r\n")
    status = int(got.split(b" ", 2)[1]) if got.startswith(b"HTTP/1.") else None
    return status, head.decode("latin-1").lower(), body, closed


def vm_kib(d):
    """flockd's address space (VmSize) in KiB."""
    with open(f"/proc/{d.proc.pid}/status") as f:
        return int(next(l for l in f if l.startswith("VmSize:")).split()[1])


def upgrade_request(path=b"/ws", version=b"HTTP/1.1", headers=None):
    """A WebSocket handshake; `headers` replaces the Sec-WebSocket ones."""
    if headers is None:
        headers = [b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", b"Sec-WebSocket-Version: 13"]
    return (b"GET " + path + b" " + version + b"\r\nHost: x\r\nUpgrade: websocket\r\n"
            b"Connection: Upgrade\r\n" + b"".join(h + b"\r\n" for h in headers) + b"\r\n")


# --- what the viewer sees -----------------------------------------------------

class Window:
    """The viewer's snapshots between start and stop: frames per second,
    ticks per second of server time, p99 of arrival minus server_time_us."""

    def __init__(self, viewer):
        self.viewer = viewer
        self.i0 = len(viewer.snapshots)
        self.t0 = time.time()

    def stop(self):
        self.t1 = time.time()
        snaps = self.viewer.snapshots[self.i0:]
        assert len(snaps) >= 3, len(snaps)
        self.frames = len(snaps) / (self.t1 - self.t0)
        first, last = snaps[0][1], snaps[-1][1]
        self.ticks = (last["tick"] - first["tick"]) / ((last["time_us"] - first["time_us"]) / 1e6)
        ages = sorted(t - s["time_us"] / 1e6 for t, s in snaps)
        self.p99 = ages[min(len(ages) - 1, int(0.99 * len(ages)))]
        return self


# The windows' lengths. The viewer gets 20 frames a second: a window counts
# them to within one, 5 % of a 1 s baseline and 3.3 % of a 1.5 s attack
# window, well inside the 10 % the frame rate may drop; the tick rate is
# read from the server's own times, exact in any window; the p99 of the
# snapshots' age may grow 3 times or by 50 ms, far beyond what one window
# more or less of frames moves it.
BASELINE_SECONDS = 1.0
ATTACK_SECONDS = 1.5


async def baseline(viewer, seconds=BASELINE_SECONDS):
    await asyncio.sleep(0.3)  # past the first snapshots after connecting
    w = Window(viewer)
    await asyncio.sleep(seconds)
    return w.stop()


def assert_unaffected(name, base, att, ticking=True):
    print(f"  {name}: baseline {base.frames:.1f} fps {base.ticks:.1f} ticks/s "
          f"p99 age {base.p99 * 1e3:.1f} ms; attack {att.frames:.1f} fps "
          f"{att.ticks:.1f} ticks/s p99 age {att.p99 * 1e3:.1f} ms", flush=True)
    assert base.frames > 5, base.frames
    assert att.frames >= 0.9 * base.frames, (name, base.frames, att.frames)
    if ticking:
        assert abs(att.ticks - base.ticks) <= 0.1 * base.ticks, (name, base.ticks, att.ticks)
    else:
        assert att.ticks == 0, (name, att.ticks)
    assert att.p99 < max(3 * base.p99, base.p99 + 0.05), (name, base.p99, att.p99)


async def under_attack(d, viewer, name, attack, seconds=ATTACK_SECONDS, ticking=True):
    """Runs `attack` (a blocking function, in a thread) while measuring the
    viewer; the window lasts at least `seconds`. Returns (result, RSS
    growth in KiB). --untimed: no windows; the viewer must still get a
    snapshot after the attack."""
    if SUITE.untimed:
        return await attacked(d, viewer, name, attack)
    base = await baseline(viewer)
    rss0 = d.rss_kib()
    w = Window(viewer)
    result = await asyncio.to_thread(attack)
    rest = seconds - (time.time() - w.t0)
    if rest > 0:
        await asyncio.sleep(rest)
    att = w.stop()
    growth = d.rss_kib() - rss0
    print(f"  {name}: RSS growth {growth} KiB", flush=True)
    assert_unaffected(name, base, att, ticking)
    return result, growth


async def attacked(d, viewer, name, attack):
    """under_attack without its windows."""
    await asyncio.sleep(0.3)  # past the first snapshots after connecting
    rss0 = d.rss_kib()
    result = await asyncio.to_thread(attack)
    growth = d.rss_kib() - rss0
    print(f"  {name}: RSS growth {growth} KiB", flush=True)
    await viewer.next_snapshot(viewer.snapshots[-1][1]["tick"], timeout=10)
    return result, growth


async def assert_healthy(d):
    assert d.proc.poll() is None, "flockd exited"
    status, _, body = await asyncio.to_thread(d.http, "/healthz")
    assert status == 200 and json.loads(body)["status"] == "ok", (status, body)


async def paused_world(viewer):
    """Pauses the room; returns a snapshot taken after the pause."""
    ack = await viewer.command("pause")
    return await viewer.next_snapshot(ack["tick"] - 1)


def world_bytes(snap):
    return snap["raw"][24:]


# --- the tests -------------------------------------------------------------------

BINARY_SIZES = [1, 2, 125, 126, 127, 1000, 4096]


@timing
async def binary_frames_of_every_size_get_bad_json_and_change_nothing():
    with Flockd(FLOCKD, "--boids", BOIDS, *NO_RATE_LIMIT) as d:
        viewer = await Client.connect(d.url)
        bad = await Client.connect(d.url)
        loop = asyncio.get_running_loop()

        async def send_binaries():
            n0 = len(bad.replies)
            for n in BINARY_SIZES:
                await bad.ws.send(os.urandom(n))
            await bad.wait_for(lambda: len(bad.replies) >= n0 + len(BINARY_SIZES), 5)
            return bad.replies[n0:]

        def attack():
            got = []
            deadline = time.time() + ATTACK_SECONDS
            while time.time() < deadline:
                got += asyncio.run_coroutine_threadsafe(send_binaries(), loop).result(10)
            return got

        got, growth = await under_attack(d, viewer, "binary frames", attack)
        assert len(got) >= len(BINARY_SIZES), len(got)
        assert all(r["type"] == "error" and r["code"] == "bad_json" and r["id"] is None
                   for r in got), got
        # A few hundred small messages: nothing is kept per message.
        assert growth < RSS_BOUND_KIB, growth

        before = await paused_world(viewer)
        got = await send_binaries()
        assert [r["code"] for r in got] == ["bad_json"] * len(BINARY_SIZES), got
        await asyncio.sleep(0.3)
        after = viewer.snapshots[-1][1]
        assert after["tick"] == before["tick"]
        assert world_bytes(after) == world_bytes(before), "world must be unchanged"
        await bad.close()
        await assert_healthy(d)
        await viewer.close()


@timing
async def text_that_is_not_utf8_closes_with_1007():
    with Flockd(FLOCKD, "--boids", BOIDS) as d:
        viewer = await Client.connect(d.url)
        texts = [b'{"cmd":"ping","id":"\xff"}', b"\xfe\xff", b'{"cmd":"ping","id":"\xc0\xaf"}',
                 b'{"cmd":"ping","id":"\xed\xa0\x80"}', b'{"cmd":"ping","id":"\xe2\x82"}']

        def attack():
            return [close_code_after(d.port, frame(1, t)) for t in texts]

        codes, growth = await under_attack(d, viewer, "invalid UTF-8", attack)
        assert codes == [1007] * len(texts), codes
        assert growth < RSS_BOUND_KIB, growth
        await assert_healthy(d)
        await viewer.close()


@timing
async def a_10_mb_frame_and_an_endless_fragmented_message_close_with_1009():
    # Masking 10 MB takes a moment: done before the viewer starts measuring.
    big = frame(1, b"a" * (10 << 20))
    with Flockd(FLOCKD, "--boids", BOIDS) as d:
        viewer = await Client.connect(d.url)
        piece = b"b" * 1000
        # One fragment at a time, as a slow endless stream would arrive.
        endless = ([frame(1, piece, fin=False)]
                   + [frame(0, piece, fin=False) for _ in range(20)])

        def attack():
            return [close_code_after(d.port, *(big[i:i + 65536] for i in range(0, len(big), 65536))),
                    close_code_after(d.port, *endless, gap=0.02)]

        codes, growth = await under_attack(d, viewer, "10 MB frame, endless fragments", attack)
        assert codes == [1009, 1009], codes
        # The server holds at most max_message (4 KiB) of a message: it must
        # not have buffered the 10 MB frame.
        assert growth < RSS_BOUND_KIB, growth
        await assert_healthy(d)
        await viewer.close()


NESTED = [
    ("[" * 10000, "bad_json"),
    ('{"a":' * 800, "bad_json"),
    ('{"cmd":"ping","id":1,"x":[[[[[1]]]]]}', "bad_json"),
    ('{"cmd":"seek","id":2,"group":0,"x":NaN,"y":5}', "bad_json"),
    ('{"cmd":"seek","id":3,"group":0,"x":Infinity,"y":5}', "bad_json"),
    ('{"cmd":"seek","id":4,"group":0,"x":-Infinity,"y":5}', "bad_json"),
    ('{"cmd":"seek","id":5,"group":0,"x":1e308,"y":5}', "out_of_range"),
    ('{"cmd":"seek","id":6,"group":0,"x":1e400,"y":5}', "out_of_range"),
    ('{"cmd":"seek","id":7,"group":0,"x":"10","y":5}', "bad_arg"),
    ('{"cmd":"seek","id":8,"group":0,"x":null,"y":5}', "bad_arg"),
    ('{"cmd":"seek","id":9,"group":0,"x":true,"y":5}', "bad_arg"),
    ('{"cmd":"seek","id":10,"group":"0","x":1,"y":5}', "bad_arg"),
    ('{"cmd":"ping","id":"a\\u0000b"}', "bad_json"),
    ('{"cmd":"ping","id":"a\x00b"}', "bad_json"),
    ('{"cmd":"ping","id":11}\x00', "bad_json"),
    ('{"cmd":"explode","id":12}', "unknown_cmd"),
    ('{"cmd":"PING","id":13}', "unknown_cmd"),
    ('{"cmd":"ping","id":14,"x":1}', "bad_arg"),
    ('{"cmd":"seek","id":15,"group":0,"x":1,"y":1,"z":1}', "bad_arg"),
    ('{"cmd":"seek","id":16,"group":0,"x":1,"y":1,"x":2}', "bad_arg"),
    ('{"cmd":"ping","id":1e400}', "out_of_range"),
    ('{"cmd":"ping","id":{"a":1}}', "bad_arg"),
    ('{"cmd":5,"id":17}', "bad_arg"),
]


@timing
async def hostile_json_gets_the_error_codes_of_the_protocol_and_changes_nothing():
    with Flockd(FLOCKD, "--boids", BOIDS, "--max-message", "16384", *NO_RATE_LIMIT) as d:
        viewer = await Client.connect(d.url)
        raw = RawWS(d.port)
        msgs = b"".join(frame(1, t.encode()) for t, _ in NESTED)
        rounds = []

        def attack():
            deadline = time.time() + ATTACK_SECONDS
            while time.time() < deadline:
                raw.send(msgs)
                rounds.append([r["code"] for r in raw.replies(len(NESTED))])

        _, growth = await under_attack(d, viewer, "hostile JSON", attack)
        want = [code for _, code in NESTED]
        assert rounds and all(r == want for r in rounds), (rounds[0], want)
        assert growth < RSS_BOUND_KIB, growth

        before = await paused_world(viewer)
        rounds.clear()
        await asyncio.to_thread(lambda: (raw.send(msgs), rounds.append(raw.replies(len(NESTED)))))
        assert [r["code"] for r in rounds[0]] == want
        ids = [r["id"] for r in rounds[0]]
        assert ids[6:12] == [5, 6, 7, 8, 9, 10], ids
        await asyncio.sleep(0.3)
        after = viewer.snapshots[-1][1]
        assert after["tick"] == before["tick"]
        assert world_bytes(after) == world_bytes(before), "world must be unchanged"

        # -0 is 0, and a denormal is a valid number in range (§5.3): the target
        # lands at exactly +0.0 in the snapshot.
        for text in ('{"cmd":"seek","id":"neg","group":-0,"x":-0,"y":5e-324}',
                     '{"cmd":"seek","id":"den","group":3,"x":-0.0,"y":4.9e-324}'):
            n0 = len(viewer.replies)
            await viewer.send_raw(text)
            await viewer.wait_for(lambda: len(viewer.replies) > n0, 5)
            r = viewer.replies[n0]
            assert r["type"] == "ack", (text, r)
            snap = await viewer.next_snapshot(r["tick"] - 1)
            off = len(snap["raw"]) - 9 * len(snap["targets"])
            targets = {snap["raw"][off + 9 * i]: snap["raw"][off + 9 * i + 1:off + 9 * i + 9]
                       for i in range(len(snap["targets"]))}
            group = 0 if "neg" in text else 3
            assert targets[group] == bytes(8), (text, targets[group].hex())
        raw.close()
        await assert_healthy(d)
        await viewer.close()


@timing
async def reserved_opcodes_and_rsv_bits_close_with_1002():
    with Flockd(FLOCKD, "--boids", BOIDS) as d:
        viewer = await Client.connect(d.url)
        ping = b'{"cmd":"ping","id":1}'
        bad = [frame(0x3, ping), frame(0xB, b""), frame(0x1, ping, rsv=4),
               frame(0x1, ping, rsv=2), frame(0x1, ping, rsv=1), frame(0x9, b"x", rsv=4)]

        def attack():
            return [close_code_after(d.port, f) for f in bad]

        codes, growth = await under_attack(d, viewer, "reserved opcodes, RSV bits", attack)
        assert codes == [1002] * len(bad), codes
        assert growth < RSS_BOUND_KIB, growth
        await assert_healthy(d)
        await viewer.close()


def flood(port, first, count, window):
    """Sends `count` pings as fast as replies allow, with at most `window`
    unanswered; returns the replies."""
    raw = RawWS(port)
    got = []
    sent = 0
    while len(got) < count:
        n = min(window - (sent - len(got)), count - sent)
        if n > 0:
            raw.send(b"".join(frame(1, b'{"cmd":"ping","id":%d}' % (first + i))
                              for i in range(sent, sent + n)))
            sent += n
        got += raw.replies(max(1, (sent - len(got)) // 2))
    raw.close()
    return got


@timing
async def a_flood_of_pings_is_acked_or_refused_with_queue_full_and_the_viewer_keeps_up():
    with Flockd(FLOCKD, "--boids", BOIDS, *NO_RATE_LIMIT) as d:
        viewer = await Client.connect(d.url)
        # Eight clients, 2,500 pings each, each with up to 200 unanswered:
        # together more than the room's queue of 1,024 holds between two ticks.
        clients, each = 8, 2500

        def attack():
            out = [None] * clients

            def run(k):
                out[k] = flood(d.port, k * each, each, 200)
            threads = [threading.Thread(target=run, args=(k,)) for k in range(clients)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            return [r for rs in out for r in rs]

        got, growth = await under_attack(d, viewer, "20000 pings", attack)
        acks = sum(r["type"] == "ack" for r in got)
        full = sum(r["type"] == "error" and r["code"] == "queue_full" for r in got)
        print(f"  20000 pings: {acks} acks, {full} queue_full", flush=True)
        assert acks + full == clients * each and acks > 0, (acks, full)
        assert sorted(r["id"] for r in got) == list(range(clients * each))
        # The queue is bounded (1,024 commands) and so is each client's reply
        # queue (256): a few MiB at most, whatever the flood's length.
        assert growth < RSS_BOUND_FLOOD_KIB, growth
        await assert_healthy(d)
        await viewer.close()


@test
async def a_burst_of_commands_in_one_write_gets_every_reply_and_stays_connected():
    with Flockd(FLOCKD, "--boids", BOIDS, *NO_RATE_LIMIT) as d:
        # Flow control, not a 1008 close: the server stops reading a client
        # that is owed many replies and resumes as it reads them.
        raw = RawWS(d.port)
        count = 3000
        raw.send(b"".join(frame(1, b'{"cmd":"ping","id":%d}' % i) for i in range(count)))
        got = raw.replies(count)
        assert sorted(r["id"] for r in got) == list(range(count))
        assert [r["id"] for r in got] == sorted(r["id"] for r in got), "replies out of order"
        assert all(r["type"] == "ack" or r["code"] == "queue_full" for r in got)
        raw.send(frame(1, b'{"cmd":"ping","id":"after"}'))
        assert raw.replies(1)[0]["id"] == "after"
        raw.close()
        await assert_healthy(d)


@timing
async def a_client_flooding_past_its_rate_limit_is_refused_then_closed_with_1008():
    rate, burst = 50, 100
    with Flockd(FLOCKD, "--boids", BOIDS, "--rate", str(rate), "--burst", str(burst)) as d:
        viewer = await Client.connect(d.url)

        def attack():
            raw = RawWS(d.port)
            raw.sock.settimeout(10)
            raw.send(b"".join(frame(1, b'{"cmd":"seek","id":%d,"group":3,"x":10,"y":10}' % i)
                              for i in range(5000)))
            got, code = [], None
            try:
                while True:
                    opcode, payload = raw.recv_frame()
                    if opcode == 1:
                        got.append(json.loads(payload))
                    elif opcode == 8:
                        code = struct.unpack(">H", payload[:2])[0]
                        break
            except (EOFError, ConnectionResetError, socket.timeout):
                pass
            raw.close()
            return got, code

        (got, code), growth = await under_attack(d, viewer, "rate-limit flood", attack)
        acks = [r for r in got if r["type"] == "ack"]
        limited = [r for r in got if r["type"] == "error" and r["code"] == "rate_limited"]
        print(f"  rate-limit flood: {len(acks)} acks, {len(limited)} rate_limited, close {code}",
              flush=True)
        assert code == 1008, code
        assert len(acks) + len(limited) == len(got), [r for r in got if r not in acks + limited][:3]
        # The bucket holds `burst` commands (plus what refills meanwhile); the
        # rest is refused until the client has been refused about `burst` times.
        assert burst <= len(acks) and burst <= len(limited), (len(acks), len(limited))
        timely(len(acks) <= burst + rate and len(limited) <= 2 * burst + rate,
               (len(acks), len(limited)))
        assert [r["id"] for r in got] == list(range(len(got))), "replies out of order"
        assert growth < RSS_BOUND_KIB, growth
        await assert_healthy(d)
        await viewer.close()


def limit_hits(d, name):
    """flockd_limit_hits_total{limit=NAME} from /metrics."""
    _, _, body = d.http("/metrics")
    key = 'flockd_limit_hits_total{limit="%s"} ' % name
    return int(next(l for l in body.splitlines() if l.startswith(key)).split()[1])


def wait_for_limit_hits(d, name, count, timeout):
    """Waits until limit NAME has been hit `count` times; fails after
    `timeout` seconds."""
    deadline = time.time() + timeout
    while (hits := limit_hits(d, name)) < count:
        assert time.time() < deadline, (name, hits, count)
        time.sleep(0.1)


def refused_handshake(port, origin=None):
    """True if the server refuses a WebSocket handshake (no 101)."""
    try:
        RawWS(port, timeout=5, origin=origin).close()
        return False
    except (AssertionError, EOFError, ConnectionResetError, socket.timeout, OSError):
        return True


@timing
async def connections_past_the_per_address_limit_are_refused_and_counted():
    with Flockd(FLOCKD, "--boids", BOIDS, "--max-per-ip", "5") as d:
        viewer = await Client.connect(d.url)  # one of the five

        def attack():
            held = [RawWS(d.port) for _ in range(4)]
            over = [refused_handshake(d.port) for _ in range(3)]
            held.pop().close()
            time.sleep(0.3)
            again = RawWS(d.port)  # a freed place is taken again
            for c in held + [again]:
                c.close()
            return over

        over, growth = await under_attack(d, viewer, "per-address limit", attack)
        assert over == [True] * 3, over
        assert limit_hits(d, "connections_per_ip") == 3
        assert growth < RSS_BOUND_KIB, growth
        await assert_healthy(d)
        await viewer.close()


@test
async def browsers_from_origins_not_allowed_are_refused_and_counted():
    allowed = "http://good.example"
    with Flockd(FLOCKD, "--boids", BOIDS, "--origins", "https://a.example, " + allowed) as d:
        assert refused_handshake(d.port, origin="http://evil.example")
        assert refused_handshake(d.port, origin=allowed + ".evil")
        RawWS(d.port, origin=allowed).close()
        RawWS(d.port, origin="https://a.example").close()
        RawWS(d.port).close()  # not a browser: no Origin header
        assert limit_hits(d, "origin") == 2
        await assert_healthy(d)


def padded_ping(ident, size):
    """A ping command of exactly `size` bytes (whitespace before its end)."""
    head, tail = b'{"cmd":"ping","id":"%s"' % ident.encode(), b"}"
    return head + b" " * (size - len(head) - len(tail)) + tail


@test
async def messages_up_to_the_limit_are_taken_whole_in_one_frame_or_in_fragments():
    # The reassembly buffer grows as a message needs it, up to the limit;
    # lws reads a few hundred bytes at a time, so a big frame comes in pieces.
    with Flockd(FLOCKD, "--boids", BOIDS, "--max-message", "16384") as d:
        raw = RawWS(d.port)
        raw.send(frame(1, b""))  # an empty message is bad JSON like any other
        r = raw.replies(1)[0]
        assert (r["type"], r["code"]) == ("error", "bad_json"), r
        raw.send(frame(1, b'{"cmd":"ping","id":"small"}'))
        assert raw.replies(1)[0]["id"] == "small"
        raw.send(frame(1, padded_ping("whole", 16384)))  # exactly the limit
        r = raw.replies(1)[0]
        assert (r["type"], r["id"]) == ("ack", "whole"), r
        msg = padded_ping("pieces", 12000)
        parts = [msg[k:k + 100] for k in range(0, len(msg), 100)]
        raw.send(b"".join([frame(1, parts[0], fin=False)]
                          + [frame(0, p, fin=False) for p in parts[1:-1]]
                          + [frame(0, parts[-1])]))
        assert raw.replies(1)[0]["id"] == "pieces"
        raw.send(frame(1, b'{"cmd":"ping","id":"after"}'))
        assert raw.replies(1)[0]["id"] == "after"
        raw.close()
        assert close_code_after(d.port, frame(1, padded_ping("over", 16385))) == 1009
        await assert_healthy(d)


@test
async def fragments_past_the_limit_sent_in_one_burst_close_with_1009():
    with Flockd(FLOCKD, "--boids", BOIDS) as d:
        piece = b"b" * 1000
        burst = b"".join([frame(1, piece, fin=False)]
                         + [frame(0, piece, fin=False) for _ in range(200)])
        codes = [close_code_after(d.port, burst) for _ in range(3)]
        assert codes == [1009, 1009, 1009], codes
        await assert_healthy(d)


@timing
async def hundreds_of_half_open_http_connections_are_dropped_and_do_not_block_others():
    with Flockd(FLOCKD, "--boids", BOIDS) as d:
        viewer = await Client.connect(d.url)
        socks = []

        def attack():
            for _ in range(300):
                s = socket.create_connection(("127.0.0.1", d.port), timeout=5)
                s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
                socks.append(s)

        _, growth = await under_attack(d, viewer, "300 half-open HTTP", attack)
        # 300 connections, each with a header buffer of a few KiB.
        assert growth < 8192, growth
        fresh = await Client.connect(d.url)
        assert fresh.welcome["type"] == "welcome"
        await fresh.close()
        await assert_healthy(d)

        def wait_closed():
            deadline = time.time() + 15
            open_ = set(socks)
            while open_ and time.time() < deadline:
                r, _, _ = select.select(list(open_), [], [], 0.5)
                for s in r:
                    try:
                        s.recv(65536)  # EOF or a timeout response: the server gave up
                    except OSError:
                        pass
                    open_.discard(s)
            return len(socks) - len(open_), time.time()

        t0 = time.time()
        closed, t1 = await asyncio.to_thread(wait_closed)
        print(f"  half-open: {closed} of {len(socks)} closed by the server "
              f"within {t1 - t0:.1f} s", flush=True)
        assert closed == len(socks), closed
        for s in socks:
            s.close()
        await assert_healthy(d)
        await viewer.close()


@timing
async def a_hundred_clients_that_never_read_are_dropped_without_growing_memory():
    with Flockd(FLOCKD, "--boids", BOIDS, "--stale-timeout", "2") as d:
        viewer = await Client.connect(d.url)
        idle = []

        def attack():
            for _ in range(100):
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                s.connect(("127.0.0.1", d.port))
                s.sendall(b"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
                          b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                          b"Sec-WebSocket-Version: 13\r\n\r\n")
                idle.append(s)

        # The window spans their being stuck and dropped (--stale-timeout 2).
        _, growth = await under_attack(d, viewer, "100 clients never reading", attack, seconds=6)
        # A stuck client holds at most one partly written 10 KB snapshot and
        # its session buffers; 100 of them stay well under 16 MiB.
        assert growth < 16384, growth
        # Dropped within the window; an --untimed run gives them 10 s more.
        await asyncio.to_thread(wait_for_limit_hits, d, "stale", 100, 10 if SUITE.untimed else 0)
        for s in idle:
            s.close()
        await assert_healthy(d)
        await viewer.close()


TRAVERSALS = [b"/../../etc/passwd", b"/%2e%2e/%2e%2e/etc/passwd", b"/..%2f..%2fetc%2fpasswd",
              b"/%2e%2e%2f%2e%2e%2f%2e%2e%2fetc%2fpasswd", b"/../../proto/PROTOCOL.md",
              b"/%2e%2e/%2e%2e/proto/PROTOCOL.md", b"/./.././../proto/PROTOCOL.md",
              b"/..\\..\\proto\\PROTOCOL.md", b"//etc/passwd", b"/%252e%252e/%252e%252e/etc/passwd"]


@timing
async def path_traversal_urls_never_return_files_outside_the_web_root():
    with Flockd(FLOCKD, "--boids", BOIDS) as d:
        viewer = await Client.connect(d.url)

        def attack():
            return [(p, *http_raw(d.port, b"GET " + p + b" HTTP/1.1\r\nHost: x\r\n\r\n"))
                    for p in TRAVERSALS]

        got, _ = await under_attack(d, viewer, "path traversal", attack)
        for path, status, body in got:
            assert b"root:" not in body and b"wire protocol" not in body, (path, body[:200])
            assert status in (400, 403, 404), (path, status, body[:200])
        await assert_healthy(d)
        await viewer.close()


@timing
async def a_one_megabyte_header_is_refused_and_the_server_stays_healthy():
    with Flockd(FLOCKD, "--boids", BOIDS) as d:
        viewer = await Client.connect(d.url)
        req = b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (1 << 20) + b"\r\n\r\n"

        def attack():
            return http_raw(d.port, req)

        (status, body), growth = await under_attack(d, viewer, "1 MB header", attack)
        assert status is None or 400 <= status < 500, (status, body[:200])
        assert growth < RSS_BOUND_KIB, growth
        fresh = await Client.connect(d.url)
        await fresh.close()
        await assert_healthy(d)
        await viewer.close()

ENDPOINTS = [b"/healthz", b"/metrics", b"/api/rooms"]
# Requests whose body framing no reader could agree on, or a body on a GET
# (RFC 9112 6.1, 6.3): each is answered 400 and its connection closed.
BODY_REQUESTS = [
    b"Content-Length: 5\r\n\r\nhello",
    b"Content-Length: 0\r\nContent-Length: 0\r\n\r\n",
    b"Content-Length: 5\r\nContent-Length: 7\r\n\r\nhello",
    b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n",
    b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
]


@test
async def a_get_with_a_body_is_refused_with_400_and_closed_and_keeps_no_memory():
    with Flockd(FLOCKD, "--boids", BOIDS) as d:
        # The baseline once every thread has started and allocated: the
        # measuring thread's first measure gives it a malloc arena (64 MiB
        # of address space) a fraction of a second after start.
        deadline = time.time() + 10
        while d.metric('flockd_flock_measured_tick{room="default"}') is None:
            assert time.time() < deadline, "the default room was never measured"
            await asyncio.sleep(0.05)
        vm0 = vm_kib(d)
        for i in range(300):
            path, tail = ENDPOINTS[i % 3], BODY_REQUESTS[i % len(BODY_REQUESTS)]
            status, _, _, closed = http_answer(d.port, b"GET " + path + b" HTTP/1.1\r\nHost: x\r\n"
                                               + tail)
            assert (status, closed) == (400, True), (path, tail, status, closed)
        growth = vm_kib(d) - vm0
        print(f"  300 GETs with a body: address space grew {growth} KiB", flush=True)
        # Each used to keep a 512 KiB body buffer for good (150 MiB in all).
        assert growth < 16384, growth
        # A GET without a body, and one with an explicit empty one, are served.
        status, head, body, _ = http_answer(
            d.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n"
            b"Connection: close\r\n\r\n")
        assert status == 200 and json.loads(body)["status"] == "ok", (status, body)
        await assert_healthy(d)


@test
async def head_and_options_on_the_endpoints_are_answered():
    with Flockd(FLOCKD, "--boids", BOIDS) as d:
        for path in ENDPOINTS:
            _, _, get_body, _ = http_answer(d.port, b"GET " + path + b" HTTP/1.1\r\nHost: x\r\n"
                                            b"Connection: close\r\n\r\n")
            status, head, body, closed = http_answer(
                d.port, b"HEAD " + path + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            assert (status, body, closed) == (200, b"", True), (path, status, body, closed)
            length = int(next(l for l in head.split("\r\n") if l.startswith("content-length:"))
                         .split(":")[1])
            assert abs(length - len(get_body)) < 64, (path, length, len(get_body))
            status, head, body, closed = http_answer(
                d.port, b"OPTIONS " + path + b" HTTP/1.1\r\nHost: x\r\n\r\n")
            assert (status, body, closed) == (204, b"", True), (path, status, body, closed)
            assert "\r\nallow: get, head, options" in head, head
        # HEAD keeps a keep-alive connection usable: a GET after it is served.
        s = socket.create_connection(("127.0.0.1", d.port), timeout=5)
        s.sendall(b"HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
                  b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        got = b""
        while (chunk := s.recv(65536)):
            got += chunk
        s.close()
        assert got.count(b"HTTP/1.1 200") == 2 and got.endswith(b"}\n"), got[-200:]
        status, head, _, closed = http_answer(
            d.port, b"DELETE /api/rooms HTTP/1.1\r\nHost: x\r\n\r\n")
        assert (status, closed) == (405, True) and "\r\nallow: get, head, options" in head, head
        await assert_healthy(d)


# (what the path holds, an HTTP/1.1 request line's target)
CONTROL_PATHS = [b"/%00", b"/%00?a=b", b"/%01", b"/index.html%1f", b"/a%7fb", b"/%09",
                 b"/index.html%0a", b"/index.html%0d", b"/healthz%0d%0a"]


@test
async def paths_with_an_encoded_nul_or_control_character_are_refused_with_400():
    with Flockd(FLOCKD, "--boids", BOIDS) as d:
        for path in CONTROL_PATHS:
            status, _, body, closed = http_answer(
                d.port, b"GET " + path + b" HTTP/1.1\r\nHost: x\r\n\r\n")
            assert (status, closed) == (400, True), (path, status, body[:100])
            assert b"<html" not in body.lower(), path
        # A NUL decoded anywhere but right after a '/' makes lws 4.1.6 drop
        # the request before flockd sees it: no answer, and no file.
        for path in [b"/index.html%00", b"/healthz%00", b"/index.html%00.png"]:
            status, _, body, closed = http_answer(
                d.port, b"GET " + path + b" HTTP/1.1\r\nHost: x\r\n\r\n")
            assert status in (None, 400) and closed and b"<html" not in body.lower(), (path, status)
        for path in [b"/", b"/index.html", b"/?room=a", b"/healthz?x=1"]:
            status, _, _, _ = http_answer(
                d.port, b"GET " + path + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            assert status == 200, (path, status)
        await assert_healthy(d)


KEY = b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=="
V13 = b"Sec-WebSocket-Version: 13"
BAD_HANDSHAKES = [
    ("version 12", upgrade_request(headers=[KEY, b"Sec-WebSocket-Version: 12"]), 426),
    ("two versions", upgrade_request(headers=[KEY, V13, b"Sec-WebSocket-Version: 8"]), 426),
    ("no version", upgrade_request(headers=[KEY]), 426),
    ("15-byte key", upgrade_request(headers=[b"Sec-WebSocket-Key: " + base64.b64encode(b"k" * 15),
                                             V13]), 400),
    ("17-byte key", upgrade_request(headers=[b"Sec-WebSocket-Key: " + base64.b64encode(b"k" * 17),
                                             V13]), 400),
    ("key not base64", upgrade_request(headers=[b"Sec-WebSocket-Key: !!!!not~base64!!!!!!!==", V13]),
     400),
    ("no key", upgrade_request(headers=[V13]), 400),
    ("two keys", upgrade_request(headers=[KEY, KEY, V13]), 400),
    ("HTTP/1.0", upgrade_request(version=b"HTTP/1.0"), 400),
    ("a body", upgrade_request(headers=[KEY, V13, b"Content-Length: 3"]) + b"abc", 400),
]


@test
async def badly_made_websocket_handshakes_are_refused_without_a_101():
    with Flockd(FLOCKD, "--boids", BOIDS) as d:
        for name, request, want in BAD_HANDSHAKES:
            status, head, _, closed = http_answer(d.port, request)
            assert (status, closed) == (want, True), (name, status, head[:200])
            if want == 426:
                assert "\r\nsec-websocket-version: 13" in head, (name, head)
        status, _, _, _ = http_answer(d.port, upgrade_request(path=b"/elsewhere"))
        assert status == 404, status
        RawWS(d.port).close()  # a well-made handshake still gets its 101
        assert json.loads(d.http("/healthz")[2])["clients"] <= 1
        await assert_healthy(d)


@test
def a_connection_past_the_per_address_or_client_limit_gets_an_http_refusal_not_a_101():
    with Flockd(FLOCKD, "--boids", BOIDS, "--max-per-ip", "2") as d:
        held = [RawWS(d.port) for _ in range(2)]
        for _ in range(3):
            status, head, _, closed = http_answer(d.port, upgrade_request())
            assert (status, closed) == (429, True), (status, head[:200])
        assert limit_hits(d, "connections_per_ip") == 3
        held.pop().close()
        time.sleep(0.3)
        held.append(RawWS(d.port))  # the freed place is taken again
        for c in held:
            c.close()
    with Flockd(FLOCKD, "--boids", BOIDS, "--max-clients", "1") as d:
        held = RawWS(d.port)
        status, head, _, closed = http_answer(d.port, upgrade_request())
        assert (status, closed) == (503, True), (status, head[:200])
        assert limit_hits(d, "connections") == 1
        held.close()


class BoundWS(RawWS):
    """A RawWS from a chosen loopback source address (127.0.0.0/8 is all
    this machine's)."""

    def __init__(self, port, source):
        real = socket.create_connection
        socket.create_connection = lambda addr, timeout=None: real(addr, timeout, (source, 0))
        try:
            super().__init__(port)
        finally:
            socket.create_connection = real

    def command(self, **cmd):
        """The command's reply, the message with its id (a roster or an
        availability message may come before it, PROTOCOL.md §1)."""
        self.send(frame(1, json.dumps(cmd).encode()))
        while True:
            r = self.replies(1)[0]
            if r.get("id") == cmd.get("id"):
                return r


def logged(d, text, timeout=5):
    """True once flockd's stderr (read by a thread) holds a line with text."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if any(text in l for l in d.stderr):
            return True
        time.sleep(0.05)
    return False


def admin_join(port, source, token):
    ws = BoundWS(port, source)
    r = ws.command(cmd="join", id=1, room="default", role="admin", token=token)
    ws.close()
    return r


@test
async def admin_token_guesses_from_new_connections_are_delayed_per_address_and_overall():
    with Flockd(FLOCKD, "--boids", BOIDS, "--admin-token", "right-token") as d:
        # Each guess on a connection of its own: the per-connection rate
        # limit never sees more than one.
        got = [admin_join(d.port, "127.0.0.2", "guess%d" % i)["code"] for i in range(6)]
        assert got == ["forbidden"] * 6, got  # five free tries, the sixth costs 1 s
        r = admin_join(d.port, "127.0.0.2", "right-token")
        assert r["type"] == "error" and r["code"] == "rate_limited", r  # unchecked while it waits
        assert admin_join(d.port, "127.0.0.3", "right-token")["type"] == "ack"  # another address
        time.sleep(1.1)
        assert admin_join(d.port, "127.0.0.2", "right-token")["type"] == "ack"
        assert d.metric("flockd_auth_failures_total") == 6
        assert limit_hits(d, "auth") == 1
        assert logged(d, "failed admin token from 127.0.0.2"), d.stderr[-5:]
        await assert_healthy(d)
    # Many addresses, each within its free tries, together past
    # --auth-tries-all recent failures (one a second is forgotten): then
    # every address waits.
    with Flockd(FLOCKD, "--boids", BOIDS, "--admin-token", "right-token",
                "--auth-tries-all", "10") as d:
        codes = []
        for k in range(10):
            for i in range(4):
                codes.append(admin_join(d.port, "127.0.1.%d" % k, "g%d" % i)["code"])
                if codes[-1] == "rate_limited":
                    break
            if codes[-1] == "rate_limited":
                break
        assert codes[-1] == "rate_limited" and len(codes) > 11, codes
        assert codes[:11] == ["forbidden"] * 11, codes
        r = admin_join(d.port, "127.0.2.1", "right-token")
        assert r["type"] == "error" and r["code"] == "rate_limited", r
        assert logged(d, "from every address"), d.stderr[-5:]
        await assert_healthy(d)
    with Flockd(FLOCKD, "--boids", BOIDS, "--admin-token", "right-token", "--auth-tries", "1") as d:
        got = [admin_join(d.port, "127.0.0.2", "guess%d" % i)["code"] for i in range(3)]
        assert got == ["forbidden", "forbidden", "rate_limited"], got


@test
async def pipelined_joins_get_one_reply_each_in_order_and_welcomes_are_not_replies():
    with Flockd(FLOCKD, "--boids", BOIDS, "--allow-create", "1", *NO_RATE_LIMIT) as d:
        raw = RawWS(d.port)
        cmds = []
        for k in range(20):
            cmds += [{"cmd": "join", "room": "r%d" % (k % 3), "role": "viewer"},
                     {"cmd": "ping"},
                     # refused by the lobby (the room is a sandbox), not the parser
                     {"cmd": "join", "room": "r%d" % (k % 3), "role": "viewer", "mode": "rts"},
                     {"cmd": "join", "room": "r%d" % ((k + 1) % 3), "role": "admin"},
                     {"cmd": "ping"}]
        for i, c in enumerate(cmds):
            c["id"] = i
        raw.send(b"".join(frame(1, json.dumps(c).encode()) for c in cmds))
        got, welcomes = [], 0
        while len(got) < len(cmds):
            opcode, payload = raw.recv_frame()
            if opcode != 1:
                continue
            m = json.loads(payload)
            if m["type"] == "welcome":
                welcomes += 1
                assert got and got[-1]["type"] == "ack" and cmds[got[-1]["id"]]["cmd"] == "join", \
                    (m, got[-1:])
            elif m["type"] in ("ack", "error"):
                got.append(m)
        assert [r["id"] for r in got] == list(range(len(cmds))), [r["id"] for r in got]
        kinds = [(cmds[r["id"]]["cmd"], r["type"]) for r in got]
        assert kinds.count(("join", "ack")) == 40 and welcomes == 40, (kinds, welcomes)
        assert kinds.count(("join", "error")) == 20, kinds
        raw.close()
        await assert_healthy(d)


@test
async def a_frame_announcing_more_than_max_message_is_closed_with_1009_on_its_first_bytes():
    with Flockd(FLOCKD, "--boids", BOIDS) as d:
        for announced in (1 << 20, 4097, 1 << 40):
            ws = RawWS(d.port, timeout=3)
            head = bytes([0x81, 0x80 | 127]) + struct.pack(">Q", announced) + b"abcd"
            t0 = time.time()
            ws.send(head + bytes(100))  # then nothing more
            code = ws.close_code()
            ws.close()
            assert code == 1009 and time.time() - t0 < 2.5, (announced, code)
        # Fragments: the running total with the announced rest counts too.
        ws = RawWS(d.port, timeout=3)
        ws.send(frame(1, b"a" * 3000, fin=False)
                + bytes([0x00, 0x80 | 126]) + struct.pack(">H", 2000) + b"abcd" + bytes(10))
        assert ws.close_code() == 1009
        ws.close()
        # A message of exactly max-message still passes.
        ws = RawWS(d.port)
        msg = b'{"cmd":"ping","id":"full"}'.ljust(4096)
        ws.send(frame(1, msg))
        r = ws.replies(1)[0]
        assert r["type"] == "ack" and r["id"] == "full", r
        ws.close()
        await assert_healthy(d)


@test
async def a_close_frame_with_a_one_byte_body_is_answered_with_1002():
    with Flockd(FLOCKD, "--boids", BOIDS) as d:
        assert close_code_after(d.port, frame(8, b"x")) == 1002
        assert close_code_after(d.port, frame(8, b"")) == 1005  # empty: answered empty
        assert close_code_after(d.port, frame(8, struct.pack(">H", 1000) + b"bye")) == 1000
        assert close_code_after(d.port, frame(8, struct.pack(">H", 999))) == 1002
        await assert_healthy(d)


@timing
async def a_client_that_sends_commands_but_never_answers_pings_is_not_idle():
    with Flockd(FLOCKD, "--boids", "200", "--ping-interval", "1", "--idle-timeout", "2") as d:
        def busy():
            ws = RawWS(d.port)  # raw: it never answers a ping
            t0 = time.time()
            for i in range(10):  # 5 s, past the idle timeout twice
                ws.send(frame(1, b'{"cmd":"ping","id":%d}' % i))
                r = ws.replies(1)[0]
                assert r["type"] == "ack" and r["id"] == i, r
                time.sleep(0.5)
            ws.close()
            return time.time() - t0

        def silent():
            ws = RawWS(d.port, timeout=10)
            t0 = time.time()
            code = ws.close_code()  # pings come, none is answered
            ws.close()
            return time.time() - t0, code

        busy_s, (silent_s, _) = await asyncio.gather(asyncio.to_thread(busy),
                                                     asyncio.to_thread(silent))
        print(f"  busy client alive {busy_s:.1f} s; silent one closed after {silent_s:.1f} s",
              flush=True)
        assert busy_s > 4.5, busy_s
        # The rule stays for connections that send nothing: closed (before
        # RawWS's 10 s timeout), about 2 s after their last pong was due.
        assert silent_s < 9, silent_s
        timely(silent_s < 6, silent_s)
        await assert_healthy(d)


@test
async def ticks_total_counts_only_ticks_that_ran_not_a_paused_rooms_periods():
    with Flockd(FLOCKD, "--boids", "200") as d:
        viewer = await Client.connect(d.url)
        await paused_world(viewer)
        await asyncio.sleep(0.2)
        t0 = d.metric("flockd_ticks_total")
        timed0 = d.metric("flockd_tick_duration_seconds_count")
        # Its periods run (30 of them: half a second at 60 Hz, longer on a
        # starved machine) and not one of them ticks.
        for _ in range(100):
            await asyncio.sleep(0.1)
            if d.metric("flockd_tick_duration_seconds_count") > timed0 + 30:
                break
        assert d.metric("flockd_tick_duration_seconds_count") > timed0 + 30
        assert d.metric("flockd_ticks_total") == t0, "a paused room ticked"
        ack = await viewer.command("step", n=5)
        assert ack["type"] == "ack", ack
        await viewer.next_snapshot(ack["until"] - 1)  # the steps have run
        await asyncio.sleep(0.2)
        assert d.metric("flockd_ticks_total") == t0 + 5
        await viewer.command("resume")
        for _ in range(100):
            await asyncio.sleep(0.1)
            if d.metric("flockd_ticks_total") > t0 + 20:
                break
        assert d.metric("flockd_ticks_total") > t0 + 20
        await viewer.close()


if __name__ == "__main__":
    SUITE.main(skip_args=1)
