#!/usr/bin/python3
"""Integration tests: the scripting examples in client/examples.

Usage: test_examples.py FLOCKD_BINARY [TEST_NAME...]
Runs the Python example (steer.py, Debian's python3-websockets) and the Node
example (steer.mjs, npm `ws` installed by `make deps`) against a real flockd
while an observer connection records every snapshot. Checks that each script
exits 0, prints every waypoint it reached, and that the snapshots show its
group's centroid near each of those waypoints and its obstacle placed and
removed; then that failures end with a non-zero status. The last line is
"N passed, N failed".
"""

import asyncio
import math
import os
import re
import shutil
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from flockd_harness import Client, Flockd, Suite, arg  # noqa: E402

FLOCKD = arg(0, "build/server/flockd")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "client", "examples")
NODE = shutil.which("node") or "node"
SCRIPTS = {
    "python": ["/usr/bin/python3", os.path.join(EXAMPLES, "steer.py")],
    "node": [NODE, os.path.join(EXAMPLES, "steer.mjs")],
}
GROUP, RADIUS, WAYPOINTS = 3, 60, 4
REACHED = re.compile(r"reached waypoint (\d+)/(\d+) \((-?\d+), (-?\d+)\) at tick (\d+)")
PLACED = re.compile(r"placed obstacle (\d+)")
SUITE = Suite(timeout=300)
test = SUITE.test


async def run(argv, timeout=240):
    p = await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.PIPE,
                                             stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(p.communicate(), timeout)
    return p.returncode, out.decode(), err.decode()


def group_centroid(snap, group):
    """Wrap-aware centroid of a group's boids, or None."""
    pts = [(x, y) for x, y, _, g in snap["boids"] if g == group]
    if not pts:
        return None

    def mean(vals, size):
        sx = sum(math.cos(2 * math.pi * v / size) for v in vals)
        sy = sum(math.sin(2 * math.pi * v / size) for v in vals)
        return (math.atan2(sy, sx) / (2 * math.pi) * size) % size
    return mean([p[0] for p in pts], snap["width"]), mean([p[1] for p in pts], snap["height"])


def wrap_distance(a, b, w, h):
    dx, dy = abs(a[0] - b[0]), abs(a[1] - b[1])
    return math.hypot(min(dx, w - dx), min(dy, h - dy))


async def tour_is_seen_in_the_snapshots(name):
    with Flockd(FLOCKD, "--boids", "300") as d:
        observer = await Client.connect(d.url)
        rc, out, err = await run(SCRIPTS[name] + [
            "--url", d.url, "--laps", "1", "--waypoints", str(WAYPOINTS),
            "--group", str(GROUP), "--radius", str(RADIUS), "--timeout", "60"])
        await asyncio.sleep(0.3)
        await observer.close()
        sys.stdout.write(out)
        assert rc == 0, (rc, err)
        # It took version 2 frames; the observer, version 1, sees the same ticks.
        assert "snapshots/s of version 2" in out and "refused" not in err, (out, err)
        reached = [tuple(map(int, m.groups())) for m in REACHED.finditer(out)]
        assert [r[0] for r in reached] == list(range(1, WAYPOINTS + 1)), out
        snaps = [s for _, s in observer.snapshots]
        w, h = snaps[0]["width"], snaps[0]["height"]
        for k, _, x, y, tick in reached:
            # The snapshot the script judged by (same tick) is within the
            # radius; allow for the printed coordinates being rounded.
            near = [wrap_distance(c, (x, y), w, h) for s in snaps if s["tick"] == tick
                    for c in [group_centroid(s, GROUP)] if c]
            assert near and min(near) <= RADIUS + 1, (k, x, y, tick, near)
        obstacle = int(PLACED.search(out).group(1))
        assert any(o[0] == obstacle for s in snaps for o in s["obstacles"]), "never placed"
        last = snaps[-1]
        assert all(o[0] != obstacle for o in last["obstacles"]), "not removed"
        assert all(g != GROUP for _, _, _, g in last["boids"]), "group not despawned"
        assert f"removed obstacle {obstacle}" in out and "despawned" in out


@test
async def python_example_steers_its_group_through_every_waypoint():
    await tour_is_seen_in_the_snapshots("python")


@test
async def node_example_steers_its_group_through_every_waypoint():
    await tour_is_seen_in_the_snapshots("node")


@test
async def examples_exit_non_zero_when_they_cannot_finish():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with Flockd(FLOCKD, "--boids", "50") as d:
        for name, argv in SCRIPTS.items():
            rc, _, err = await run(argv + ["--url", f"ws://127.0.0.1:{port}/ws",
                                           "--timeout", "2"])
            assert rc == 3 and "cannot connect" in err, (name, rc, err)
            # A waypoint it cannot reach in 0.5 s is a failure.
            rc, out, err = await run(argv + ["--url", d.url, "--timeout", "0.5",
                                             "--waypoints", "3"])
            assert rc == 1 and "not reached" in err, (name, rc, out, err)
            # A group out of the protocol's range is refused before connecting.
            rc, _, err = await run(argv + ["--url", d.url, "--group", "256"])
            assert rc == 2, (name, rc, err)


if __name__ == "__main__":
    SUITE.main(skip_args=1)
