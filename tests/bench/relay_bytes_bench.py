#!/usr/bin/python3
"""What a relay node takes from NATS for one client of a big room: the
whole room in version 2 (frames, server/cluster/CLUSTER.md §3.1) against
a version 3 view (tiles, §3.8).

Usage:
    relay_bytes_bench.py FLOCKD [--boids 100000] [--seconds 10]
                         [--view 4000,3000,1600,900]

Starts nats-server -js with its monitoring port on free loopback ports
and two flockd nodes (--boids boids in `default`, a world grown to 1600
square units a boid); the first owns the room, the second relays it. With
no client, then with one client on the relay at a time (version 2, the
whole room; version 3 with the view x,y,w,h; version 3, the whole room),
after 4 s to settle, it reads for --seconds the bytes NATS sent the
relay's connection (nats-server's /connz out_bytes) and the frames the
relay relayed (its snapshots), and prints bytes a second and a snapshot,
and the client's bytes a snapshot. Bytes a snapshot do not depend on how
many snapshots a second a busy machine manages.
"""

import argparse
import asyncio
import glob
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request

import websockets


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get_json(url):
    with urllib.request.urlopen(url) as r:
        return json.load(r)


class Cluster:
    """nats-server (monitoring on) and two nodes, n1 first (it owns default)."""

    def __init__(self, flockd, boids):
        self.dir = tempfile.mkdtemp(prefix="relay-bytes-")
        self.monitor = free_port()
        os.makedirs(f"{self.dir}/ports")
        self.nats = subprocess.Popen(
            ["nats-server", "-a", "127.0.0.1", "-p", "-1", "-m", str(self.monitor), "-js",
             "-sd", f"{self.dir}/store", "--ports_file_dir", f"{self.dir}/ports"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while not glob.glob(f"{self.dir}/ports/*.ports"):
            time.sleep(0.05)
        time.sleep(0.2)
        with open(glob.glob(f"{self.dir}/ports/*.ports")[0]) as f:
            url = json.load(f)["nats"][0]
        self.nodes = {}
        for node in ("n1", "n2"):
            port = free_port()
            self.nodes[node] = (port, subprocess.Popen(
                [flockd, "--nats", url, "--node-id", node, "--port", str(port), "--boids",
                 str(boids), "--capacity", str(max(16384, boids * 5 // 4)),
                 "--checkpoint-every", "5"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            time.sleep(2.0 if node == "n1" else 3.0)

    def close(self):
        for _, p in self.nodes.values():
            p.terminate()
        for _, p in self.nodes.values():
            p.wait(30)
        self.nats.terminate()
        self.nats.wait(10)
        shutil.rmtree(self.dir, ignore_errors=True)

    def relay(self):
        rooms = get_json(f"http://127.0.0.1:{self.nodes['n1'][0]}/api/rooms")["rooms"]
        owner = next(r["node"] for r in rooms if r["name"] == "default")
        return next((n, port) for n, (port, _) in self.nodes.items() if n != owner)

    def out_bytes(self, node):
        conns = get_json(f"http://127.0.0.1:{self.monitor}/connz")["connections"]
        return next(c["out_bytes"] for c in conns if c.get("name") == node)


def relayed(port, node):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics") as r:
        text = r.read().decode()
    key = f'flockd_cluster_frames_relayed_total{{node="{node}"}}'
    return float(next(line.split()[-1] for line in text.splitlines() if line.startswith(key)))


async def client(port, protocol, view):
    ws = await websockets.connect(f"ws://127.0.0.1:{port}/ws", subprotocols=[protocol],
                                  max_size=None)
    got = {"bytes": 0, "frames": 0}

    async def read():
        try:
            async for m in ws:
                if isinstance(m, bytes):
                    got["bytes"] += len(m)
                    got["frames"] += 1
        except websockets.ConnectionClosed:
            pass
    reader = asyncio.ensure_future(read())
    if view:
        x, y, w, h = view
        await asyncio.sleep(0.5)
        await ws.send(json.dumps({"cmd": "view", "id": 1, "x": x, "y": y, "w": w, "h": h}))
    return ws, got, reader


async def measure(cl, node, port, seconds, got=None):
    b0, f0, g0 = cl.out_bytes(node), relayed(port, node), dict(got or {})
    await asyncio.sleep(seconds)
    rate = (cl.out_bytes(node) - b0) / seconds
    snaps = (relayed(port, node) - f0) / seconds
    line = f"{rate / 1e3:9.1f} kB/s, {rate / snaps / 1e3:7.2f} kB a snapshot ({snaps:.1f}/s)"
    if got:
        line += (f"; its client {(got['bytes'] - g0['bytes']) / seconds / snaps / 1e3:.2f} kB "
                 f"a snapshot, {(got['frames'] - g0['frames']) / seconds:.1f} frames/s")
    return line


async def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("flockd")
    ap.add_argument("--boids", type=int, default=100000)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--view", default="4000,3000,1600,900")
    a = ap.parse_args()
    view = [float(v) for v in a.view.split(",")]
    cl = Cluster(a.flockd, a.boids)
    try:
        node, port = cl.relay()
        print(f"relay {node}: bytes NATS sent it, {a.seconds:.0f} s each")
        print(f"  no client                       {await measure(cl, node, port, a.seconds)}")
        for label, protocol, v in (("version 2, the whole room", "flock.v2", None),
                                   (f"version 3, a {view[2]:.0f} x {view[3]:.0f} view",
                                    "flock.v3", view),
                                   ("version 3, the whole room", "flock.v3", None)):
            ws, got, reader = await client(port, protocol, v)
            await asyncio.sleep(4)  # key frames, and the whole room's tiles lingering, pass
            print(f"  {label:31s} {await measure(cl, node, port, a.seconds, got)}")
            await ws.close()
            await reader
            await asyncio.sleep(6)  # the relay's wants and the owner's feed lapse
    finally:
        cl.close()


if __name__ == "__main__":
    asyncio.run(main())
