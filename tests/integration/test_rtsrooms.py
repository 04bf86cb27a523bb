#!/usr/bin/python3
"""Integration tests for rooms made by a join for an RTS (PROTOCOL.md §5.4
join and params, §5.6, §6.1 teams, §7.2 4009, §10): the world and teams a
join gives the room it creates, where the teams' bases are, a rejoin that
takes a team over from a connection the server still holds, and a group's
parameters back to their defaults (by params reset, and when its team is
freed). A real flockd on loopback, python3-websockets clients.

Usage: test_rtsrooms.py FLOCKD_BINARY [TEST_NAME...]
Each test starts its own flockd on an ephemeral loopback port. The last
line is "N passed, N failed".
"""

import asyncio
import math

from flockd_harness import Client, Flockd, Suite, arg, joined, ok

FLOCKD = arg(0, "build/server/flockd")
SUITE = Suite(timeout=120)
test = SUITE.test


# ---- helpers ---------------------------------------------------------------------------


def world_for(boids):
    """sim_world_for() (server/sim/sim.h): the default world for n boids."""
    grow = math.sqrt(boids / 1000) if boids > 1000 else 1.0
    return round(1600 * grow), round(1000 * grow)


def world_of(c):
    w = c.welcome["world"]
    return w["width"], w["height"], w["edges"]


def team_units(snap, group):
    return [(x, y) for x, y, _, g in snap["boids"] if g == group]


def mean(pts):
    return sum(p[0] for p in pts) / len(pts), sum(p[1] for p in pts) / len(pts)


async def room_entry(d, name):
    return await asyncio.to_thread(d.room, name)


async def closed_with(c, timeout=5):
    await asyncio.wait_for(c.reader, timeout)
    return c.ws.close_code


async def group_values(d, room, group):
    """The parameters a new viewer of `room` is told `group` has (§6.1)."""
    v = await joined(d, room, "viewer")
    values = dict(v.welcome["values"], **v.welcome.get("groups", {}).get(str(group), {}))
    await v.close()
    return values


# ---- the world a join gives the room it creates ------------------------------------------

@test
async def a_created_rooms_world_follows_its_boids_unless_width_and_height_are_given():
    with Flockd(FLOCKD, "--boids", "50", "--team-units", "30", "--max-teams", "8") as d:
        big = await joined(d, "big", "admin", mode="rts", boids=5000)
        assert world_of(big) == (*world_for(5000 + 8 * 30), "contain"), big.welcome["world"]
        assert big.welcome["teams"] == {"max": 8, "units": 30, "cap": 100}, big.welcome
        sand = await joined(d, "sand", "admin", boids=5000)
        assert world_of(sand) == (*world_for(5000), "wrap"), sand.welcome["world"]
        assert "teams" not in sand.welcome
        plain = await joined(d, "plain", "viewer")  # a sandbox without boids: the server's world
        assert world_of(plain) == (1600, 1000, "wrap"), plain.welcome["world"]
        sized = await joined(d, "sized", "player", mode="rts", width=900, height=700.5,
                             edges="wrap", teams=3, units=12)
        assert world_of(sized) == (900, 700.5, "wrap"), sized.welcome["world"]
        assert sized.welcome["teams"] == {"max": 3, "units": 12, "cap": 100}, sized.welcome
        tall = await joined(d, "tall", "viewer", mode="rts", height=5000)
        assert world_of(tall) == (1600, 5000, "contain"), tall.welcome["world"]

        e = await room_entry(d, "big")
        assert (e["mode"], e["max_teams"], e["units"], e["teams"]) == ("rts", 8, 30, 0), e
        assert (e["width"], e["height"], e["edges"]) == (*world_for(5240), "contain"), e
        e = await room_entry(d, "sized")
        assert (e["max_teams"], e["units"], e["teams"], e["width"]) == (3, 12, 1, 900), e
        e = await room_entry(d, "sand")
        assert "max_teams" not in e and (e["width"], e["edges"]) == (world_for(5000)[0], "wrap")
        s = await big.next_snapshot()
        assert (s["width"], s["height"], s["wrap"]) == (*world_for(5240), False)
        assert len(s["boids"]) == 5000

        # An existing room keeps its shape whatever a join says of one.
        again = await joined(d, "sized", "viewer", width=2000, height=2000, edges="contain",
                             teams=5, units=1, boids=7)
        assert world_of(again) == (900, 700.5, "wrap") and again.welcome["teams"]["max"] == 3
        print(f"  rts room of 5000 boids and 8 x 30 units: {world_of(big)[:2]}; "
              f"sandbox of 5000: {world_of(sand)[:2]}")
        for c in (big, sand, plain, sized, tall, again):
            await c.close()


