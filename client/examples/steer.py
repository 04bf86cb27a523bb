#!/usr/bin/python3
"""Steer a flock group around a circle of waypoints on a flockd server.

A scripting example for the flockd wire protocol (proto/PROTOCOL.md), using
Debian's python3-websockets and asyncio:

  1. connect to /ws offering the flock.v2 and flock.v1 subprotocols and read
     the welcome; snapshots of either version are decoded with flocksnap.py
     (beside this script), which checks every version 2 frame; a frame it
     refuses is skipped and a key frame asked for (the `keyframe` command);
  2. give one group its own parameters and spawn boids into it;
  3. for each lap, place an obstacle in the middle of the circle, seek each
     waypoint in turn and move on once the group's centroid (wrap-aware on
     a torus world) is within --radius of it, then remove the obstacle;
  4. clean up (clear the target, despawn the boids) and exit 0.

Every command carries an id and waits for its ack; an error reply, a lost
connection or a waypoint not reached within --timeout seconds ends the
script with a non-zero status (1 failed, 3 cannot connect).

    /usr/bin/python3 client/examples/steer.py --url ws://127.0.0.1:8080/ws --laps 2
"""

import argparse
import ssl
import asyncio
import json
import math
import sys
import time

import websockets

import flocksnap

# Asking for a key frame at most this often after a refused frame.
KEYFRAME_EVERY_S = 0.5


def axis_mean(values, size, wrap):
    """Mean of coordinates on one axis; on a torus the circular mean."""
    if not wrap:
        return sum(values) / len(values)
    sx = sum(math.cos(2 * math.pi * v / size) for v in values)
    sy = sum(math.sin(2 * math.pi * v / size) for v in values)
    return (math.atan2(sy, sx) / (2 * math.pi) * size) % size


def axis_distance(a, b, size, wrap):
    d = abs(a - b)
    return min(d, size - d) if wrap else d


def centroid(snap, group):
    """The group's centroid (x, y), or None if it has no boids."""
    pts = [p for p, g in zip(snap.positions(), snap.group) if g == group]
    if not pts:
        return None
    return (axis_mean([p[0] for p in pts], snap.width, snap.wrap),
            axis_mean([p[1] for p in pts], snap.height, snap.wrap))


class Failure(Exception):
    pass


class Flock:
    """One connection: commands with ids and acks, the newest snapshot."""

    def __init__(self, ws, welcome):
        self.ws = ws
        self.welcome = welcome
        self.next_id = 1
        self.pending = {}
        self.snapshot = None
        self.snapshot_seen = asyncio.Event()
        self.decoder = flocksnap.Decoder()
        self.refused = 0
        self.keyframe_at = -KEYFRAME_EVERY_S
        self.reader = asyncio.ensure_future(self._read())

    @classmethod
    async def connect(cls, url, timeout, insecure=False):
        tls = None
        if url.startswith("wss://") and insecure:  # a self-signed certificate, say
            tls = ssl.create_default_context()
            tls.check_hostname = False
            tls.verify_mode = ssl.CERT_NONE
        ws = await asyncio.wait_for(
            websockets.connect(url, subprotocols=["flock.v2", "flock.v1"], max_size=None,
                               ssl=tls),
            timeout)
        welcome = json.loads(await asyncio.wait_for(ws.recv(), timeout))
        if welcome.get("type") != "welcome" or welcome.get("protocol") not in (1, 2):
            raise Failure(f"unexpected first message: {welcome}")
        return cls(ws, welcome)

    async def _read(self):
        try:
            async for msg in self.ws:
                if isinstance(msg, bytes):
                    self.take(msg)
                    continue
                reply = json.loads(msg)
                if reply.get("type") == "welcome":
                    self.decoder.forget()  # a new stream starts on a key frame
                fut = self.pending.pop(reply.get("id"), None)
                if fut and reply.get("type") in ("ack", "error"):
                    fut.set_result(reply)
        except websockets.ConnectionClosed:
            pass
        finally:
            for fut in self.pending.values():
                fut.set_exception(Failure("connection closed"))
            self.snapshot_seen.set()

    def take(self, msg):
        """Decodes a snapshot; a refused one is skipped, and a key frame asked for."""
        try:
            self.snapshot = self.decoder.decode(msg)
            self.snapshot_seen.set()
        except flocksnap.SnapshotError as e:
            self.refused += 1
            print(f"snapshot refused ({e.code}); asking for a key frame", file=sys.stderr)
            now = time.monotonic()
            if now - self.keyframe_at >= KEYFRAME_EVERY_S:
                self.keyframe_at = now
                asyncio.ensure_future(self.command("keyframe")).add_done_callback(
                    lambda f: f.exception())  # its reply or a lost connection: nothing to do

    async def command(self, cmd, timeout=5.0, **args):
        """Sends a command and returns its ack; raises Failure on an error reply."""
        i = self.next_id
        self.next_id += 1
        fut = asyncio.get_running_loop().create_future()
        self.pending[i] = fut
        await self.ws.send(json.dumps({"cmd": cmd, "id": i, **args}))
        try:
            reply = await asyncio.wait_for(fut, timeout)
        except asyncio.TimeoutError:
            raise Failure(f"{cmd}: no reply within {timeout} s") from None
        if reply["type"] == "error":
            raise Failure(f"{cmd} refused: {reply['code']}: {reply.get('message', '')}")
        return reply

    async def next_snapshot(self, timeout):
        self.snapshot_seen.clear()
        await asyncio.wait_for(self.snapshot_seen.wait(), timeout)
        if self.reader.done():
            raise Failure("connection closed")
        return self.snapshot

    async def close(self):
        await self.ws.close()
        await self.reader


