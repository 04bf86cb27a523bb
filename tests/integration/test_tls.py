#!/usr/bin/python3
"""TLS: flockd with --tls-cert and --tls-key serves https:// and wss:// on
its one port; a missing, unreadable, mismatched or expired pair stops it at
start with a message naming the file; SIGHUP loads renewed files without
dropping a connection and refuses a bad pair; flockctl (send, watch, load)
and the Python example speak wss:// (--insecure for the self-signed
certificates made here with openssl).

Usage: test_tls.py FLOCKD_BINARY FLOCKCTL_BINARY [TEST_NAME...]
"""

import asyncio
import os
import signal
import socket
import subprocess
import tempfile
import time

from flockd_harness import (Client, Flockd, Suite, arg, der_of, install_pair, self_signed_pair,
                            served_certificate, unverified)

FLOCKD = arg(0, "build/server/flockd")
FLOCKCTL = arg(1, "build/client/cli/flockctl")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SUITE = Suite(timeout=120)
test = SUITE.test
TMP = tempfile.mkdtemp(prefix="flockd-tls-")


def make_pair(name, days=2, cn="localhost"):
    """NAME.crt and NAME.key in TMP; days < 0 makes one that expired."""
    return self_signed_pair(TMP, name, days, cn)


A = make_pair("a", cn="first")
B = make_pair("b", cn="second")
OLD = make_pair("old", days=-1)


def live_pair():
    crt, key = os.path.join(TMP, "live.crt"), os.path.join(TMP, "live.key")
    install_pair(A, crt, key)
    return crt, key


async def connect_wss(d):
    return await Client.connect(d.url, ssl=unverified())


@test
async def one_port_serves_https_and_wss_and_refuses_plain_http():
    crt, key = A
    with Flockd(FLOCKD, "--tls-cert", crt, "--tls-key", key, "--boids", "200") as d:
        assert any("https and wss with certificate" in line for line in d.stdout), d.stdout
        status, ctype, body = d.http("/healthz")
        assert status == 200 and '"status":"ok"' in body, body
        status, ctype, page = d.http("/")
        assert status == 200 and "text/html" in ctype and "<canvas" in page
        assert served_certificate(d.port) == der_of(crt)
        # HTTP/1.1 only: a browser offered h2 would ask for its WebSocket
        # over h2 (RFC 8441), which flockd does not serve.
        ctx = unverified()
        ctx.set_alpn_protocols(["h2", "http/1.1"])
        with socket.create_connection(("127.0.0.1", d.port), timeout=5) as raw:
            with ctx.wrap_socket(raw) as tls:
                assert tls.selected_alpn_protocol() == "http/1.1", tls.selected_alpn_protocol()
        c = await connect_wss(d)
        assert c.welcome["protocol"] in (1, 2)
        await c.wait_for(lambda: len(c.snapshots) >= 5, 5)
        r = await c.command("ping")
        assert r["type"] == "ack", r
        await c.close()
        # Plain HTTP on the TLS port gets no HTTP answer.
        with socket.create_connection(("127.0.0.1", d.port), timeout=5) as s:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            try:
                answer = s.recv(100)
            except (ConnectionResetError, socket.timeout):
                answer = b""
            assert not answer.startswith(b"HTTP/1.1 200"), answer


def start_fails(*args):
    p = subprocess.run([FLOCKD, "--port", "0", "--host", "127.0.0.1", *args],
                       capture_output=True, text=True, timeout=20)
    return p.returncode, p.stderr


@test
async def a_bad_pair_stops_flockd_at_start_naming_the_file():
    crt, key = A
    missing = os.path.join(TMP, "missing.crt")
    cases = [
        ((missing, key), missing, "No such file"),
        ((crt, B[1]), B[1], "is not the key of certificate"),
        ((OLD[0], OLD[1]), OLD[0], "expired on"),
        ((key, key), key, "no PEM certificate"),
        ((crt, crt), crt, "no unencrypted PEM private key"),
        ((TMP, key), TMP, "no PEM certificate"),
    ]
    for (c, k), named, why in cases:
        rc, err = start_fails("--tls-cert", c, "--tls-key", k)
        assert rc != 0 and named in err and why in err, (c, k, rc, err)
    rc, err = start_fails("--tls-cert", crt)
    assert rc == 2 and "--tls-key" in err, (rc, err)