@test
async def an_rts_rooms_units_stay_in_its_world_by_default():
    with Flockd(FLOCKD, "--boids", "0", "--team-units", "40") as d:
        far_side = {}
        for room, edges in (("kept", None), ("torus", "wrap")):
            extra = {"edges": edges} if edges else {}
            p = await joined(d, room, "player", mode="rts", teams=2, **extra)
            team = p.ack["team"]
            w, h, got = world_of(p)
            assert got == (edges or "contain"), p.welcome["world"]
            r = await ok(p, "seek", group=team, x=2, y=2)  # a corner: units crowd the edges
            start = len(p.snapshots)
            # 5 s of the room's time (at 60 ticks a second), however slow the build.
            await p.wait_for(lambda: any(s["tick"] > r["tick"] + 300
                                         for _, s in p.snapshots[start:]), 60)
            snaps = [s for _, s in p.snapshots[start:]]
            assert len(snaps) >= 40, len(snaps)
            # Past the edges of a torus a unit shows on the far side.
            far_side[room] = sum(1 for s in snaps for x, y in team_units(s, team)
                                 if x > 0.8 * w or y > 0.8 * h)
            for s in snaps:
                assert s["wrap"] == (edges == "wrap")
                assert len(team_units(s, team)) == 40
                for x, y in team_units(s, team):
                    assert 0 <= x <= w and 0 <= y <= h, (x, y)
            await p.close()
        print(f"  unit sightings on the far side in 5 s: contain {far_side['kept']}, "
              f"wrap {far_side['torus']}")
        assert far_side["kept"] == 0, far_side
        assert far_side["torus"] > 0, "the wrapped room shows no unit past its edge"


# ---- bases --------------------------------------------------------------------------------

@test
async def two_teams_start_on_opposite_sides_of_the_centre():
    with Flockd(FLOCKD, "--boids", "0", "--team-units", "30", "--max-teams", "8") as d:
        a = await joined(d, "duel", "player", mode="rts", teams=2)
        b = await joined(d, "duel", "player", mode="rts")
        assert (a.ack["team"], b.ack["team"]) == (1, 2)
        s = await a.next_snapshot(after_tick=a.welcome["tick"] + 1)
        w, h, _ = world_of(a)
        m1, m2 = mean(team_units(s, 1)), mean(team_units(s, 2))
        cx, cy = w / 2, h / 2
        off = math.hypot(m1[0] + m2[0] - 2 * cx, m1[1] + m2[1] - 2 * cy)  # 0: point-symmetric
        apart = math.hypot(m1[0] - m2[0], m1[1] - m2[1])
        print(f"  bases at ({m1[0]:.0f}, {m1[1]:.0f}) and ({m2[0]:.0f}, {m2[1]:.0f}) in "
              f"{w} x {h}: {apart:.0f} apart, {off:.1f} off symmetric")
        assert off < 40, (m1, m2)
        assert apart > 0.5 * w, (m1, m2)
        assert m1[0] < cx < m2[0] and abs(m1[1] - cy) < 30, (m1, m2)  # left and right
        # A third player: two teams is all this room takes.
        c = await Client.connect(d.url)
        r = await c.join("duel", "player", mode="rts")
        assert r["type"] == "error" and r["code"] == "bad_room", r
        # Four teams: a base on each side of the centre.
        q = [await joined(d, "four", "player", mode="rts", teams=4) for _ in range(4)]
        s = await q[0].next_snapshot(after_tick=q[3].ack.get("tick", 0) + 1)
        w, h, _ = world_of(q[0])
        for k in range(1, 5):
            mx, my = mean(team_units(s, k))
            angle = 2 * math.pi * k / 4
            want = (w / 2 + 0.35 * w * math.cos(angle), h / 2 + 0.35 * h * math.sin(angle))
            assert math.hypot(mx - want[0], my - want[1]) < 40, (k, (mx, my), want)
        for x in (a, b, c, *q):
            await x.close()


