#!/usr/bin/python3
"""Integration tests for squads, orders and formations (PROTOCOL.md §13):
two rts players each select their units, give them a formation and a
move, and see their own team's squads messages only (a viewer none, an
admin every team's); the squad ends in its formation at the point it was
sent to, in the snapshots every client gets; every order is acked with
its squad; what a player may not do is refused with the reason and
changes nothing; and a recorded match with squads replays with --verify.
A real flockd on loopback, python3-websockets clients.

Usage: test_squads.py FLOCKD_BINARY [TEST_NAME...]
Each test starts its own flockd on an ephemeral loopback port. The last
line is "N passed, N failed".
"""

import asyncio
import json
import math
import os
import shutil
import subprocess
import tempfile
import time

from flockd_harness import arg, Flockd, joined, ok, refused, replay, Suite

FLOCKD = arg(0, "build/server/flockd")
SUITE = Suite(timeout=150)
test = SUITE.test

UNITS = ("--team-units", "120", "--team-cap", "500")


def squads_of(c, team=None):
    """The squads messages c got (of `team`)."""
    return [m for m in c.messages if m.get("type") == "squads"
            and (team is None or m["team"] == team)]


async def next_squads(c, team, when, timeout=10):
    """The first squads message of `team` after the `skip` first, for which when(message)."""
    await c.wait_for(lambda: any(when(m) for m in squads_of(c, team)), timeout)
    return next(m for m in squads_of(c, team) if when(m))


