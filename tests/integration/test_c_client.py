#!/usr/bin/python3
"""Integration test: the C client (flock_client) against a real flockd.

Usage: test_c_client.py FLOCKD_BINARY FLOCK_CLIENT_BINARY
Starts flockd on an ephemeral loopback port (2000 boids, 20 Hz snapshots),
runs 50 concurrent flock_client connections for 4 s with two commands sent
on the first one, checks the figures of its last output line, then stops
flockd with SIGTERM. The last line is "N passed, N failed".
"""

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from flockd_harness import Flockd  # noqa: E402

CLIENTS = 50


def run_client(binary, url):
    """Runs flock_client; returns (exit status, stdout lines, last-line JSON)."""
    cmd = [binary, "--url", url, "--clients", str(CLIENTS), "--seconds", "4",
           "--expect-rate", "18.5",
           "--send", '{"cmd":"ping","id":7}',
           "--send", '{"cmd":"seek","id":8,"group":0,"x":-5,"y":1}']
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    sys.stdout.write(proc.stdout)
    sys.stderr.write(proc.stderr)
    lines = proc.stdout.strip().splitlines()
    try:
        summary = json.loads(lines[-1])
    except (IndexError, ValueError):
        summary = {}
    return proc.returncode, lines, summary


def reply_with_id(summary, i):
    return next((r for r in summary.get("replies", []) if isinstance(r, dict)
                 and r.get("id") == i), None)


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    flockd, client = sys.argv[1], sys.argv[2]
    results = []

    def check(name, ok, detail=""):
        results.append(ok)
        print(("ok    " if ok else "FAIL  ") + name + ("" if ok else f"  ({detail})"))

    d = Flockd(flockd, "--boids", "2000", "--snapshot-hz", "20")
    with d:
        rc, lines, s = run_client(client, d.url)
        ping, seek = reply_with_id(s, 7), reply_with_id(s, 8)
        check("every client connects", s.get("connected") == CLIENTS, s.get("connected"))
        check("every client gets one welcome", s.get("welcomes") == CLIENTS, s.get("welcomes"))
        check("snapshots arrive and every one decodes",
              s.get("frames", 0) > 0 and s.get("decode_errors") == 0,
              (s.get("frames"), s.get("decode_errors")))
        check("the ping is acked with its id",
              ping is not None and ping.get("type") == "ack" and isinstance(ping.get("tick"), int),
              ping)
        check("a seek outside the world is refused with out_of_range",
              seek is not None and seek.get("type") == "error"
              and seek.get("code") == "out_of_range", seek)
        check("each reply is printed as one line",
              sum(1 for ln in lines if ln.startswith("reply: {")) == 2, lines[:3])
        check("every client receives at least 18.5 snapshots per second",
              s.get("frames_per_s_per_client_min", 0) >= 18.5,
              s.get("frames_per_s_per_client_min"))
        check("flock_client exits 0", rc == 0, rc)
        try:
            status = d.terminate(timeout=10)
        except subprocess.TimeoutExpired:
            status = "timeout"
        check("flockd exits 0 on SIGTERM", status == 0, status)

    passed = sum(results)
    failed = len(results) - passed
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