# ---- a rejoin that takes a team over ---------------------------------------------------

@test
async def a_rejoin_takes_its_team_over_from_a_connection_still_held_and_closes_it_with_4009():
    with Flockd(FLOCKD, "--boids", "0", "--team-units", "20", "--grace", "30",
                "--net-threads", "2") as d:
        admin = await joined(d, "arena", "admin", mode="rts", teams=2)
        old = await joined(d, "arena", "player", mode="rts", name="ann")
        team, token = old.ack["team"], old.ack["rejoin"]
        oid = (await ok(old, "obstacle_add", x=300, y=300, r=10))["obstacle"]
        await ok(old, "seek", group=team, x=800, y=500)
        for round_ in range(4):  # new connections land on either service thread
            s = await admin.next_snapshot()
            before = mean(team_units(s, team))
            new = await joined(d, "arena", "player", mode="rts", name="ann", rejoin=token)
            assert new.ack["team"] == team and new.ack["rejoin"] != token, new.ack
            assert await closed_with(old) == 4009, (round_, old.ws.close_code)
            s = await admin.next_snapshot()
            assert len(team_units(s, team)) == 20, "the units were respawned or lost"
            after = mean(team_units(s, team))
            assert math.hypot(after[0] - before[0], after[1] - before[1]) < 40, (before, after)
            await ok(new, "obstacle_remove" if round_ == 3 else "ping",
                     **({"obstacle": oid} if round_ == 3 else {}))
            await admin.wait_for(lambda: any(p.get("team") == team and p["connected"]
                                             and p["client"] == new.ack["client"]
                                             for p in admin.rosters[-1]["players"]), 3)
            assert sum(1 for p in admin.rosters[-1]["players"] if p.get("team") == team) == 1
            old, token = new, new.ack["rejoin"]
        # Its team is still its own: it steers it, and leaving lets it wait.
        await ok(old, "seek", group=team, x=100, y=100)
        other = await joined(d, "arena", "player", mode="rts", name="bob")
        assert other.ack["team"] != team
        r = await other.command("seek", group=team, x=1, y=1)
        assert r["type"] == "error" and r["code"] == "forbidden", r
        e = await room_entry(d, "arena")
        assert (e["players"], e["teams"]) == (2, 2), e
        for c in (admin, old, other):
            await c.close()


# ---- parameters back to their defaults ----------------------------------------------------

@test
async def params_reset_gives_one_group_its_defaults_and_leaves_the_others():
    with Flockd(FLOCKD, "--boids", "50") as d:
        admin = await joined(d, "lab", "admin", boids=40)
        await ok(admin, "params", group=3, max_speed=150, w_seek=3)
        await ok(admin, "params", group=4, max_speed=120)
        await ok(admin, "params", max_force=80)  # every group
        defaults = {p["name"]: p["default"] for p in admin.welcome["params"]}
        assert (await group_values(d, "lab", 3))["max_speed"] == 150
        await ok(admin, "params", group=3, reset=True)
        got = await group_values(d, "lab", 3)
        assert got == defaults, {k: (v, defaults[k]) for k, v in got.items() if v != defaults[k]}
        four = await group_values(d, "lab", 4)
        assert (four["max_speed"], four["max_force"]) == (120, 80), four
        assert (await group_values(d, "lab", 0))["max_force"] == 80
        # With values: the defaults first, then the values, in one step.
        await ok(admin, "params", group=4, reset=True, w_cohesion=2)
        four = await group_values(d, "lab", 4)
        assert four == dict(defaults, w_cohesion=2), four
        # An rts room's defaults keep own_group_only at 1.
        rts = await joined(d, "war", "admin", mode="rts")
        await ok(rts, "params", group=2, own_group_only=0, max_speed=200)
        await ok(rts, "params", group=2, reset=True)
        two = await group_values(d, "war", 2)
        assert two == dict(defaults, own_group_only=1), two
        for bad, code in (({"reset": 1}, "bad_arg"), ({"reset": "true"}, "bad_arg"),
                          ({"reset": False}, "bad_arg"), ({"group": 256, "reset": True},
                                                          "out_of_range")):
            r = await admin.command("params", **dict({"group": 4}, **bad))
            assert r["type"] == "error" and r["code"] == code, (bad, r)
        assert (await group_values(d, "lab", 4))["w_cohesion"] == 2
        for c in (admin, rts):
            await c.close()