def slots(entry):
    """Every slot of a squads entry (PROTOCOL.md §13.3)."""
    n, s, th = entry["units"], entry["spacing"], entry["facing"]
    fx, fy, ax, ay = math.cos(th), math.sin(th), *entry["anchor"]
    out = []
    for i in range(n):
        shape = entry["formation"]
        if shape == "wedge":
            b = math.isqrt(i)
            first, width = b * b, 2 * b + 1
        else:
            c = {"line": math.isqrt(4 * n - 1) + 1, "box": math.isqrt(n - 1) + 1,
                 "column": math.isqrt((n + 3) // 4 - 1) + 1}[shape]
            c = max(1, min(c, n))
            b, first, width = i // c, (i // c) * c, c
        m = min(n - first, width)
        a = (i - first) - (m - 1) / 2
        out.append((ax + s * (-a * fy - b * fx), ay + s * (a * fx - b * fy)))
    return out


@test
async def players_see_their_own_squads_reach_their_formation():
    with Flockd(FLOCKD, *UNITS) as d:
        a = await joined(d, "war", "player", mode="rts")
        b = await joined(d, "war", "player")
        viewer = await joined(d, "war", "viewer")
        admin = await joined(d, "war", "admin")
        ta, tb = a.ack["team"], b.ack["team"]
        sel = await ok(a, "select", all=True)
        assert sel["squad"] == 1 and sel["units"] == 120, sel
        assert (await ok(a, "formation", squad=1, shape="wedge"))["squad"] == 1
        w, h = a.welcome["world"]["width"], a.welcome["world"]["height"]
        goal = [w / 2, h / 2]
        assert (await ok(a, "move", squad=1, to=[goal]))["squad"] == 1
        await ok(b, "select", all=True, squad=4)
        await ok(b, "hold", squad=4)
        # The move, then its end: a stop at the goal, in a's messages.
        moving = await next_squads(a, ta, lambda m: m["squads"][0]["do"] == "move")
        e = moving["squads"][0]
        assert e["to"] == [goal] and e["formation"] == "wedge" and e["units"] == 120, e
        done = await next_squads(a, ta, lambda m: m["squads"][0]["do"] == "stop", timeout=40)
        e = done["squads"][0]
        assert math.dist(e["anchor"], goal) < 0.5 and e["to"] == [], e
        # Every unit of team a is near a slot of the wedge (snapshots: v1, every client).
        # Two seconds of the room's ticks after the stop (not of the wall
        # clock: a sanitizer's room on a loaded machine ticks slower), then
        # each newer frame until they settle, for up to 20 s.
        places = slots(e)
        snap = await viewer.next_snapshot(after_tick=done["tick"] + 2 * 60, timeout=20)
        deadline = time.time() + 20
        while True:
            units = [(x, y) for x, y, _, g in snap["boids"] if g == ta]
            far = [u for u in units if min(math.dist(u, p) for p in places) > 12.5]
            if (len(units) == 120 and len(far) <= 6) or time.time() > deadline:
                break
            snap = await viewer.next_snapshot(after_tick=snap["tick"])
        assert len(units) == 120 and len(far) <= 6, (len(units), len(far), far[:5])
        # Each player got its own team's only; a viewer none; an admin both.
        assert squads_of(a) and all(m["team"] == ta for m in squads_of(a))
        assert squads_of(b) and all(m["team"] == tb for m in squads_of(b))
        assert squads_of(viewer) == []
        await admin.wait_for(lambda: {m["team"] for m in squads_of(admin)} == {ta, tb}, 5)
        print(f"a wedge of 120 took its slots: {120 - len(far)} within 12.5 units", flush=True)
        for c in (a, b, viewer, admin):
            await c.close()


@test
async def every_order_is_acked_and_shown_to_the_team():
    with Flockd(FLOCKD, *UNITS) as d:
        a = await joined(d, "war", "player", mode="rts")
        w, h = a.welcome["world"]["width"], a.welcome["world"]["height"]
        ta = a.ack["team"]
        await ok(a, "select", all=True, squad=1)
        # The units left of their median into squad 2: two squads of about 60.
        snap = await a.next_snapshot()
        xs = sorted(x for x, _, _, g in snap["boids"] if g == ta)
        half = await ok(a, "select", rect=[0, 0, xs[len(xs) // 2], h], squad=2)
        assert 30 < half["units"] < 90, half
        for cmd, args, shown in [
                ("move", dict(squad=1, to=[[100, 100], [200, 100]]), "move"),
                ("move", dict(squad=1, to=[[300, 100]], queue=True), "move"),
                ("patrol", dict(squad=2, to=[[w - 100, h - 100]]), "patrol"),
                ("follow", dict(squad=1, squad_of=2), "follow"),
                ("hold", dict(squad=1), "hold"),
                ("stop", dict(squad=2), "stop"),
                ("formation", dict(squad=2, shape="box", spacing=20), "stop")]:
            r = await ok(a, cmd, **args)
            assert r["squad"] == args["squad"] and isinstance(r["tick"], int), r
            m = await next_squads(a, ta, lambda m, k=args["squad"], t=r["tick"]: m["tick"] > t
                                  and any(e["squad"] == k for e in m["squads"]))
            e = next(e for e in m["squads"] if e["squad"] == args["squad"])
            assert e["do"] == shown, (cmd, e)
            if cmd == "move" and args.get("queue"):
                assert e["to"][-1] == [300, 100] and len(e["to"]) >= 2, e
            if cmd == "follow":
                assert e["squad_of"] == 2, e
            if cmd == "formation":
                assert e["formation"] == "box" and e["spacing"] == 20, e
        # Everyone out of squads: the team's message lists none.
        await ok(a, "select", squads=[1, 2], squad=0)
        await next_squads(a, ta, lambda m: m["squads"] == [])
        await a.close()


@test
async def what_a_player_may_not_do_is_refused_and_changes_nothing():
    with Flockd(FLOCKD, *UNITS) as d:
        a = await joined(d, "war", "player", mode="rts")
        b = await joined(d, "war", "player")
        viewer = await joined(d, "war", "viewer")
        admin = await joined(d, "war", "admin")
        ta, tb = a.ack["team"], b.ack["team"]
        w = a.welcome["world"]["width"]
        await ok(b, "select", all=True, squad=1)
        before = await ok(admin, "ping")
        r = await refused(a, "forbidden", "select", all=True, team=tb)
        assert "own team" in r["message"], r
        await refused(a, "forbidden", "move", squad=1, to=[[10, 10]], team=tb)
        await refused(viewer, "forbidden", "select", all=True)
        r = await refused(a, "not_found", "hold", squad=1)
        assert "no units" in r["message"], r
        await refused(a, "out_of_range", "select", rect=[w + 1, 0, 10, 10])
        await refused(a, "bad_arg", "select", rect=[0, 0, 1, 1])  # a corner holds none
        await refused(a, "bad_arg", "select", all=True, squads=[1])
        await refused(a, "bad_arg", "select", all=False)
        await refused(a, "not_found", "select", ids=[4000000000])
        await refused(a, "out_of_range", "patrol", squad=1, to=[[1, 1]] * 16)
        await refused(a, "bad_arg", "hold", squad=1, to=[[1, 1]])
        await refused(a, "bad_arg", "formation", squad=1, shape="circle")
        r = await refused(admin, "bad_arg", "hold", squad=1)
        assert "name the team" in r["message"], r
        # None of it made a squad of a's.
        after = await ok(admin, "ping")
        assert squads_of(a) == [] and after["tick"] >= before["tick"], squads_of(a)
        # b's squad is b's: its units all still in it.
        m = await next_squads(b, tb, lambda m: True)
        assert m["squads"][0]["units"] == 120, m
        # Admins name the team and may command it.
        await ok(admin, "select", team=ta, all=True, squad=3)
        await ok(admin, "formation", team=ta, squad=3, shape="line")
        for c in (a, b, viewer, admin):
            await c.close()


@test
async def a_recorded_match_with_squads_replays_with_verify():
    tmp = tempfile.mkdtemp(prefix="flockd-squads-")
    try:
        with Flockd(FLOCKD, "--boids", "300", "--record", tmp) as d:
            admin = await joined(d, "default", "admin")
            await ok(admin, "params", group=0, w_pursue=1.0)
            await ok(admin, "spawn", n=200, group=1, x=1200, y=500)
            await ok(admin, "select", team=1, all=True, squad=2)
            await ok(admin, "select", team=1, rect=[1000, 300, 600, 200], squad=1)
            await ok(admin, "formation", team=1, squad=2, shape="wedge")
            await ok(admin, "move", team=1, squad=2, to=[[300, 500], [300, 200]])
            await asyncio.sleep(1.0)
            await ok(admin, "follow", team=1, squad=1, squad_of=2)
            await ok(admin, "obstacle_add", x=700, y=500, r=40)
            await asyncio.sleep(1.5)
            await ok(admin, "patrol", team=1, squad=2, to=[[1400, 800]])
            await ok(admin, "despawn", n=50, group=1)
            await asyncio.sleep(1.5)
            last = await ok(admin, "ping")
            await admin.close()
        rc, out, err = replay(FLOCKD, os.path.join(tmp, "default.flog"), "--verify")
        assert rc == 0 and out["first_divergence"] is None and out["verified"] > 0, (rc, out, err)
        assert out["tick"] >= last["tick"], (out, last)
        print(f"replay --verify: {out['verified']} hashes agree", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    SUITE.main(skip_args=1)
