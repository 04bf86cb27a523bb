#!/usr/bin/python3
"""What flockd's memory costs: resident memory per boid and per connected
viewer, as the slope of RSS against the boids of the default room and
against the viewers connected to it, for one binary or for several side by
side.

Per boid: flockd starts with --boids B and the same --capacity (131072
unless told) for each B of --boids-list, so that what the capacity reserves
is the same in each run; one version 1 and one version 2 viewer watch for
a few seconds, so that the room encodes both kinds of frame, then flockd's
RSS is read from /proc/PID/status ten times over two seconds: the median
VmRSS (with the anonymous/file split), the highest sample, and VmHWM, the
peak since start. Bytes per boid is the least-squares slope of the median;
bytes per slot of capacity, what an empty room of that capacity holds
beyond one of 16,384 (--capacity's default), per slot.

Per viewer: flockd starts with the default room of --viewer-boids boids;
`flockctl load` connects each count of --viewers-list (version 2, the
browser's) and flockd's RSS is read while they all watch. Bytes per viewer is
the slope. What the kernel holds for flockd's end of the sockets (`ss -tm`:
receive and send buffers) is printed beside it; RSS does not count it.

Usage: mem_bench.py FLOCKD [OTHER_FLOCKD ...] [--flockctl PATH]
       [--boids-list 0,10000,100000] [--viewers-list 0,1000,3000]
       [--capacity 131072] [--viewer-boids 1000] [--settle S]
Prints one line per measurement and a summary per binary. Needs a file
descriptor limit above the largest viewer count (it raises its own soft
limit to the hard one).
"""

import argparse
import os
import re
import resource
import subprocess
import sys
import threading
import time

