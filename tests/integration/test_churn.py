#!/usr/bin/python3
"""Connection churn: many short-lived WebSocket connections must not leak.

Usage: test_churn.py FLOCKD_BINARY [CONNECTIONS] [TEST_NAME...]

One flockd, one viewer watching throughout. Worker threads open and drop
connections over plain sockets, each with a real handshake (HTTP Upgrade,
Sec-WebSocket-Key, subprotocol flock.v1, the 101 and the welcome checked),
ending them in every way a client can:

- a clean close frame (1000), answered by the server's close frame;
- a reset (SO_LINGER 0) right after the welcome, without a close frame;
- a plain FIN after the welcome, without a close frame;
- mid-handshake: half an HTTP request then a FIN (the client waits for the
  server to close), or the whole request then a reset as soon as the 101
  starts to arrive.

Every connection waits for the server to have seen it, so flockd never
holds more than about THREADS connections at once: the test measures what a
connection leaves behind, not how far a backlog of unserved connections can
push the heap's high-water mark (clients that send half a request and leave
without waiting can make flockd hold thousands of sockets for a while).

Server RSS (VmRSS) is read once the first WARMUP connections are done and
all of them are gone, then again after the last: the growth must stay within
RSS_BOUND_KIB (1 MiB by default; a leak of one 16-byte allocation per
connection shows as about 2.5 MiB). Afterwards the server must be healthy:
/healthz ok, client count back to the viewers, the viewer still getting
snapshots, a new client welcomed and answered; leaving the Flockd block
checks that flockd exits 0 without a sanitizer report.

Settings: CONNECTIONS from the second argument or FLOCKD_CHURN_CONNECTIONS
(default 70,000; 100,000 or more by hand), FLOCKD_CHURN_RSS_KIB (default 1024), FLOCKD_CHURN_THREADS
(default 32 concurrent connections).

Sanitizer builds run 20,000 connections by default and do not check the RSS
bound. Under AddressSanitizer freed memory waits in a quarantine and
redzones and shadow pages count in RSS, so RSS says nothing about live
memory: the run looks for memory errors and for leaks (LeakSanitizer when
flockd exits). Under ThreadSanitizer it looks for data races while sessions
come and go. The figures are printed either way. The last line is
"N passed, N failed".
"""

import asyncio
import base64
import json
import os
import socket
import struct
import threading
import time

from flockd_harness import Client, Flockd, Suite, arg, sanitizer_of