@test
async def sighup_loads_renewed_files_and_keeps_open_connections():
    crt, key = live_pair()
    with Flockd(FLOCKD, "--tls-cert", crt, "--tls-key", key, "--boids", "100") as d:
        assert served_certificate(d.port) == der_of(A[0])
        old = await connect_wss(d)
        install_pair(B, crt, key)
        d.proc.send_signal(signal.SIGHUP)
        deadline = time.time() + 5
        while served_certificate(d.port) != der_of(B[0]):
            assert time.time() < deadline, "the renewed certificate was never served"
            await asyncio.sleep(0.1)
        assert any("reloaded" in line for line in d.stdout), d.stdout
        # The connection made before the reload goes on.
        n = len(old.snapshots)
        await old.wait_for(lambda: len(old.snapshots) >= n + 5, 5)
        assert (await old.command("ping"))["type"] == "ack"
        # A mismatched pair is refused; the renewed one stays in use.
        install_pair((B[0], A[1]), crt, key)
        d.proc.send_signal(signal.SIGHUP)
        deadline = time.time() + 5
        while not any("refused" in line for line in d.stderr):
            assert time.time() < deadline, d.stderr
            await asyncio.sleep(0.1)
        assert served_certificate(d.port) == der_of(B[0])
        fresh = await connect_wss(d)
        await fresh.close()
        await old.close()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def plain_request(port, request):
    """Sends request bytes to port; returns the answer's head (text)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(request)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        return data.split(b"\r\n\r\n")[0].decode("latin-1")


@test
async def the_redirect_port_sends_every_request_on_to_https():
    crt, key = A
    rp = free_port()
    with Flockd(FLOCKD, "--tls-cert", crt, "--tls-key", key, "--tls-redirect-port", str(rp),
                "--boids", "100") as d:
        assert any(f"http://127.0.0.1:{rp} answers with redirects" in line for line in d.stdout)
        cases = [
            (b"GET /index.html?room=x&role=viewer HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
             f"https://127.0.0.1:{d.port}/index.html?room=x&role=viewer"),
            (b"GET / HTTP/1.1\r\nHost: flock.example.org:80\r\n\r\n",
             f"https://flock.example.org:{d.port}/"),
            (b"GET /healthz HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n",
             f"https://[::1]:{d.port}/healthz"),
            # A Host that is no plain name: the address the request came to.
            (b"GET /a HTTP/1.1\r\nHost: evil/../x\r\n\r\n", f"https://127.0.0.1:{d.port}/a"),
            # No WebSocket on the plain port: the upgrade is sent on too, no 101.
            (b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
             b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
             b"Sec-WebSocket-Version: 13\r\n\r\n", f"https://127.0.0.1:{d.port}/ws"),
        ]
        for request, location in cases:
            head = plain_request(rp, request)
            assert head.startswith("HTTP/1.1 301 "), (request, head)
            got = [line.split(":", 1)[1].strip() for line in head.split("\r\n")
                   if line.lower().startswith("location:")]
            assert got == [location], (request, head)
        long_path = b"GET /" + b"a" * 1100 + b" HTTP/1.1\r\nHost: x\r\n\r\n"
        assert plain_request(rp, long_path).startswith("HTTP/1.1 400 "), "a long path"
        # The TLS port is what it was.
        assert d.http("/healthz")[0] == 200
    rc, err = start_fails("--tls-redirect-port", str(rp))
    assert rc == 2 and "--tls-redirect-port needs --tls-cert" in err, (rc, err)


async def run(*argv, timeout=60):
    p = await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.PIPE,
                                             stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(p.communicate(), timeout)
    return p.returncode, out.decode(), err.decode()


@test
async def flockctl_and_the_python_example_speak_wss():
    crt, key = A
    with Flockd(FLOCKD, "--tls-cert", crt, "--tls-key", key, "--boids", "100") as d:
        rc, out, err = await run(FLOCKCTL, "send", "--insecure", "--url", d.url,
                                 '{"cmd":"ping","id":1}')
        assert rc == 0 and '"type":"ack"' in out, (rc, out, err)
        rc, out, err = await run(FLOCKCTL, "send", "--url", d.url, '{"cmd":"ping"}')
        assert rc == 3 and "--insecure" in err, (rc, out, err)
        rc, out, err = await run(FLOCKCTL, "watch", "--insecure", "--seconds", "1.5", "--url",
                                 d.url)
        assert rc == 0 and '"refused":0' in out and '"boids":100' in out, (rc, out, err)
        rc, out, err = await run(FLOCKCTL, "load", "--insecure", "--url", d.url, "--clients",
                                 "20", "--seconds", "1.5")
        assert rc == 0 and '"connected":20,' in out and '"failures":0,' in out, (rc, out, err)
        rc, out, err = await run(FLOCKCTL, "load", "--url", d.url, "--clients", "2", "--seconds",
                                 "0.5")
        assert rc == 3 and "certificate verify failed" in out, (rc, out, err)
        rc, out, err = await run("/usr/bin/python3", os.path.join(ROOT, "client", "examples",
                                                                  "steer.py"),
                                 "--url", d.url, "--insecure", "--waypoints", "2",
                                 "--timeout", "40", timeout=120)
        assert rc == 0 and "reached waypoint 2/2" in out, (rc, out, err)


if __name__ == "__main__":
    try:
        SUITE.main(skip_args=2)
    finally:
        subprocess.run(["rm", "-rf", TMP])
