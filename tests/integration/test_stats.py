#!/usr/bin/python3
"""The flock's live measures in a running flockd (PROTOCOL.md §5.4 stats,
§6.1, §6.5): the stats command, the welcome's flock and groups, and the
per-room gauges of /metrics. The measures are checked against the same
measures computed here from the snapshot of the tick they describe.

Usage: test_stats.py FLOCKD_BINARY [TEST_NAME...]
Each test starts its own flockd on an ephemeral loopback port. The last
line is "N passed, N failed".
"""

import asyncio
import math

from flockd_harness import Client, Flockd, Suite, arg

FLOCKD = arg(0, "build/server/flockd")
SUITE = Suite(timeout=120)
test = SUITE.test


def torus_delta(a, b, size):
    d = (b - a) % size
    return d - size if d > size / 2 else d


def measures_of(snap, radius):
    """Global and local polarization and nearest-neighbour p5 and median of
    a decoded version 1 snapshot, as PROTOCOL.md §6.5 defines them."""
    w, h = snap["width"], snap["height"]
    pts = [(x, y) for x, y, _, _ in snap["boids"]]
    heads = [(math.cos(q * 2 * math.pi / 256), math.sin(q * 2 * math.pi / 256))
             for _, _, q, _ in snap["boids"]]
    n = len(pts)
    local, nearest = 0.0, []
    for i in range(n):
        sx, sy, best = 0.0, 0.0, float("inf")
        for j in range(n):
            dx = torus_delta(pts[i][0], pts[j][0], w)
            dy = torus_delta(pts[i][1], pts[j][1], h)
            d = math.hypot(dx, dy)
            if j != i:
                best = min(best, d)
            if d < radius:
                sx += heads[j][0]
                sy += heads[j][1]
        count = sum(1 for j in range(n)
                    if math.hypot(torus_delta(pts[i][0], pts[j][0], w),
                                  torus_delta(pts[i][1], pts[j][1], h)) < radius)
        local += math.hypot(sx, sy) / count
        nearest.append(best)
    nearest.sort()
    rank = lambda p: nearest[max(0, math.ceil(p * n) - 1)]  # noqa: E731
    glob = math.hypot(sum(u for u, _ in heads), sum(v for _, v in heads)) / n
    return {"local_polarization": local / n, "global_polarization": glob,
            "nn_p5": rank(0.05), "nn_median": rank(0.5)}


async def stats(c):
    r = await c.command("stats")
    assert r["type"] == "ack" and "stats" in r, r
    return r["stats"]