FLOCKD = arg(0, "build/server/flockd")
SANITIZER = sanitizer_of(FLOCKD)
DEFAULT_CONNECTIONS = 20_000 if SANITIZER else 70_000
# A second argument of digits is the number of connections; others are test names.
COUNT_ARG = arg(1) if (arg(1) or "").isdigit() else None
CONNECTIONS = int(COUNT_ARG or os.environ.get("FLOCKD_CHURN_CONNECTIONS", DEFAULT_CONNECTIONS))
RSS_BOUND_KIB = int(os.environ.get("FLOCKD_CHURN_RSS_KIB", 1024))
THREADS = int(os.environ.get("FLOCKD_CHURN_THREADS", 32))
# Connections before the first RSS reading: lets the allocator, lws' pools
# and the kernel's socket buffers reach their working size.
WARMUP = min(5_000, CONNECTIONS // 10)
BOIDS = "500"

SUITE = Suite(timeout=900)
test = SUITE.test

# How connection i ends, by i % 16: half clean, a quarter reset, the rest
# split between a FIN without a close frame and two mid-handshake drops.
CLEAN, RESET, FIN, HALF_REQUEST, NO_RESPONSE = range(5)
ENDINGS = [CLEAN] * 8 + [RESET] * 4 + [FIN] * 2 + [HALF_REQUEST, NO_RESPONSE]


def request():
    key = base64.b64encode(os.urandom(16)).decode()
    return ("GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
            "Connection: Upgrade\r\nSec-WebSocket-Key: " + key + "\r\n"
            "Sec-WebSocket-Protocol: flock.v1\r\n"
            "Sec-WebSocket-Version: 13\r\n\r\n").encode()


# A masked client close frame with status 1000 (RFC 6455 §5.5.1).
def close_frame():
    mask = os.urandom(4)
    payload = struct.pack(">H", 1000)
    return bytes([0x88, 0x80 | 2]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


class Conn:
    """Just enough of a WebSocket client to handshake, read frames, close."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buf = b""

    def _fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise EOFError
        self.buf += chunk

    def handshake(self):
        self.sock.sendall(request())
        while b"\r\n\r\n" not in self.buf:
            self._fill()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        assert head.startswith(b"HTTP/1.1 101"), head[:80]
        assert b"flock.v1" in head, head
        opcode, payload = self.frame()
        assert opcode == 1 and b'"type":"welcome"' in payload, (opcode, payload[:80])

    def frame(self):
        """(opcode, payload) of the next server frame."""
        while len(self.buf) < 2:
            self._fill()
        n, off = self.buf[1] & 0x7F, 2
        if n >= 126:
            off = 4 if n == 126 else 10
            while len(self.buf) < off:
                self._fill()
            n = int.from_bytes(self.buf[2:off], "big")
        while len(self.buf) < off + n:
            self._fill()
        opcode, payload = self.buf[0] & 0x0F, self.buf[off:off + n]
        self.buf = self.buf[off + n:]
        return opcode, payload

    def close_cleanly(self):
        """Sends close 1000 and reads (skipping snapshots) to the server's
        close frame."""
        self.sock.sendall(close_frame())
        try:
            while self.frame()[0] != 8:
                pass
        except (EOFError, ConnectionResetError):
            raise AssertionError("no close frame in answer to a clean close") from None
        finally:
            self.sock.close()

    def wait_for_server_close(self):
        """Reads until the server closes (it may answer first)."""
        try:
            while self.sock.recv(65536):
                pass
        except ConnectionResetError:
            pass
        finally:
            self.sock.close()

    def reset(self):
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.sock.close()


def churn_one(port, ending):
    """One connection that ends as `ending` says; raises if it does not go
    as the protocol says it must. Each waits for the server to be done
    with it, so the server never holds more than THREADS of them."""
    c = Conn(port)
    if ending == HALF_REQUEST:
        req = request()
        c.sock.sendall(req[:len(req) // 2])
        c.sock.shutdown(socket.SHUT_WR)
        c.wait_for_server_close()
    elif ending == NO_RESPONSE:
        c.sock.sendall(request())
        c.sock.recv(1, socket.MSG_PEEK)  # the 101 is on its way: reset unread
        c.reset()
    else:
        c.handshake()
        if ending == CLEAN:
            c.close_cleanly()
        elif ending == RESET:
            c.reset()
        else:
            c.sock.close()


def churn(port, first, count, threads=THREADS):
    """Runs connections first .. first+count-1 on `threads` threads; returns
    the failures as a list of strings (at most 10 kept)."""
    failures, lock = [], threading.Lock()
    failed = [0]

    def worker(k):
        for i in range(first + k, first + count, threads):
            try:
                churn_one(port, ENDINGS[i % len(ENDINGS)])
            except (OSError, EOFError, AssertionError) as e:
                with lock:
                    failed[0] += 1
                    if len(failures) < 10:
                        failures.append(f"connection {i}: {type(e).__name__}: {e}")

    ts = [threading.Thread(target=worker, args=(k,)) for k in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return failed[0], failures


def health(d):
    _, _, body = d.http("/healthz")
    return json.loads(body)


async def settled_rss(d, viewers):
    """VmRSS in KiB once only the viewers are left connected."""
    deadline = time.time() + 30
    while True:
        h = await asyncio.to_thread(health, d)
        if h["clients"] == viewers:
            break
        assert time.time() < deadline, f"{h['clients']} clients still connected"
        await asyncio.sleep(0.1)
    await asyncio.sleep(0.5)
    return d.rss_kib()


@test
async def connection_churn_leaves_rss_flat_and_the_server_healthy():
    with Flockd(FLOCKD, "--boids", BOIDS) as d:
        viewer = await Client.connect(d.url)
        await viewer.next_snapshot()

        failed, failures = await asyncio.to_thread(churn, d.port, 0, WARMUP)
        assert failed == 0, (failed, failures)
        rss0 = await settled_rss(d, 1)
        t0 = time.time()
        failed, failures = await asyncio.to_thread(churn, d.port, WARMUP, CONNECTIONS - WARMUP)
        seconds = time.time() - t0
        assert failed == 0, (failed, failures)
        rss1 = await settled_rss(d, 1)
        rate = (CONNECTIONS - WARMUP) / seconds
        print(f"  rss before {rss0} kB after {rss1} kB (growth {rss1 - rss0} kB), "
              f"{CONNECTIONS - WARMUP} connections in {seconds:.1f} s after {WARMUP} warm-up "
              f"({rate:.0f}/s, {THREADS} at a time)"
              + (f"; {SANITIZER} build: RSS bound not checked" if SANITIZER else ""),
              flush=True)
        if not SANITIZER:
            assert rss1 - rss0 <= RSS_BOUND_KIB, (rss0, rss1, RSS_BOUND_KIB)

        # Healthy afterwards: the viewer still gets snapshots, the handshakes
        # were all counted, a newcomer is welcomed and answered.
        last = viewer.snapshots[-1][1]["tick"]
        snap = await viewer.next_snapshot(last, timeout=5)
        assert snap["tick"] > last
        handshakes = sum(1 for i in range(CONNECTIONS)
                         if ENDINGS[i % len(ENDINGS)] in (CLEAN, RESET, FIN))
        accepted = await asyncio.to_thread(d.metric, "flockd_connections_total")
        assert handshakes + 1 <= accepted <= CONNECTIONS + 1, (handshakes, accepted)
        newcomer = await Client.connect(d.url)
        ack = await newcomer.command("ping")
        assert ack["type"] == "ack", ack
        await newcomer.next_snapshot()
        h = await asyncio.to_thread(health, d)
        assert h["status"] == "ok" and h["clients"] == 2, h
        await newcomer.close()
        await viewer.close()
        await settled_rss(d, 0)
        assert await asyncio.to_thread(d.metric, "flockd_clients") == 0


if __name__ == "__main__":
    SUITE.main(skip_args=2 if COUNT_ARG else 1)