SMALL_CAPACITY = 16384  # --capacity's default
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def status(pid):
    """VmRSS, VmHWM (the peak), RssAnon and RssFile of process pid in bytes,
    and its thread count."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
                out[k] = int(v.split()[0]) * 1024
            elif k == "Threads":
                out[k] = int(v)
    return out


def sampled_status(pid, samples=10, every=0.2):
    """status() taken `samples` times `every` seconds apart: the one of
    median VmRSS (RSS moves as buffers come and go), with the highest VmRSS
    seen as RssMax."""
    seen = []
    for k in range(samples):
        if k:
            time.sleep(every)
        seen.append(status(pid))
    seen.sort(key=lambda st: st["VmRSS"])
    out = dict(seen[len(seen) // 2])
    out["RssMax"] = seen[-1]["VmRSS"]
    return out


def kernel_socket_bytes(port):
    """What the kernel holds for flockd's established connections on port:
    receive and send buffers allocated, queued and forward-allocated
    (`ss -tm` skmem r + t + w + f, summed over the server's ends)."""
    out = subprocess.run(["ss", "-tmnH", "state", "established", f"sport = :{port}"],
                         capture_output=True, text=True).stdout
    total = 0
    for m in re.finditer(r"skmem:\(([^)]*)\)", out):
        fields = dict(re.match(r"([a-z]+)(\d+)", kv).groups() for kv in m.group(1).split(","))
        total += sum(int(fields.get(k, 0)) for k in ("r", "t", "w", "f"))
    return total


class Flockd:
    """One flockd on a free loopback port, its port read from its log."""

    def __init__(self, binary, args):
        self.p = subprocess.Popen(
            [binary, "--port", "0", "--host", "127.0.0.1", "--workers", "2",
             "--web-root", os.path.join(ROOT, "client", "web")] + args,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.port = None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            line = self.p.stdout.readline()
            if not line:
                break
            m = re.search(r"flockd listening on https?://[^ ]*:(\d+)", line)
            if m:
                self.port = int(m.group(1))
                break
        if self.port is None:
            self.stop()
            raise RuntimeError(f"{binary} did not start")
        # keep draining its log so it never blocks on a full pipe
        threading.Thread(target=lambda: [None for _ in self.p.stdout], daemon=True).start()

    def url(self):
        return f"ws://127.0.0.1:{self.port}/ws"

    def stop(self):
        self.p.terminate()
        try:
            self.p.wait(20)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def slope(xs, ys):
    """Least-squares slope of ys against xs."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den if den else 0.0


def load(flockctl, url, clients, seconds, protocol):
    """Starts `flockctl load` with clients viewers for seconds; returns the process."""
    return subprocess.Popen(
        [flockctl, "load", "--url", url, "--clients", str(clients), "--seconds", str(seconds),
         "--protocol", str(protocol), "--timeout", "20", "--connect-rate", "5"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def connected_viewers(port):
    """flockd's connected clients as /metrics counts them, or -1."""
    import urllib.request
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            for line in r.read().decode().splitlines():
                if line.startswith("flockd_clients "):
                    return int(float(line.split()[1]))
    except Exception:
        pass
    return -1


def watched_room(binary, flockctl, boids, cap, settle):
    """sampled_status() of a flockd whose default room holds `boids` of
    `cap`, a version 1 and a version 2 viewer watching."""
    f = Flockd(binary, ["--boids", str(boids), "--capacity", str(cap)])
    try:
        watchers = [load(flockctl, f.url(), 1, settle + 5, v) for v in (1, 2)]
        time.sleep(settle)
        st = sampled_status(f.p.pid)
        for w in watchers:
            w.wait(60)
    finally:
        f.stop()
    print(f"{binary}: boids {boids:>7} capacity {cap:>7}: RSS {st['VmRSS'] / 1e6:8.2f} MB "
          f"(anon {st['RssAnon'] / 1e6:.2f} MB, file {st['RssFile'] / 1e6:.2f} MB; "
          f"highest sample {st['RssMax'] / 1e6:.2f} MB, peak since start "
          f"{st['VmHWM'] / 1e6:.2f} MB; {st['Threads']} threads)", flush=True)
    return st


def per_boid(binary, flockctl, boids_list, capacity, settle):
    """Bytes per boid at one capacity, and per slot of capacity: the RSS of
    an empty room of `capacity` against one of SMALL_CAPACITY."""
    xs, ys = [], []
    for b in boids_list:
        xs.append(b)
        ys.append(watched_room(binary, flockctl, b, capacity, settle)["VmRSS"])
    small = watched_room(binary, flockctl, 0, SMALL_CAPACITY, settle)["VmRSS"]
    empty = watched_room(binary, flockctl, 0, capacity, settle)["VmRSS"] \
        if 0 not in boids_list else ys[boids_list.index(0)]
    return slope(xs, ys), (empty - small) / (capacity - SMALL_CAPACITY)


def per_viewer(binary, flockctl, viewers_list, viewer_boids, settle):
    xs, ys, ks = [], [], []
    for n in viewers_list:
        f = Flockd(binary, ["--boids", str(viewer_boids), "--max-clients", "100000",
                            "--max-per-ip", "100000"])
        try:
            w = None
            if n:
                connect_s = n / 5000 + 5
                w = load(flockctl, f.url(), n, settle + 5, 2)
                deadline = time.monotonic() + connect_s + 30
                while time.monotonic() < deadline and connected_viewers(f.port) < n:
                    time.sleep(0.5)
            time.sleep(settle)
            st = sampled_status(f.p.pid)
            got = connected_viewers(f.port)
            k = kernel_socket_bytes(f.port)
            if w:
                w.terminate()
                w.wait(60)
        finally:
            f.stop()
        xs.append(n)
        ys.append(st["VmRSS"])
        ks.append(k)
        print(f"{binary}: viewers {n:>6} (connected {got}): RSS {st['VmRSS'] / 1e6:8.2f} MB "
              f"(anon {st['RssAnon'] / 1e6:.2f} MB); kernel socket buffers {ks[-1] / 1e6:.2f} MB", flush=True)
    return slope(xs, ys), slope(xs, ks)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("binaries", nargs="+")
    ap.add_argument("--flockctl", default=os.path.join(ROOT, "build", "client", "cli", "flockctl"))
    ap.add_argument("--boids-list", default="0,10000,100000")
    ap.add_argument("--capacity", type=int, default=131072)
    ap.add_argument("--viewers-list", default="0,1000,3000")
    ap.add_argument("--viewer-boids", type=int, default=1000)
    ap.add_argument("--settle", type=float, default=4)
    a = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if hard < max(int(v) for v in a.viewers_list.split(",")) + 100:
        sys.exit(f"the file descriptor limit ({hard}) is below the viewers asked for")
    boids = [int(v) for v in a.boids_list.split(",")]
    viewers = [int(v) for v in a.viewers_list.split(",")]
    summary = []
    for b in a.binaries:
        pb, pc = per_boid(b, a.flockctl, boids, a.capacity, a.settle) if len(boids) > 1 \
            else (0.0, 0.0)
        pv, pk = per_viewer(b, a.flockctl, viewers, a.viewer_boids, a.settle) \
            if len(viewers) > 1 else (0.0, 0.0)
        summary.append((b, pb, pc, pv, pk))
    for b, pb, pc, pv, pk in summary:
        print(f"{b}: {pb:.1f} bytes per boid and {pc:.1f} per slot of capacity; "
              f"{pv / 1024:.2f} KiB per viewer "
              f"(and in the kernel's socket buffers: {pk / 1024:.2f} KiB per viewer)")


if __name__ == "__main__":
    main()