async def measured(c, cond, timeout=5):
    """Asks for stats until cond(stats) holds; returns those stats."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        s = await stats(c)
        if cond(s):
            return s
        assert asyncio.get_running_loop().time() < deadline, f"never so: {s}"
        await asyncio.sleep(0.1)


@test
async def stats_reports_the_measures_of_the_flock_its_snapshot_shows():
    with Flockd(FLOCKD, "--boids", "300") as d:
        c = await Client.connect(d.url)
        await asyncio.sleep(1.5)  # the scattered start begins to gather
        r = await c.command("pause")
        assert r["type"] == "ack", r
        tick = r["tick"]
        # A paused room is measured once more, at the tick it paused at.
        s = await measured(c, lambda s: s["flock"] and s["flock"]["tick"] == tick)
        snap = await c.next_snapshot(after_tick=tick - 1)
        assert snap["tick"] == tick and snap["paused"] and snap["wrap"], snap["tick"]
        f = s["flock"]
        assert s["paused"] is True and s["boids"] == f["boids"] == 300, s
        radius = c.welcome["values"]["perception"]
        want = measures_of(snap, radius)
        for key, tol in (("global_polarization", 0.01), ("local_polarization", 0.02),
                         ("nn_p5", 0.1), ("nn_median", 0.1)):
            assert abs(f[key] - want[key]) <= tol, (key, f[key], want[key])
        assert 0 < f["mean_speed"] <= c.welcome["values"]["max_speed"] * 1.001, f
        assert 1 <= f["clusters"] <= 300 and f["largest_cluster"] <= 300, f
        assert 0 <= f["mill_fraction"] <= 1 and f["measure_ms"] >= 0, f
        assert s["tick_ms_mean"] > 0 and s["tick_ms_p99"] >= s["tick_ms_mean"] * 0.999, s
        # Paused, nothing changes: no new measure.
        await asyncio.sleep(1)
        assert (await stats(c))["flock"] == f
        # A spawn changes the flock while paused: measured again.
        r = await c.command("spawn", n=50, group=2, x=100, y=100)
        assert r["type"] == "ack", r
        s = await measured(c, lambda s: s["flock"]["boids"] == 350)
        assert s["flock"]["tick"] == tick and s["paused"], s
        await c.close()


@test
async def the_welcome_reports_every_groups_values_and_the_last_measure():
    with Flockd(FLOCKD, "--boids", "200") as d:
        admin = await Client.connect(d.url)
        assert "groups" not in admin.welcome, admin.welcome.get("groups")
        r = await admin.command("params", group=7, max_speed=150, w_cohesion=0)
        assert r["type"] == "ack", r
        await measured(admin, lambda s: s["flock"] is not None)
        late = await Client.connect(d.url)
        w = late.welcome
        assert w["groups"] == {"7": {"max_speed": 150, "w_cohesion": 0}}, w["groups"]
        assert w["values"]["max_speed"] == 100, w["values"]
        assert w["flock"]["boids"] == 200 and w["flock"]["tick"] <= w["tick"], w["flock"]
        await late.close()
        await admin.close()


@test
async def a_welcome_that_lists_every_group_arrives_on_connect_and_on_join():
    """Group 0 changed in every parameter: each of the other 255 groups then
    differs in all of them: a welcome of about 60 KB."""
    with Flockd(FLOCKD, "--boids", "100") as d:
        admin = await Client.connect(d.url)
        values = {p["name"]: p["max"] for p in admin.welcome["params"]}
        r = await admin.command("params", group=0, **values)
        assert r["type"] == "ack", r
        late = await Client.connect(d.url, headers_only=True)
        assert late.welcome["values"] == values, late.welcome["values"]
        groups = late.welcome["groups"]
        assert len(groups) == 255 and groups["255"] == {
            p["name"]: p["default"] for p in admin.welcome["params"]}, groups["255"]
        assert (await late.join("default", "viewer"))["type"] == "ack"
        assert late.welcome["groups"] == groups
        await late.close()
        await admin.close()


@test
async def metrics_export_each_rooms_flock_with_its_name():
    with Flockd(FLOCKD, "--boids", "300") as d:
        c = await Client.connect(d.url)
        r = await c.join("other", "admin", boids=120)
        assert r["type"] == "ack", r
        await measured(c, lambda s: s["flock"] is not None)
        text = d.http("/metrics")[2]
        assert text.count("# TYPE flockd_flock_local_polarization gauge") == 1
        for room, boids in (("default", 300), ("other", 120)):
            assert d.metric(f'flockd_room_boids{{room="{room}"}}') == boids, room
            pol = d.metric(f'flockd_flock_local_polarization{{room="{room}"}}')
            assert pol is not None and 0 <= pol <= 1, (room, pol)
            assert d.metric(f'flockd_room_tick_seconds_p99{{room="{room}"}}') > 0, room
        assert d.metric('flockd_flock_clusters{room="other"}') >= 1
        await c.close()


@test
async def a_viewer_may_ask_for_stats_and_bad_stats_changes_nothing():
    with Flockd(FLOCKD, "--boids", "100") as d:
        c = await Client.connect(d.url)
        r = await c.join("default", "viewer")
        assert r["type"] == "ack" and r["role"] == "viewer", r
        s = await stats(c)
        assert s["boids"] == 100, s
        i = c.next_id
        c.next_id += 1
        await c.send_raw('{"cmd":"stats","id":%d,"room":"x"}' % i)
        await c.wait_for(lambda: any(m.get("id") == i for m in c.replies), 5)
        err = next(m for m in c.replies if m.get("id") == i)
        assert err["type"] == "error" and err["code"] == "bad_arg", err
        assert (await stats(c))["boids"] == 100
        await c.close()


if __name__ == "__main__":
    SUITE.main()