def waypoints(width, height, count):
    """count points on a circle around the world's centre, counter-clockwise."""
    cx, cy, r = width / 2, height / 2, 0.3 * min(width, height)
    return [(cx + r * math.cos(2 * math.pi * k / count), cy + r * math.sin(2 * math.pi * k / count))
            for k in range(count)]


async def reach(flock, group, point, radius, timeout):
    """Waits until the group's centroid is within radius of point; returns (tick, distance)."""
    deadline = time.monotonic() + timeout
    best = math.inf
    while time.monotonic() < deadline:
        snap = await flock.next_snapshot(timeout)
        c = centroid(snap, group)
        if c is None:
            continue
        d = math.hypot(axis_distance(c[0], point[0], snap.width, snap.wrap),
                       axis_distance(c[1], point[1], snap.height, snap.wrap))
        best = min(best, d)
        if d <= radius:
            return snap.tick, d
    raise Failure(f"waypoint ({point[0]:.0f}, {point[1]:.0f}) not reached in {timeout} s "
                  f"(closest {best:.1f} units)")


async def tour(flock, opt):
    w = flock.welcome["world"]
    width, height, g = w["width"], w["height"], opt.group
    print(f"connected to {opt.url}: world {width:g} x {height:g} {w['edges']}, "
          f"{flock.welcome['snapshot_hz']:g} snapshots/s of version {flock.welcome['protocol']}",
          flush=True)
    await flock.command("params", group=g, own_group_only=1, max_speed=opt.speed,
                        arrive_radius=40)
    print(f"group {g}: flocks only with itself, max_speed {opt.speed:g}, arrive_radius 40",
          flush=True)
    points = waypoints(width, height, opt.waypoints)
    ack = await flock.command("spawn", n=opt.boids, group=g, x=points[0][0], y=points[0][1],
                              spread=40)
    print(f"spawned {ack['count']} boids in group {g} at ({points[0][0]:.0f}, {points[0][1]:.0f})",
          flush=True)
    start = time.monotonic()
    for lap in range(1, opt.laps + 1):
        r = 0.08 * min(width, height)
        ack = await flock.command("obstacle_add", x=width / 2, y=height / 2, r=r)
        obstacle = ack["obstacle"]
        print(f"lap {lap}/{opt.laps}: placed obstacle {obstacle} at ({width / 2:.0f}, "
              f"{height / 2:.0f}) r {r:.0f}", flush=True)
        for k in range(opt.waypoints):
            x, y = points[(k + 1) % opt.waypoints]
            await flock.command("seek", group=g, x=x, y=y)
            tick, d = await reach(flock, g, (x, y), opt.radius, opt.timeout)
            print(f"lap {lap}/{opt.laps}: reached waypoint {k + 1}/{opt.waypoints} "
                  f"({x:.0f}, {y:.0f}) at tick {tick}, centroid {d:.1f} units away", flush=True)
        await flock.command("obstacle_remove", obstacle=obstacle)
        print(f"lap {lap}/{opt.laps}: removed obstacle {obstacle}", flush=True)
    await flock.command("seek_clear", group=g)
    ack = await flock.command("despawn", n=opt.boids, group=g)
    print(f"despawned {ack['count']} boids; {opt.laps} lap(s) of {opt.waypoints} waypoints "
          f"in {time.monotonic() - start:.1f} s", flush=True)


async def main(opt):
    try:
        flock = await Flock.connect(opt.url, opt.timeout, opt.insecure)
    except (OSError, asyncio.TimeoutError, websockets.WebSocketException, Failure) as e:
        print(f"steer.py: cannot connect to {opt.url}: {e}", file=sys.stderr)
        return 3
    try:
        await tour(flock, opt)
        return 0
    except (Failure, asyncio.TimeoutError, websockets.ConnectionClosed) as e:
        print(f"steer.py: {e or 'timed out'}", file=sys.stderr)
        return 1
    finally:
        await flock.close()


def parse_args():
    p = argparse.ArgumentParser(description="Steer a flockd group around a circle of waypoints.")
    p.add_argument("--url", default="ws://127.0.0.1:8080/ws",
                   help="flockd WebSocket endpoint, ws:// or wss://")
    p.add_argument("--insecure", action="store_true",
                   help="wss://: accept a certificate that does not verify (self-signed)")
    p.add_argument("--laps", type=int, default=1, help="laps around the circle (default 1)")
    p.add_argument("--waypoints", type=int, default=6, help="waypoints on the circle (default 6)")
    p.add_argument("--group", type=int, default=1, help="group to spawn and steer, 0..255")
    p.add_argument("--boids", type=int, default=40, help="boids to spawn into the group")
    p.add_argument("--speed", type=float, default=160, help="the group's max_speed, units/s")
    p.add_argument("--radius", type=float, default=60,
                   help="a waypoint counts as reached when the centroid is this close")
    p.add_argument("--timeout", type=float, default=30,
                   help="seconds allowed per waypoint and for connecting")
    opt = p.parse_args()
    if opt.laps < 1 or opt.waypoints < 2 or not 0 <= opt.group <= 255 or opt.boids < 1:
        p.error("need --laps >= 1, --waypoints >= 2, --group 0..255, --boids >= 1")
    return opt


if __name__ == "__main__":
    sys.exit(asyncio.run(main(parse_args())))
