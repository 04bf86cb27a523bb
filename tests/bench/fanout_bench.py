#!/usr/bin/python3
"""What delivering snapshots to many viewers costs flockd, side by side.

Usage:
    fanout_bench.py FLOCKD FLOCKCTL [--boids 10000] [--viewers 2000]
                    [--seconds 15] [--rounds 2] [--paused] [--cpus 0:1]
                    [--compare protocol=1 protocol=2] [--uws-frames F --uws-welcome W
                    [--uws-hz 20]] [-- FLOCKD_FLAGS...]

Starts one flockd (ephemeral loopback port, --boids boids, limits raised
for the viewers) and, for each --compare case in turn, --rounds times
alternating, runs `flockctl load --clients VIEWERS --seconds S` against it
with the case's flockctl option (protocol=N: --protocol N). flockd's CPU
(utime + stime from /proc) is read over the measured window only (flockctl
prints when it starts measuring); its CPU with no viewer at all, measured
first over the same length, is subtracted, so what remains is the cost of
delivery. One row per run (with each service thread's share of the
deliveries when there are several, and the TCP segments the machine sent
per delivery: on loopback the frames' and the viewers' acks), then the
mean per case and the ratio of each case's CPU per delivered frame to the
first case's.

--cpus F:L runs flockd on the CPUs F and the load generator on the CPUs L
(lists as taskset takes them: 0, 0-1, 0,2): with the viewers' work off
flockd's cores, what a delivery costs flockd alone.

A case may set the viewers' receive buffer (rcvbuf=262144: flockctl load
--rcvbuf), give each version 3 viewer a view of its own (views=random:
flockctl load --views random), name flockd flags (flockd=--net-threads+2,
or boids=250000 for a room of another size) or another build
(binary=PATH, to set builds side by side): each case with flockd flags or
a build gets its own flockd, started before its rounds and stopped after
(its flags after the common ones: the later --boids wins). A case
uws=PATH runs tests/bench/uws_pubsub (a uWebSockets broadcast server,
built by tests/bench/uws_build.sh) instead of flockd, sending the frames
of --uws-frames (`snapbench --dump`) with the welcome of --uws-welcome at
--uws-hz: the yardstick of what a delivery of the same frames costs.
The machine is shared: compare the cases of one run, not runs of
different days.
"""

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_s(pid):
    """flockd's user + system CPU seconds so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port, seconds):
    """Whether a server listens on the loopback port within `seconds`."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


def cpu_list(text):
    """The CPUs of a list such as 0, 0-3 or 0,2."""
    cpus = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def pinned(cpus):
    """A preexec_fn that keeps the child on cpus (None: anywhere)."""
    return (lambda: os.sched_setaffinity(0, cpus)) if cpus else None


def tcp_segments_sent():
    """The machine's Tcp OutSegs so far (/proc/net/snmp)."""
    with open("/proc/net/snmp") as f:
        rows = [line.split() for line in f if line.startswith("Tcp:")]
    return int(rows[1][rows[0].index("OutSegs")])


class Flockd:
    def __init__(self, binary, boids, viewers, extra, cpus=None):
        self.port = free_port()
        args = [binary, "--host", "127.0.0.1", "--port", str(self.port), "--boids", str(boids),
                "--max-clients", str(viewers + 64), "--max-per-ip", str(viewers + 64)] + extra
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     text=True, preexec_fn=pinned(cpus))
        if not listening(self.port, 60):  # a room of a million boids takes a while to fill
            self.stop()
            sys.exit(f"fanout_bench: flockd did not listen on {self.port}")

    @property
    def url(self):
        return f"ws://127.0.0.1:{self.port}/ws"

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