@test
async def a_freed_teams_group_gets_its_defaults_back():
    with Flockd(FLOCKD, "--boids", "0", "--team-units", "10", "--grace", "0.5") as d:
        admin = await joined(d, "war", "admin", mode="rts")
        defaults = dict({p["name"]: p["default"] for p in admin.welcome["params"]},
                        own_group_only=1)
        p = await joined(d, "war", "player", mode="rts")
        team = p.ack["team"]
        await ok(admin, "params", group=team, max_speed=160, sight_radius=50)
        await ok(admin, "params", group=5, max_speed=130)  # nobody's team: kept
        assert (await group_values(d, "war", team))["max_speed"] == 160
        await p.close()
        await admin.wait_for(lambda: not team_units(admin.snapshots[-1][1], team), 5)
        await asyncio.sleep(0.3)
        assert await group_values(d, "war", team) == defaults
        assert (await group_values(d, "war", 5))["max_speed"] == 130
        # A kicked player's team is freed at once, its parameters with it.
        q = await joined(d, "war", "player", mode="rts")
        await ok(admin, "params", group=q.ack["team"], w_seek=4)
        await ok(admin, "kick", client=q.ack["client"])
        await asyncio.sleep(0.3)
        assert await group_values(d, "war", q.ack["team"]) == defaults
        await admin.close()


# ---- refusals -----------------------------------------------------------------------------

@test
async def bad_room_shapes_are_refused_with_the_reason_and_change_nothing():
    with Flockd(FLOCKD, "--boids", "40", "--max-teams", "4", "--team-cap", "50",
                "--capacity", "2000", "--max-room-boids", "3000") as d:
        c = await Client.connect(d.url)
        cases = [
            (dict(mode="rts", teams=5), "out_of_range", "max-teams"),
            (dict(mode="rts", teams=1), "out_of_range", "'teams'"),
            (dict(mode="rts", units=51), "out_of_range", "team-cap"),
            (dict(mode="rts", boids=2900, units=50), "out_of_range", "holds"),
            (dict(mode="rts", width=15), "out_of_range", "'width'"),
            (dict(mode="rts", height=1e7), "out_of_range", "'height'"),
            (dict(mode="rts", width="wide"), "bad_arg", "'width'"),
            (dict(mode="rts", edges="torus"), "bad_arg", "'edges'"),
            (dict(mode="rts", teams=2.5), "bad_arg", "'teams'"),
            (dict(teams=2), "bad_arg", "rts"),
            (dict(mode="sandbox", units=3), "bad_arg", "rts"),
        ]
        for args, code, said in cases:
            r = await c.command("join", room="new", role="player", **args)
            assert r["type"] == "error" and r["code"] == code, (args, r)
            assert said in r["message"], (args, r["message"])
            assert await room_entry(d, "new") is None, args
        assert c.welcome["room"] == "default" and len(c.welcomes) == 1
        assert len((await c.next_snapshot())["boids"]) == 40
        # At the limits it is made.
        r = await c.join("new", "player", mode="rts", teams=4, units=50, boids=2800)
        assert r["type"] == "ack" and c.welcome["teams"] == {"max": 4, "units": 50, "cap": 50}
        await c.close()


if __name__ == "__main__":
    SUITE.main(skip_args=1)
