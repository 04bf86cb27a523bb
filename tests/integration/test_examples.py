#!/usr/bin/python3
"""Integration tests: the scripting examples in client/examples.

Usage: test_examples.py FLOCKD_BINARY [TEST_NAME...]
Runs the Python examples (steer.py and polarization.py, on the flockd library
of client/python) and the Node example (steer.mjs, npm `ws` installed by `make
deps`) against a real flockd while an observer connection records every
snapshot. Checks that each steering script exits 0, prints every waypoint it
reached, and that the snapshots show its group's centroid near each of those
waypoints and its obstacle placed and removed; that the Python examples
leave the room as they found it (their boids despawned, their group's
parameters restored), also when interrupted; then that failures end with a
non-zero status. Reaching a waypoint is a condition the scripts wait for
with a generous deadline, and the checks allow for the observer not seeing
the very tick a script judged by. The last line is "N passed, N failed".
"""

import asyncio
import csv
import math
import os
import re
import shutil
import signal
import socket
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from flockd_harness import Client, Flockd, Suite, arg  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "client", "python"))
import flockd  # noqa: E402

FLOCKD = arg(0, "build/server/flockd")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "client", "examples")
NODE = shutil.which("node") or "node"
SCRIPTS = {
    "python": ["/usr/bin/python3", os.path.join(EXAMPLES, "steer.py")],
    "node": [NODE, os.path.join(EXAMPLES, "steer.mjs")],
}
POLARIZATION = ["/usr/bin/python3", os.path.join(EXAMPLES, "polarization.py")]
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


class Observer:
    """A flockd library client recording, per tick, the group's centroid,
    its boids and the obstacle ids."""

    def __init__(self, client):
        self.client, self.seen = client, {}
        self.task = asyncio.ensure_future(self._record())

    async def _record(self):
        async for s in self.client.snapshots(fresh=False, maxlen=100000):
            self.seen[s.tick] = (s.centroid(GROUP), int((s.group == GROUP).sum()),
                                 [o.id for o in s.obstacles], s)

    def near(self, tick, point, speed, tick_hz):
        """How far the group's centroid was from point at tick, less what it
        could have moved between tick and the nearest tick observed."""
        at = min(self.seen, key=lambda t: (abs(t - tick), t))
        centre, _, _, snap = self.seen[at]
        slack = speed * 1.05 * abs(at - tick) / tick_hz
        return snap.distance(centre, point) - slack

    async def close(self):
        await self.client.close()
        await self.task


def group_differs(welcome, group):
    """True if the group's parameters differ from group 0's (§6.1 groups)."""
    return str(group) in (welcome.groups.to_dict() if welcome.groups else {})


@test
async def python_example_steers_its_group_through_every_waypoint_and_cleans_up():
    # A smaller world than the Node example's: the same checks, sooner.
    with Flockd(FLOCKD, "--boids", "100", "--width", "800", "--height", "500") as d:
        obs = Observer(await flockd.connect_async(d.url))
        rc, out, err = await run(SCRIPTS["python"] + [
            "--url", d.url, "--laps", "1", "--waypoints", str(WAYPOINTS),
            "--group", str(GROUP), "--radius", str(RADIUS), "--timeout", "60"])
        sys.stdout.write(out)
        assert rc == 0, (rc, err)
        assert "snapshots/s of version 2" in out and "refused" not in err, (out, err)
        reached = [tuple(map(int, m.groups())) for m in REACHED.finditer(out)]
        assert [r[0] for r in reached] == list(range(1, WAYPOINTS + 1)), out
        tick_hz = obs.client.welcome.tick_hz
        for k, _, x, y, tick in reached:
            # Printed coordinates are rounded: allow a unit.
            assert obs.near(tick, (x, y), 160, tick_hz) <= RADIUS + 1, (k, x, y, tick)
        obstacle = int(PLACED.search(out).group(1))
        assert any(obstacle in ids for _, _, ids, _ in obs.seen.values()), "never placed"
        last = await obs.client.wait_for(lambda s: not (s.group == GROUP).any(), timeout=10)
        assert obstacle not in [o.id for o in last.obstacles], "obstacle left behind"
        assert f"removed obstacle {obstacle}" in out and "despawned 40 boids" in out, out
        async with flockd.connect_async(d.url) as later:
            assert not group_differs(later.welcome, GROUP), later.welcome.groups
        await obs.close()


@test
async def python_examples_clean_up_when_interrupted():
    with Flockd(FLOCKD, "--boids", "100") as d:
        p = await asyncio.create_subprocess_exec(
            *SCRIPTS["python"], "--url", d.url, "--group", str(GROUP), "--timeout", "60",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        while b"spawned" not in await asyncio.wait_for(p.stdout.readline(), 30):
            pass
        p.send_signal(signal.SIGINT)
        out, err = await asyncio.wait_for(p.communicate(), 30)
        assert p.returncode == 130 and b"interrupted" in err, (p.returncode, out, err)
        assert b"despawned 40 boids" in out, out
        async with flockd.connect_async(d.url) as c:
            await c.wait_for(lambda s: s.count == 100 and not s.obstacles, timeout=10)
            assert not group_differs(c.welcome, GROUP), c.welcome.groups


@test
async def polarization_example_records_the_curve_and_restores_the_room():
    with Flockd(FLOCKD, "--boids", "100") as d, tempfile.TemporaryDirectory() as tmp:
        out_png = os.path.join(tmp, "pol.png")
        rc, out, err = await run(POLARIZATION + [
            "--url", d.url, "--room", "pol", "--seconds", "4", "--boids", "150",
            "--out", out_png, "--positions", os.path.join(tmp, "pos.npz")])
        sys.stdout.write(out)
        assert rc == 0, (rc, out, err)
        assert "spawned 150 boids in group 7" in out and "w_alignment 0 -> 3" in out, out
        if "matplotlib is not installed" in out:
            with open(os.path.join(tmp, "pol.csv")) as f:
                rows = list(csv.DictReader(f))
            times = [float(r["seconds"]) for r in rows]
            pols = [float(r["polarization"]) for r in rows]
            weights = [float(r["w_alignment"]) for r in rows]
            assert len(rows) >= 40 and times == sorted(times) and times[-1] >= 3.5, times
            assert all(0 <= p <= 1 for p in pols), pols
            switch = weights.index(3.0)
            assert set(weights[:switch]) == {0.0} and set(weights[switch:]) == {3.0}, weights
            assert 1.9 <= times[switch] <= 2.6, times[switch]
        else:
            assert os.path.getsize(out_png) > 1000
        import numpy as np
        saved = np.load(os.path.join(tmp, "pos.npz"))
        assert saved["xy"].shape[1:] == (150, 2), saved["xy"].shape
        async with flockd.connect_async(d.url, room="pol", role="viewer") as c:
            await c.wait_for(lambda s: s.count == 100, timeout=10)
            assert not group_differs(c.welcome, 7), c.welcome.groups


@test
async def node_example_steers_its_group_through_every_waypoint():
    await tour_is_seen_in_the_snapshots("node")


@test
async def examples_exit_non_zero_when_they_cannot_finish():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with Flockd(FLOCKD, "--boids", "50") as d:
        for name, argv in list(SCRIPTS.items()) + [("polarization", POLARIZATION)]:
            if name == "polarization":
                rc, _, err = await run(argv + ["--url", f"ws://127.0.0.1:{port}/ws"])
                assert rc == 3 and "cannot connect" in err, (name, rc, err)
                rc, _, err = await run(argv + ["--url", d.url, "--group", "256"])
                assert rc == 2, (name, rc, err)
                continue
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