class Uws:
    """tests/bench/uws_pubsub on an ephemeral loopback port."""

    def __init__(self, binary, welcome, frames, hz, cpus=None):
        self.port = free_port()
        self.proc = subprocess.Popen([binary, str(self.port), welcome, frames, str(hz)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                     preexec_fn=pinned(cpus))
        if not listening(self.port, 10):
            self.stop()
            sys.exit(f"fanout_bench: uws_pubsub did not listen on {self.port}")

    url = Flockd.url
    stop = Flockd.stop


def split_flockd_flags(argv):
    """The script's own arguments and the flockd flags after a "--"."""
    if "--" not in argv:
        return argv, []
    return argv[:argv.index("--")], argv[argv.index("--") + 1:]


def idle_rate(d, seconds):
    c0 = cpu_s(d.proc.pid)
    time.sleep(seconds)
    return (cpu_s(d.proc.pid) - c0) / seconds


def deliveries_by_thread(d):
    """flockd_net_deliveries_total of each service thread, from /metrics
    (none for uws_pubsub)."""
    if isinstance(d, Uws):
        return []
    with urllib.request.urlopen(f"http://127.0.0.1:{d.port}/metrics", timeout=10) as f:
        text = f.read().decode()
    return [int(m.group(1)) for m in
            re.finditer(r'^flockd_net_deliveries_total\{thread="\d+"\} (\d+)$', text, re.M)]


def load(flockctl, d, viewers, seconds, options, cpus=None):
    """Runs flockctl load; flockd's CPU and each service thread's
    deliveries are read when its connect phase ends (the measuring window
    starts) and when it exits."""
    cmd = [flockctl, "load", "--url", d.url, "--clients", str(viewers), "--seconds",
           str(seconds), "--threads", "2", "--timeout", "30"] + options
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=pinned(cpus))
    c0 = t0 = None
    for line in p.stderr:
        if c0 is None and "measuring" in line:
            c0, t0 = cpu_s(d.proc.pid), time.monotonic()
            n0, s0 = deliveries_by_thread(d), tcp_segments_sent()
    out = p.stdout.read()
    p.wait()
    c1, t1, s1 = cpu_s(d.proc.pid), time.monotonic(), tcp_segments_sent()
    if c0 is not None:
        n = [b - a for a, b in zip(n0, deliveries_by_thread(d))]
        r_shares = [x / sum(n) for x in n] if sum(n) else []
    last = out.strip().splitlines()[-1] if out.strip() else "{}"
    r = json.loads(last)
    if c0 is None:
        sys.exit(f"fanout_bench: flockctl load never started measuring: {out.strip()[-300:]}")
    r["thread_shares"] = r_shares
    r["segments"] = s1 - s0
    r["window_s"] = t1 - t0
    r["cpu_s"] = c1 - c0
    r["exit"] = p.returncode
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("flockd")
    ap.add_argument("flockctl")
    ap.add_argument("--boids", type=int, default=10000)
    ap.add_argument("--viewers", type=int, default=2000)
    ap.add_argument("--seconds", type=float, default=15)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--paused", action="store_true", help="pause the room (delivery only)")
    ap.add_argument("--compare", nargs="+", default=["protocol=1", "protocol=2"])
    ap.add_argument("--uws-frames", help="uws cases: the frames to send (snapbench --dump)")
    ap.add_argument("--uws-welcome", help="uws cases: the welcome to send (a flockd's JSON)")
    ap.add_argument("--uws-hz", type=float, default=20, help="uws cases: frames per second")
    ap.add_argument("--cpus", metavar="F:L",
                    help="flockd on CPUs F, the load generator on CPUs L (e.g. 0:1)")
    argv, extra = split_flockd_flags(sys.argv[1:])
    a = ap.parse_args(argv)
    own_cpus = load_cpus = None
    if a.cpus:
        f_cpus, sep, l_cpus = a.cpus.partition(":")
        try:
            own_cpus, load_cpus = cpu_list(f_cpus), cpu_list(l_cpus)
        except ValueError:
            sep = ""
        if not sep or not own_cpus or not load_cpus:
            sys.exit(f"fanout_bench: --cpus wants F:L, CPU lists such as 0:1, not {a.cpus!r}")
        if not (own_cpus | load_cpus) <= os.sched_getaffinity(0):
            sys.exit(f"fanout_bench: --cpus {a.cpus}: this machine runs us on CPUs "
                     f"{sorted(os.sched_getaffinity(0))}")

    cases = []
    for c in a.compare:
        opts, flags, binary, uws = [], [], None, None
        for part in c.split(","):
            key, _, value = part.partition("=")
            if key == "protocol":
                opts += ["--protocol", value]
            elif key == "views":
                opts += ["--views", value]
            elif key == "boids":
                flags += ["--boids", value]
            elif key == "rcvbuf":
                opts += ["--rcvbuf", value]
            elif key == "flockd":
                flags += value.split("+")
            elif key == "binary":
                binary = value
            elif key == "uws":
                uws = value
            else:
                sys.exit(f"fanout_bench: unknown case part {part!r}")
        if uws and not (a.uws_frames and a.uws_welcome):
            sys.exit("fanout_bench: a uws case needs --uws-frames and --uws-welcome")
        cases.append((c, opts, flags, binary or uws and ("uws", uws)))

    rows = {c[0]: [] for c in cases}
    own = any(f or b for _, _, f, b in cases)  # some case needs a flockd of its own
    shared = None if own else Flockd(a.flockd, a.boids, a.viewers, extra, own_cpus)
    try:
        print(f"# {a.viewers} viewers of {a.boids} boids, {a.seconds:g} s each, "
              f"{a.rounds} rounds{' (paused)' if a.paused else ''}"
              + (f", flockd on CPUs {f_cpus}, the viewers on {l_cpus}" if a.cpus else ""),
              flush=True)
        for rnd in range(a.rounds):
            for name, opts, flags, binary in cases:
                if isinstance(binary, tuple):
                    d = Uws(binary[1], a.uws_welcome, a.uws_frames, a.uws_hz, own_cpus)
                else:
                    d = shared or Flockd(binary or a.flockd, a.boids, a.viewers, extra + flags,
                                         own_cpus)
                try:
                    if a.paused and not isinstance(d, Uws):
                        subprocess.run([a.flockctl, "send", "--url", d.url, '{"cmd":"pause"}'],
                                       check=True, stdout=subprocess.DEVNULL)
                    idle = idle_rate(d, min(5.0, a.seconds))
                    r = load(a.flockctl, d, a.viewers, a.seconds, opts, load_cpus)
                finally:
                    if not shared:
                        d.stop()
                frames = r.get("frames_per_s", 0) * r.get("seconds", a.seconds)
                deliver_cpu = r["cpu_s"] - idle * r["window_s"]
                r["us_per_frame"] = 1e6 * deliver_cpu / frames if frames else float("nan")
                r["cpu_share"] = r["cpu_s"] / r["window_s"]
                r["segs_per_frame"] = r["segments"] / frames if frames else float("nan")
                rows[name].append(r)
                print(f"{name:<28} round {rnd + 1}: connected {r.get('connected')}, "
                      f"failures {r.get('failures')}, fps p50 {r.get('client_rate_p50')}, "
                      f"p1 {r.get('client_rate_p1')}, age p99 {r.get('age_ms_p99')} ms, "
                      f"{r.get('frames_per_s', 0):.0f} deliveries/s, "
                      f"{r.get('mb_per_s', 0):.1f} MB/s, {r.get('bytes_per_boid')} B/boid, "
                      f"flockd {100 * r['cpu_share']:.0f}% of a core "
                      f"(idle {100 * idle:.1f}%), {r['us_per_frame']:.1f} us/delivery, "
                      f"{r['segs_per_frame']:.2f} segments/delivery"
                      + (", threads " + " / ".join(f"{100 * x:.0f}" for x in r["thread_shares"])
                         + " % of deliveries" if len(r["thread_shares"]) > 1 else ""),
                      flush=True)
    finally:
        if shared:
            shared.stop()

    base = None
    print("# means")
    for name, *_ in cases:
        rs = rows[name]
        mean = lambda k: sum(r.get(k, 0) or 0 for r in rs) / len(rs)  # noqa: E731
        us = mean("us_per_frame")
        base = base or us
        print(f"{name:<28} fps p50 {mean('client_rate_p50'):.1f}, p1 {mean('client_rate_p1'):.1f}, "
              f"{mean('frames_per_s'):.0f} deliveries/s, {mean('mb_per_s'):.1f} MB/s, "
              f"{us:.1f} us flockd CPU per delivery ({us / base:.2f}x the first)")


if __name__ == "__main__":
    main()
