#!/usr/bin/python3
"""Steer a flock group around a circle of waypoints on a flockd server.

An example of the flockd Python library (client/python): it gives one group
its own parameters and boids, then, lap after lap, places an obstacle in the
middle of the circle and seeks each waypoint in turn, moving on once the
group's centroid is within --radius of it; at the end, and on any failure or
Ctrl-C, it removes what it added and restores the group's parameters. Exit
status: 0 done, 1 failed (an error reply, the connection lost for good, a
waypoint not reached within --timeout seconds), 2 bad arguments, 3 cannot
connect.

    /usr/bin/python3 client/examples/steer.py --url ws://127.0.0.1:8080/ws --laps 2
"""

import argparse
import math
import os
import sys
import time

try:
    import flockd
except ImportError:  # run from the source tree, not installed
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    import flockd

PARAMS = ("own_group_only", "max_speed", "arrive_radius")


def waypoints(width, height, count):
    """count points on a circle around the world's centre, counter-clockwise."""
    cx, cy, r = width / 2, height / 2, 0.3 * min(width, height)
    return [(cx + r * math.cos(2 * math.pi * k / count), cy + r * math.sin(2 * math.pi * k / count))
            for k in range(count)]


def away(snap, group, point):
    """How far the group's centroid is from point (wrap-aware); inf without boids."""
    centre = snap.centroid(group)
    return snap.distance(centre, point) if centre else math.inf


def group_params(welcome, group):
    """The group's current values of PARAMS, to restore them at the end."""
    values = dict(welcome.values.to_dict())
    values.update((welcome.groups.get(str(group)) if welcome.groups else None) or {})
    return {name: values[name] for name in PARAMS}


def tour(c, opt, added):
    world, g = c.welcome.world, opt.group
    print(f"connected to {opt.url}: world {world.width:g} x {world.height:g} {world.edges}, "
          f"{c.welcome.snapshot_hz:g} snapshots/s of version {c.protocol}", flush=True)
    added["params"] = group_params(c.welcome, g)
    c.params(group=g, own_group_only=1, max_speed=opt.speed, arrive_radius=40)
    print(f"group {g}: flocks only with itself, max_speed {opt.speed:g}, arrive_radius 40",
          flush=True)
    points = waypoints(world.width, world.height, opt.waypoints)
    added["boids"] = opt.boids  # noted first: Ctrl-C may land while the server applies it
    count = c.spawn(n=opt.boids, group=g, x=points[0][0], y=points[0][1], spread=40).count
    print(f"spawned {count} boids in group {g} at ({points[0][0]:.0f}, {points[0][1]:.0f})",
          flush=True)
    start = time.monotonic()
    for lap in range(1, opt.laps + 1):
        r = 0.08 * min(world.width, world.height)
        added["obstacle"] = (world.width / 2, world.height / 2, r)  # its id once acked
        added["obstacle"] = c.obstacle_add(x=world.width / 2, y=world.height / 2, r=r).obstacle
        print(f"lap {lap}/{opt.laps}: placed obstacle {added['obstacle']} at "
              f"({world.width / 2:.0f}, {world.height / 2:.0f}) r {r:.0f}", flush=True)
        for k in range(opt.waypoints):
            x, y = points[(k + 1) % opt.waypoints]
            c.seek(group=g, x=x, y=y)
            try:
                snap = c.wait_for(lambda s: away(s, g, (x, y)) <= opt.radius, opt.timeout)
            except flockd.Timeout:
                raise flockd.FlockdError(f"waypoint ({x:.0f}, {y:.0f}) not reached in "
                                         f"{opt.timeout:g} s") from None
            print(f"lap {lap}/{opt.laps}: reached waypoint {k + 1}/{opt.waypoints} "
                  f"({x:.0f}, {y:.0f}) at tick {snap.tick}, centroid "
                  f"{away(snap, g, (x, y)):.1f} units away", flush=True)
        obstacle = added.pop("obstacle")
        c.obstacle_remove(obstacle=obstacle)
        print(f"lap {lap}/{opt.laps}: removed obstacle {obstacle}", flush=True)
    print(f"{opt.laps} lap(s) of {opt.waypoints} waypoints in {time.monotonic() - start:.1f} s",
          flush=True)


def clean_up(c, opt, added):
    """Removes what the tour added, whatever stopped it."""
    c.ping()  # replies come in order: whatever was sent before has been applied now
    obstacle = added.get("obstacle")
    if isinstance(obstacle, tuple):  # interrupted while placing it: find it
        obstacle = next((o.id for o in c.next_snapshot(timeout=5).obstacles
                         if math.dist((o.x, o.y, o.r), obstacle) < 0.01), None)
    if obstacle is not None:
        c.obstacle_remove(obstacle=obstacle)
        print(f"removed obstacle {obstacle}", flush=True)
    c.seek_clear(group=opt.group)
    if added.get("boids"):
        print(f"despawned {c.despawn(n=added['boids'], group=opt.group).count} boids", flush=True)
    if "params" in added:
        c.params(group=opt.group, **added["params"])


def main(opt):
    try:
        c = flockd.connect(opt.url, insecure=opt.insecure, connect_timeout=10)
    except flockd.ConnectError as e:
        print(f"steer.py: {e}", file=sys.stderr)
        return 3
    added = {}
    with c:
        try:
            tour(c, opt, added)
            return 0
        except flockd.FlockdError as e:
            print(f"steer.py: {e}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            print("steer.py: interrupted", file=sys.stderr)
            return 130
        finally:
            try:
                clean_up(c, opt, added)
            except flockd.FlockdError as e:
                print(f"steer.py: cleaning up: {e}", file=sys.stderr)


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
    p.add_argument("--timeout", type=float, default=30, help="seconds allowed per waypoint")
    opt = p.parse_args()
    if opt.laps < 1 or opt.waypoints < 2 or not 0 <= opt.group <= 255 or opt.boids < 1:
        p.error("need --laps >= 1, --waypoints >= 2, --group 0..255, --boids >= 1")
    return opt


if __name__ == "__main__":
    sys.exit(main(parse_args()))
