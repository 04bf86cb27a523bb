#!/usr/bin/python3
"""What an idle flockd costs: CPU of a flockd with an empty default room
and two tick threads, no client, over a window, against the same for a
second binary if one is given (side by side, alternating, so the shared
machine's noise falls on both).

Usage: idle_bench.py FLOCKD [OTHER_FLOCKD] [--seconds S] [--rounds N]
Prints one line per run and the medians, in % of one core.
"""

import argparse
import os
import statistics
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def cpu_seconds(pid):
    """User and system CPU time process pid has used, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def idle_share(binary, seconds):
    p = subprocess.Popen([binary, "--port", "0", "--host", "127.0.0.1", "--boids", "0",
                          "--workers", "2", "--web-root", os.path.join(ROOT, "client", "web")],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(2)  # past start-up
        c0, t0 = cpu_seconds(p.pid), time.monotonic()
        time.sleep(seconds)
        c1, t1 = cpu_seconds(p.pid), time.monotonic()
        return (c1 - c0) / (t1 - t0) * 100
    finally:
        p.terminate()
        p.wait(10)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("binaries", nargs="+")
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    runs = {b: [] for b in a.binaries}
    for r in range(a.rounds):
        for b in a.binaries:
            share = idle_share(b, a.seconds)
            runs[b].append(share)
            print(f"round {r + 1}: {b}: {share:.3f} % of a core over {a.seconds:g} s", flush=True)
    for b, shares in runs.items():
        print(f"median {b}: {statistics.median(shares):.3f} %")


if __name__ == "__main__":
    main()
