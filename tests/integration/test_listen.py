#!/usr/bin/python3
"""Where flockd listens: exactly the address --host names.

Usage: test_listen.py FLOCKD_BINARY
Each test starts flockd with a --host, reads the addresses of the process's
listening sockets from /proc (the kernel's view, not flockd's log line) and
connects through this machine's addresses: the one named answers, the others
refuse. Each service thread (--net-threads, default one per core) has its own
socket on that address and port. An address that is not this machine's, or not a numeric address, is
refused at start with a clear error. The last line is "N passed, N failed".
"""

import ipaddress
import os
import socket
import subprocess
import sys

from flockd_harness import Flockd, Suite

FLOCKD = sys.argv[1] if len(sys.argv) > 1 else "build/server/flockd"
SUITE = Suite(timeout=60)
test = SUITE.test


def socket_inodes(pid):
    """The inodes of the sockets process pid holds."""
    out = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            out.add(link[8:-1])
    return out


def proc_address(hexaddr):
    """An address as /proc/net/tcp{,6} writes it (32-bit words in host
    order, little-endian here) as text."""
    raw = bytes.fromhex(hexaddr)
    raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    return str(ipaddress.ip_address(raw))


def listening(pid):
    """(address, port) of every TCP socket process pid listens on."""
    mine = socket_inodes(pid)
    found = []
    for table in ("tcp", "tcp6"):
        with open(f"/proc/{pid}/net/{table}") as f:
            next(f)
            for line in f:
                cols = line.split()
                local, state, inode = cols[1], cols[3], cols[9]
                if state == "0A" and inode in mine:  # 0A: LISTEN
                    addr, port = local.split(":")
                    found.append((proc_address(addr), int(port, 16)))
    return sorted(found)


def other_address(family):
    """This machine's address on its default route (no packet is sent), or
    None: an address that is not loopback."""
    probe = "192.0.2.1" if family == socket.AF_INET else "2001:db8::1"
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as s:
            s.connect((probe, 9))
            addr = s.getsockname()[0]
    except OSError:
        return None
    return None if ipaddress.ip_address(addr).is_loopback else addr


def answers(addr, port):
    """True if GET /healthz at addr:port answers 200; False if the
    connection is refused."""
    try:
        with socket.create_connection((addr, port), timeout=5) as s:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            return s.recv(64).startswith(b"HTTP/1.1 200")
    except ConnectionRefusedError:
        return False


def reachable(port):
    """Which of this machine's addresses answer on port."""
    addrs = ["127.0.0.1", "::1", other_address(socket.AF_INET), other_address(socket.AF_INET6)]
    return {a: answers(a, port) for a in addrs if a}


# Service threads by default: one per online CPU (at most 64).
DEFAULT_THREADS = min(os.cpu_count() or 1, 64)


def check_only(host, expect_listening, expect_answering, threads=None):
    extra = ["--net-threads", str(threads)] if threads else []
    with Flockd(FLOCKD, "--boids", "10", "--host", host, *extra) as d:
        got = listening(d.proc.pid)
        print(f"  --host {host}: listening on {got}", flush=True)
        per = threads or DEFAULT_THREADS
        assert got == [(a, d.port) for a in expect_listening for _ in range(per)], got
        answered = reachable(d.port)
        print(f"  --host {host}: answers {answered}", flush=True)
        for addr, ok in answered.items():
            # An address flockd does not listen on (asserted above) may still
            # answer: another test's server bound the same port number there.
            foreign = ok and not expect_answering(addr)
            assert ok == expect_answering(addr) or foreign, (host, addr, ok)
            if foreign:
                print(f"  {addr}:{d.port} answered: another process's socket", flush=True)


@test
def an_ipv4_loopback_host_listens_there_only_and_other_addresses_refuse():
    check_only("127.0.0.1", ["127.0.0.1"], lambda a: a == "127.0.0.1")


@test
def an_ipv6_loopback_host_listens_there_only_and_ipv4_refuses():
    check_only("::1", ["::1"], lambda a: a == "::1")


@test
def one_service_thread_listens_on_one_socket_and_three_on_three():
    check_only("127.0.0.1", ["127.0.0.1"], lambda a: a == "127.0.0.1", threads=1)
    check_only("127.0.0.1", ["127.0.0.1"], lambda a: a == "127.0.0.1", threads=3)


@test
def the_machines_own_address_listens_there_only_and_loopback_refuses():
    addr = other_address(socket.AF_INET)
    if addr is None:
        print("  (no non-loopback IPv4 address: skipped)")
        return
    check_only(addr, [addr], lambda a: a == addr)


@test
def zero_address_listens_on_every_ipv4_address_and_no_ipv6_one():
    check_only("0.0.0.0", ["0.0.0.0"], lambda a: ":" not in a)


@test
def unspecified_ipv6_address_listens_on_every_address():
    check_only("::", ["::"], lambda a: True)


def refused_at_start(host):
    """Runs flockd with --host host; returns (exit status, stderr)."""
    p = subprocess.run([FLOCKD, "--port", "0", "--host", host], capture_output=True, text=True,
                       timeout=20)
    assert "listening on" not in p.stdout, p.stdout
    return p.returncode, p.stderr


@test
def an_address_of_another_machine_is_refused_at_start_with_a_clear_error():
    for host in ("203.0.113.9", "2001:db8::7"):
        rc, err = refused_at_start(host)
        print(f"  --host {host}: exit {rc}: {err.strip()}", flush=True)
        assert rc == 1, (host, rc, err)
        assert f"cannot serve on {host} port 0: --host is not an address of this machine" in err, err


@test
def a_name_or_a_short_form_is_refused_at_start_as_not_a_numeric_address():
    for host in ("localhost", "1.2.3", "127.1", "::1::", "0x7f000001"):
        rc, err = refused_at_start(host)
        assert rc == 1, (host, rc, err)
        assert "--host is not a numeric IPv4 or IPv6 address" in err, (host, err)


@test
def a_port_in_use_on_that_address_is_refused_at_start():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        p = subprocess.run([FLOCKD, "--port", str(port), "--host", "127.0.0.1"],
                           capture_output=True, text=True, timeout=20)
        assert p.returncode == 1, (p.returncode, p.stderr)
        assert "the port is in use on that address" in p.stderr, p.stderr


if __name__ == "__main__":
    SUITE.main(skip_args=1)
