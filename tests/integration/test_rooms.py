#!/usr/bin/python3
"""Integration tests for rooms, roles and the RTS lobby (PROTOCOL.md §5.6,
§6.1, §6.2, §6.4, §7, §10): a real flockd on loopback, python3-websockets
clients.

Usage: test_rooms.py FLOCKD_BINARY [--functional | --timing] [--untimed] [TEST_NAME...]
Each test starts its own flockd on an ephemeral loopback port. The timing
test prints its measurements on lines starting with "FIGURES". The last
line is "N passed, N failed".
"""

import asyncio
import math
import re
import socket
import time

from flockd_harness import Client, Flockd, Suite, arg, joined, ok, refused

FLOCKD = arg(0, "build/server/flockd")
SUITE = Suite(timeout=120)
test = SUITE.test
timing = SUITE.timing
timely = SUITE.assert_timely

ADMIN_ONLY = ("obstacle_clear", "spawn", "despawn", "params", "pause", "resume", "step",
              "reset", "kick")
REJOIN_TOKEN = re.compile(r"^[0-9a-f]{32}$", re.IGNORECASE)


# ---- helpers ---------------------------------------------------------------------------


async def settled(c, seconds=0.3):
    """The newest snapshot once every command answered so far shows in it
    (several snapshot periods later)."""
    await asyncio.sleep(seconds)
    await c.next_snapshot()
    return c.snapshots[-1][1]


def frozen(snap):
    """Every byte of a snapshot but its server time: equal while nothing changed."""
    return snap["raw"][:16] + snap["raw"][24:]


def group_counts(snap):
    counts = {}
    for _, _, _, g in snap["boids"]:
        counts[g] = counts.get(g, 0) + 1
    return counts


def target_of(snap, group):
    return next(((x, y) for g, x, y in snap["targets"] if g == group), None)


def obstacle_ids(snap):
    return [o[0] for o in snap["obstacles"]]


def group_centre(snap, group):
    """Wrap-aware centre of a group's boids (circular mean on each axis)."""
    w, h = snap["width"], snap["height"]
    pts = [(x, y) for x, y, _, g in snap["boids"] if g == group]
    assert pts, group

    def mean(vals, size):
        a = math.atan2(sum(math.sin(2 * math.pi * v / size) for v in vals),
                       sum(math.cos(2 * math.pi * v / size) for v in vals))
        return (a / (2 * math.pi) * size) % size
    return mean([p[0] for p in pts], w), mean([p[1] for p in pts], h)


def torus_distance(snap, a, b):
    dx, dy = abs(a[0] - b[0]), abs(a[1] - b[1])
    return math.hypot(min(dx, snap["width"] - dx), min(dy, snap["height"] - dy))


async def welcome_values(d, room, **args):
    """Group 0's parameter values as a new viewer of `room` is welcomed with."""
    v = await joined(d, room, "viewer", **args)
    values = v.welcome["values"]
    await v.close()
    return values


async def closed_with(c, timeout=5):
    await asyncio.wait_for(c.reader, timeout)
    return c.ws.close_code


async def rooms(d):
    return await asyncio.to_thread(d.rooms)


async def room_entry(d, name):
    return await asyncio.to_thread(d.room, name)


def non_loopback_address():
    """This machine's address on its default route (no packet is sent), or None."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))
            addr = s.getsockname()[0]
    except OSError:
        return None
    return None if addr.startswith("127.") else addr


def admin_rejections(d):
    """The /metrics counter of refused admin joins (server/runtime/metrics.c)."""
    n = d.metric("flockd_admin_denied_total")
    assert n is not None, "no flockd_admin_denied_total in /metrics"
    return n


def roster_players(c):
    return c.rosters[-1]["players"] if c.rosters else None


# ---- 1. isolation ----------------------------------------------------------------------

@test
async def commands_in_one_room_never_change_another():
    with Flockd(FLOCKD, "--boids", "200") as d:
        a = await joined(d, "alpha", "admin", boids=300)
        b = await joined(d, "beta", "admin", boids=150)
        assert (a.welcome["room"], b.welcome["room"]) == ("alpha", "beta")
        assert a.ack["room"] == "alpha" and a.ack["role"] == "admin"
        b_values = b.welcome["values"]
        assert b_values["max_speed"] != 50
        sa, sb = await a.next_snapshot(), await b.next_snapshot()
        assert len(sa["boids"]) == 300 and len(sb["boids"]) == 150

        await ok(a, "seek", group=0, x=400, y=300)
        oid = (await ok(a, "obstacle_add", x=800, y=500, r=40))["obstacle"]
        await ok(a, "params", max_speed=50)
        await ok(a, "spawn", n=10, group=3, x=100, y=100)
        await ok(a, "pause")
        sa = await settled(a)
        assert sa["paused"] and len(sa["boids"]) == 310 and target_of(sa, 0) == (400, 300)
        assert obstacle_ids(sa) == [oid]

        n0 = len(b.snapshots)
        await asyncio.sleep(1.0)
        seen = [s for _, s in b.snapshots[n0:]]
        assert len(seen) >= 15, len(seen)
        for s in seen:
            assert len(s["boids"]) == 150 and not s["paused"], (len(s["boids"]), s["paused"])
            assert s["obstacles"] == [] and s["targets"] == [], (s["obstacles"], s["targets"])
        assert seen[-1]["tick"] >= seen[0]["tick"] + 40, "beta must keep ticking"
        assert (await welcome_values(d, "beta")) == b_values
        assert (await welcome_values(d, "alpha"))["max_speed"] == 50

        # And the other way round: beta's commands leave alpha alone.
        await ok(b, "resume")
        await ok(b, "seek", group=0, x=100, y=900)
        await ok(b, "obstacle_clear")
        sa = await settled(a)
        assert sa["paused"] and target_of(sa, 0) == (400, 300) and obstacle_ids(sa) == [oid]
        await a.close()
        await b.close()


# ---- 2. the permission matrix ----------------------------------------------------------

class Matrix:
    """Collects every disagreement with §5.6's table instead of stopping at
    the first, so one run lists them all."""

    def __init__(self, cell):
        self.cell = cell
        self.wrong = []

    async def send(self, c, want, cmd, **args):
        r = await c.command(cmd, **args)
        got = "ack" if r["type"] == "ack" else r.get("code")
        if got != want:
            self.wrong.append(f"{self.cell}: {cmd} {args}: expected {want}, got {got} ({r})")
        return r

    def check(self, cond, what):
        if not cond:
            self.wrong.append(f"{self.cell}: {what}")

    def done(self):
        assert not self.wrong, "\n" + "\n".join(self.wrong)


def forbidden_commands(mode, role, ctx):
    """(cmd, args) that `role` may not send in a `mode` room (§5.6)."""
    if role == "admin":
        return []
    cases = []
    if role == "viewer":
        cases += [("seek", dict(group=0, x=500, y=500)),
                  ("seek_clear", dict(group=ctx["rival_group"])),
                  ("obstacle_add", dict(x=100, y=100, r=10))]
    if role == "player" and mode == "rts":
        cases += [("seek", dict(group=ctx["rival_group"], x=500, y=500)),
                  ("seek_clear", dict(group=ctx["rival_group"])),
                  ("seek", dict(group=0, x=500, y=500)),
                  ("seek_clear", dict(group=0)),
                  ("seek", dict(group=200, x=500, y=500))]
    cases += [("obstacle_remove", dict(obstacle=ctx["rival_obstacle"])),
              ("obstacle_remove", dict(obstacle=ctx["owner_obstacle"])),
              ("obstacle_clear", {}),
              ("spawn", dict(n=5, group=ctx["own_group"], x=800, y=500)),
              ("despawn", dict(n=5)),
              ("params", dict(max_speed=42)),
              ("pause", {}),
              ("resume", {}),
              ("step", dict(n=3)),
              ("reset", dict(boids=5)),
              ("kick", dict(client=ctx["victim"]))]
    return cases


async def allowed_commands(m, d, room, mode, role, c, ctx):
    """Sends what `role` may send and checks each took effect."""
    await m.send(c, "ack", "ping")
    if role == "viewer":
        return
    own = ctx["own_group"]
    if role == "player":
        r = await m.send(c, "ack", "seek", group=own, x=500, y=400)
        s = await settled(c)
        m.check(target_of(s, own) == (500, 400), f"seek: target of group {own} {s['targets']}")
        if mode == "sandbox":
            await m.send(c, "ack", "seek", group=7, x=600, y=400)
            s = await settled(c)
            m.check(target_of(s, 7) == (600, 400), f"seek any group: {s['targets']}")
            await m.send(c, "ack", "seek_clear", group=7)
        await m.send(c, "ack", "seek_clear", group=own)
        s = await settled(c)
        m.check(target_of(s, own) is None and target_of(s, 7) is None,
                f"seek_clear: targets {s['targets']}")
        r = await m.send(c, "ack", "obstacle_add", x=120, y=120, r=10)
        mine = r.get("obstacle")
        s = await settled(c)
        m.check(mine in obstacle_ids(s), f"obstacle_add: {s['obstacles']}")
        await m.send(c, "ack", "obstacle_remove", obstacle=mine)
        s = await settled(c)
        m.check(mine not in obstacle_ids(s), f"obstacle_remove own: {s['obstacles']}")
        return
    # admin: every command, on everybody's things.
    rival = ctx["rival_group"]
    await m.send(c, "ack", "seek", group=rival, x=700, y=700)
    s = await settled(c)
    m.check(target_of(s, rival) == (700, 700), f"seek group {rival}: {s['targets']}")
    await m.send(c, "ack", "seek_clear", group=rival)
    s = await settled(c)
    m.check(target_of(s, rival) is None, f"seek_clear group {rival}: {s['targets']}")
    await m.send(c, "ack", "obstacle_add", x=120, y=120, r=10)
    await m.send(c, "ack", "obstacle_remove", obstacle=ctx["rival_obstacle"])
    s = await settled(c)
    m.check(ctx["rival_obstacle"] not in obstacle_ids(s), f"obstacle_remove: {s['obstacles']}")
    await m.send(c, "ack", "obstacle_clear")
    s = await settled(c)
    m.check(s["obstacles"] == [], f"obstacle_clear: {s['obstacles']}")
    n = len(s["boids"])
    r = await m.send(c, "ack", "spawn", n=5, group=0, x=800, y=500)
    s = await settled(c)
    m.check(r.get("count") == 5 and len(s["boids"]) == n + 5, f"spawn: {r}, {len(s['boids'])}")
    r = await m.send(c, "ack", "despawn", n=5, group=0)
    s = await settled(c)
    m.check(r.get("count") == 5 and len(s["boids"]) == n, f"despawn: {r}, {len(s['boids'])}")
    await m.send(c, "ack", "params", max_speed=42)
    got = (await welcome_values(d, room, mode=mode))["max_speed"]
    m.check(got == 42, f"params: a new viewer is welcomed with max_speed {got}, not 42")
    await m.send(c, "ack", "resume")
    s1 = await settled(c)
    s2 = await settled(c)
    m.check(not s2["paused"] and s2["tick"] > s1["tick"], "resume: the room does not tick")
    await m.send(c, "ack", "pause")
    s = await settled(c)
    m.check(s["paused"], "pause: no paused flag")
    r = await m.send(c, "ack", "step", n=3)
    s2 = await settled(c, 0.4)
    m.check(r.get("until") == s["tick"] + 3 and s2["tick"] == s["tick"] + 3,
            f"step 3: {r}, tick {s['tick']} -> {s2['tick']}")
    r = await m.send(c, "ack", "reset", boids=5)
    if mode == "sandbox":
        s = await settled(c)
        m.check(r.get("count") == 5 and len(s["boids"]) == 5, f"reset: {r}, {len(s['boids'])}")
    await m.send(c, "ack", "kick", client=ctx["victim"])
    try:
        code = await closed_with(ctx["victim_client"])
    except asyncio.TimeoutError:
        code = None
    m.check(code == 1008, f"kick: the victim's close code is {code}, not 1008")


async def permission_cell(mode, role):
    flags = ["--boids", "60", "--team-units", "10", "--player-obstacles", "4"]
    with Flockd(FLOCKD, *flags) as d:
        room = f"{mode}-{role}"
        m = Matrix(f"{mode} room, {role}")
        owner = await joined(d, room, "admin", mode=mode)
        rival = await joined(d, room, "player", mode=mode, name="rival")
        victim = await joined(d, room, "viewer", mode=mode)
        c = await joined(d, room, role, mode=mode, name="subject")
        m.check(c.welcome["role"] == role and c.welcome["mode"] == mode,
                f"welcome role/mode {c.welcome['role']}/{c.welcome['mode']}")
        ctx = {"rival_group": rival.ack.get("team", 0) if mode == "rts" else 0,
               "own_group": c.ack.get("team", 0) if (mode, role) == ("rts", "player") else 0,
               "victim": victim.ack["client"], "victim_client": victim}
        if mode == "rts":
            assert rival.ack.get("team") in range(1, 9), rival.ack
            if role == "player":
                assert c.ack.get("team") in range(1, 9) and c.ack["team"] != rival.ack["team"]
        await ok(rival, "seek", group=ctx["rival_group"], x=200, y=200)
        ctx["rival_obstacle"] = (await ok(rival, "obstacle_add", x=300, y=300, r=20))["obstacle"]
        ctx["owner_obstacle"] = (await ok(owner, "obstacle_add", x=900, y=600, r=30))["obstacle"]
        await ok(owner, "pause")
        before = await settled(c)
        values = await welcome_values(d, room, mode=mode)

        for cmd, args in forbidden_commands(mode, role, ctx):
            await m.send(c, "forbidden", cmd, **args)
        after = await settled(c)
        m.check(frozen(after) == frozen(before),
                "forbidden commands changed the snapshot (tick, boids, obstacles, targets "
                "or flags)")
        m.check(await welcome_values(d, room, mode=mode) == values,
                "forbidden params changed values")
        m.check(victim.ws.open, "a forbidden kick closed the victim")

        await allowed_commands(m, d, room, mode, role, c, ctx)
        r = await m.send(c, "ack", "join", room="elsewhere", role="viewer")
        m.check(r.get("room") == "elsewhere", f"join ack {r}")
        for x in (owner, rival, victim, c):
            await x.close()
        m.done()


def permission_test(mode, role):
    async def fn():
        await permission_cell(mode, role)
    article = "an" if role == "admin" else "a"
    fn.__name__ = f"{article}_{role}_in_a_{mode}_room_may_send_exactly_what_the_role_table_allows"
    return test(fn)


for _mode in ("sandbox", "rts"):
    for _role in ("viewer", "player", "admin"):
        permission_test(_mode, _role)


# ---- 3. who is admin -------------------------------------------------------------------

@test
async def without_a_token_loopback_clients_are_admins_and_remote_ones_are_not():
    with Flockd(FLOCKD, "--boids", "50", "--host", "0.0.0.0") as d:
        c = await Client.connect(d.url)
        w = c.welcome
        assert (w["room"], w["mode"], w["role"]) == ("default", "sandbox", "admin"), w
        await ok(c, "params", max_speed=80)
        await ok(c, "pause")
        r = await c.join("default", "admin")
        assert r["type"] == "ack" and r["role"] == "admin", r
        addr = non_loopback_address()
        if addr is None:
            print("  (no non-loopback address: remote part skipped)")
            return
        far = await Client.connect(f"ws://{addr}:{d.port}/ws")
        assert far.welcome["role"] == "player", far.welcome
        await refused(far, "forbidden", "params", max_speed=90)
        await refused(far, "forbidden", "resume")
        await refused(far, "forbidden", "join", room="default", role="admin")
        await refused(far, "forbidden", "join", room="default", role="admin", token="guess")
        assert far.welcome["role"] == "player" and len(far.welcomes) == 1
        s = await settled(c)
        assert s["paused"], "a remote player resumed the room"
        assert (await welcome_values(d, "default"))["max_speed"] == 80
        await far.close()
        await c.close()


@test
async def with_a_token_only_its_holders_are_admins_and_wrong_tokens_are_counted():
    with Flockd(FLOCKD, "--boids", "50", "--admin-token", "s3cret") as d:
        c = await Client.connect(d.url)
        assert c.welcome["role"] == "player", c.welcome
        values = c.welcome["values"]
        await refused(c, "forbidden", "params", max_speed=80)
        await refused(c, "forbidden", "pause")
        n0 = await asyncio.to_thread(admin_rejections, d)
        await refused(c, "forbidden", "join", room="default", role="admin", token="wrong")
        n1 = await asyncio.to_thread(admin_rejections, d)
        assert n1 == n0 + 1, (n0, n1)
        await refused(c, "forbidden", "join", room="default", role="admin")
        n1 = await asyncio.to_thread(admin_rejections, d)
        assert len(c.welcomes) == 1 and c.welcome["role"] == "player"
        assert (await welcome_values(d, "default")) == values
        r = await c.join("default", "admin", token="s3cret")
        assert r["type"] == "ack" and r["role"] == "admin", r
        assert c.welcome["role"] == "admin"
        await ok(c, "params", max_speed=80)
        r = await c.join("fort", "admin", token="s3cret")
        assert r["type"] == "ack" and c.welcome["role"] == "admin", r
        assert (await asyncio.to_thread(admin_rejections, d)) == n1
        await c.close()
    with Flockd(FLOCKD, "--boids", "50", env={"FLOCKD_ADMIN_TOKEN": "from-env"}) as d:
        c = await Client.connect(d.url)
        assert c.welcome["role"] == "player", c.welcome
        await refused(c, "forbidden", "join", room="default", role="admin", token="s3cret")
        r = await c.join("default", "admin", token="from-env")
        assert r["type"] == "ack" and c.welcome["role"] == "admin", r
        await c.close()


# ---- 4. RTS teams ----------------------------------------------------------------------

@test
async def rts_players_own_one_team_each_and_steer_only_it():
    flags = ["--boids", "50", "--team-units", "12", "--team-cap", "40", "--max-teams", "2"]
    with Flockd(FLOCKD, *flags) as d:
        a = await joined(d, "arena", "player", mode="rts", name="ann")
        b = await joined(d, "arena", "player", mode="rts", name="bob")
        for c, team in ((a, 1), (b, 2)):
            assert c.ack["team"] == team and c.ack["room"] == "arena", c.ack
            assert c.ack["role"] == "player" and c.ack["client"] == c.welcome["client"], c.ack
            assert REJOIN_TOKEN.match(c.ack["rejoin"]), c.ack
            w = c.welcome
            assert (w["room"], w["mode"], w["role"], w["team"]) == ("arena", "rts", "player", team)
            assert w["values"]["own_group_only"] == 1, w["values"]
        assert a.ack["rejoin"] != b.ack["rejoin"]
        s = await settled(a)
        assert group_counts(s) == {1: 12, 2: 12}, group_counts(s)
        bases = torus_distance(s, group_centre(s, 1), group_centre(s, 2))
        assert bases > 100, f"the teams' bases are {bases:.0f} units apart"

        await refused(a, "forbidden", "seek", group=2, x=100, y=100)
        await refused(a, "forbidden", "seek", group=0, x=100, y=100)
        await ok(a, "seek", group=1, x=400, y=300)
        await refused(b, "forbidden", "seek_clear", group=1)
        s = await settled(a)
        assert s["targets"] == [(1, 400.0, 300.0)], s["targets"]

        c = await Client.connect(d.url)
        await refused(c, "bad_room", "join", room="arena", role="player", mode="rts")
        assert len(c.welcomes) == 1 and c.welcome["room"] == "default"

        admin = await joined(d, "arena", "admin", mode="rts")
        assert "team" not in admin.ack and "team" not in admin.welcome, admin.ack
        await refused(admin, "capacity", "spawn", n=29, group=1, x=800, y=500)
        s = await settled(admin)
        assert group_counts(s) == {1: 12, 2: 12}, group_counts(s)
        r = await ok(admin, "spawn", n=28, group=1, x=800, y=500)
        assert r["count"] == 28
        await refused(admin, "capacity", "spawn", n=1, group=1, x=800, y=500)
        await ok(admin, "spawn", n=5, group=0, x=800, y=500)
        s = await settled(admin)
        assert group_counts(s) == {0: 5, 1: 40, 2: 12}, group_counts(s)
        e = await room_entry(d, "arena")
        assert (e["mode"], e["players"], e["admins"], e["teams"]) == ("rts", 2, 1, 2), e
        for x in (a, b, c, admin):
            await x.close()


@test
async def a_kicked_players_team_is_despawned_at_once():
    with Flockd(FLOCKD, "--boids", "50", "--team-units", "10", "--grace", "30") as d:
        p = await joined(d, "arena", "player", mode="rts")
        admin = await joined(d, "arena", "admin", mode="rts")
        s = await settled(admin)
        assert group_counts(s) == {p.ack["team"]: 10}, group_counts(s)
        other = await Client.connect(d.url)
        await refused(admin, "not_found", "kick", client=other.welcome["client"])
        await ok(admin, "kick", client=p.ack["client"])
        assert await closed_with(p) == 1008, p.ws.close_code
        await admin.wait_for(lambda: group_counts(admin.snapshots[-1][1]) == {}, 3)
        assert other.ws.open
        await admin.close()
        await other.close()


# ---- 5. obstacle quotas ----------------------------------------------------------------

@test
async def players_hold_at_most_their_quota_of_obstacles_and_remove_only_their_own():
    with Flockd(FLOCKD, "--boids", "50", "--player-obstacles", "3") as d:
        p = await joined(d, "q", "player", name="p")
        q = await joined(d, "q", "player", name="q")
        m = await joined(d, "q", "admin")
        assert p.welcome["limits"]["player_obstacles"] == 3, p.welcome["limits"]
        mine = [(await ok(p, "obstacle_add", x=100 + 100 * i, y=100, r=10))["obstacle"]
                for i in range(3)]
        await refused(p, "capacity", "obstacle_add", x=500, y=500, r=10)
        s = await settled(p)
        assert obstacle_ids(s) == mine, s["obstacles"]
        await refused(q, "forbidden", "obstacle_remove", obstacle=mine[0])
        s = await settled(p)
        assert obstacle_ids(s) == mine, s["obstacles"]
        await ok(p, "obstacle_remove", obstacle=mine[0])
        mine = mine[1:] + [(await ok(p, "obstacle_add", x=500, y=500, r=10))["obstacle"]]
        theirs = [(await ok(q, "obstacle_add", x=100 + 100 * i, y=800, r=10))["obstacle"]
                  for i in range(3)]
        await ok(m, "obstacle_remove", obstacle=mine[0])
        await p.close()
        # Obstacles outlive their owner; only who may remove them still may.
        await asyncio.sleep(0.3)
        await refused(q, "forbidden", "obstacle_remove", obstacle=mine[1])
        s = await settled(q)
        assert obstacle_ids(s) == mine[1:] + theirs, s["obstacles"]
        await ok(m, "obstacle_remove", obstacle=mine[1])
        s = await settled(q)
        assert obstacle_ids(s) == mine[2:] + theirs, s["obstacles"]
        await q.close()
        await m.close()


# ---- 6. rate limits --------------------------------------------------------------------

@timing
async def commands_past_the_burst_are_rate_limited_in_turn_and_abuse_closes_with_1008():
    with Flockd(FLOCKD, "--boids", "50", "--rate", "2", "--burst", "20") as d:
        c = await Client.connect(d.url)
        other = await Client.connect(d.url)
        assert c.welcome["limits"]["rate"] == 2 and c.welcome["limits"]["burst"] == 20
        for i in range(26):
            await c.send_raw(f'{{"cmd":"obstacle_add","id":{i + 1},"x":{50 + 50 * i},'
                             f'"y":500,"r":5}}')
        await c.wait_for(lambda: len(c.replies) >= 26, 5)
        await asyncio.sleep(0.3)
        assert [r["id"] for r in c.replies] == list(range(1, 27)), c.replies
        kinds = [r["type"] if r["type"] == "ack" else r["code"] for r in c.replies]
        assert set(kinds) <= {"ack", "rate_limited"}, kinds
        assert kinds[:20] == ["ack"] * 20, kinds
        # What refills while the 26 are read: 2 a second.
        timely(kinds.count("ack") <= 22, kinds)
        acked = [r["obstacle"] for r in c.replies if r["type"] == "ack"]
        s = await settled(c)
        assert obstacle_ids(s) == acked, (s["obstacles"], acked)
        assert (await other.command("ping"))["type"] == "ack", "the limit is per connection"
        await asyncio.sleep(1.5)
        assert (await c.command("ping"))["type"] == "ack"

        for i in range(100):
            await c.send_raw(f'{{"cmd":"ping","id":{1000 + i}}}')
        assert await closed_with(c, 12) == 1008, c.ws.close_code
        tail = [r["id"] for r in c.replies[27:]]
        assert tail == list(range(1000, 1000 + len(tail))), tail
        assert (await other.command("ping"))["type"] == "ack"
        await other.close()


# ---- 7. leaving and rejoining an RTS room ----------------------------------------------

def team_entry(c, team):
    return next((p for p in roster_players(c) or [] if p.get("team") == team), None)


@test
async def an_rts_team_waits_its_grace_period_for_its_player_and_is_freed_after():
    flags = ["--boids", "50", "--team-units", "10", "--max-teams", "1", "--grace", "2",
             "--player-obstacles", "2"]
    with Flockd(FLOCKD, *flags) as d:
        a = await joined(d, "arena", "player", mode="rts", name="ann")
        v = await joined(d, "arena", "viewer", mode="rts")
        team, token = a.ack["team"], a.ack["rejoin"]
        s = await a.next_snapshot()
        base = group_centre(s, team)
        await ok(a, "seek", group=team, x=400, y=300)
        obst = [(await ok(a, "obstacle_add", x=200 + 100 * i, y=200, r=10))["obstacle"]
                for i in range(2)]
        await a.close()
        await v.wait_for(lambda: team_entry(v, team) is not None
                         and not team_entry(v, team)["connected"], 3)
        e = team_entry(v, team)
        assert (e["client"], e["name"], e["role"]) == (0, "ann", "player"), e
        s = await settled(v)
        assert group_counts(s) == {team: 10} and target_of(s, team) == (400, 300), s["targets"]
        assert obstacle_ids(s) == obst
        late = await Client.connect(d.url)
        await refused(late, "bad_room", "join", room="arena", role="player", mode="rts")

        a2 = await joined(d, "arena", "player", mode="rts", name="ann", rejoin=token)
        assert a2.ack["team"] == team and a2.ack["rejoin"] != token, a2.ack
        assert REJOIN_TOKEN.match(a2.ack["rejoin"]), a2.ack
        await v.wait_for(lambda: (team_entry(v, team) or {}).get("connected") is True, 3)
        assert team_entry(v, team)["client"] == a2.ack["client"]
        await refused(a2, "capacity", "obstacle_add", x=900, y=900, r=10)
        await ok(a2, "obstacle_remove", obstacle=obst[1])  # the team's, added before
        await ok(a2, "seek", group=team, x=1000, y=600)
        s = await settled(v)
        assert group_counts(s) == {team: 10} and obstacle_ids(s) == obst[:1], s["obstacles"]

        await a2.close()
        t0 = time.time()
        await asyncio.sleep(1.0)
        s = v.snapshots[-1][1]
        assert group_counts(s) == {team: 10}, "units left before the grace period ended"
        await v.wait_for(lambda: group_counts(v.snapshots[-1][1]) == {}, 5)
        gone = time.time() - t0
        assert 1.5 <= gone <= 5, gone
        s = await settled(v)
        assert target_of(s, team) is None, s["targets"]
        await v.wait_for(lambda: team_entry(v, team) is None, 2)
        b = await joined(d, "arena", "player", mode="rts", name="bob")
        assert b.ack["team"] == team, b.ack
        s = await b.next_snapshot()
        assert group_counts(s) == {team: 10}
        moved = torus_distance(s, base, group_centre(s, team))
        assert moved < 40, f"team {team}'s new units start {moved:.0f} units from its base"
        print(f"  units left {gone:.2f} s after the player (grace 2 s)")
        for x in (v, late, b):
            await x.close()


# ---- 8. expiry of empty rooms ----------------------------------------------------------

@test
async def empty_rooms_expire_and_the_default_room_never_does():
    with Flockd(FLOCKD, "--boids", "50", "--room-expiry", "1") as d:
        c = await joined(d, "tmp", "player", boids=40)
        assert [r["name"] for r in (await rooms(d))["rooms"]] == ["default", "tmp"]
        await asyncio.sleep(2.5)
        assert await room_entry(d, "tmp") is not None, "a room with a member expired"
        await ok(c, "obstacle_add", x=100, y=100, r=10)
        await c.join("default", "viewer")
        t0 = time.time()
        while await room_entry(d, "tmp") is not None:
            assert time.time() - t0 < 5, "the empty room did not expire"
            await asyncio.sleep(0.1)
        gone = time.time() - t0
        assert gone >= 0.5, gone
        # Its world is gone: joining again creates a new one.
        await c.join("tmp", "player", boids=30)
        s = await settled(c)
        assert len(s["boids"]) == 30 and s["obstacles"] == [], (len(s["boids"]), s["obstacles"])
        await c.close()
        await asyncio.sleep(3)
        names = [r["name"] for r in (await rooms(d))["rooms"]]
        assert names == ["default"], names
        print(f"  the empty room expired {gone:.2f} s after its last member left (expiry 1 s)")


# ---- 9. limits on creating rooms -------------------------------------------------------

async def still_in_default(c, boids):
    assert c.welcome["room"] == "default" and len(c.welcomes) == 1, c.welcome["room"]
    s = await c.next_snapshot()
    assert len(s["boids"]) == boids


@test
async def joins_past_max_rooms_or_with_creating_off_are_bad_room():
    with Flockd(FLOCKD, "--boids", "40", "--max-rooms", "3") as d:
        held = []
        for i in range(1, 5):
            c = await Client.connect(d.url)
            r = await c.join(f"r{i}", "viewer")
            if r["type"] != "ack":
                break
            held.append(c)
        assert r["type"] == "error" and r["code"] == "bad_room", r
        listing = await rooms(d)
        assert listing["max_rooms"] == 3 and len(listing["rooms"]) == 3, listing
        assert f"r{i}" not in [e["name"] for e in listing["rooms"]]
        await still_in_default(c, 40)
        for x in held + [c]:
            await x.close()
    with Flockd(FLOCKD, "--boids", "40", "--allow-create", "0") as d:
        c = await Client.connect(d.url)
        await refused(c, "bad_room", "join", room="new", role="viewer")
        listing = await rooms(d)
        assert listing["create"] is False and len(listing["rooms"]) == 1, listing
        await still_in_default(c, 40)
        r = await c.join("default", "viewer")
        assert r["type"] == "ack" and c.welcome["role"] == "viewer", r
        await c.close()


@test
async def room_size_and_mode_are_checked_when_joining():
    with Flockd(FLOCKD, "--boids", "40", "--max-room-boids", "500") as d:
        c = await Client.connect(d.url)
        await refused(c, "out_of_range", "join", room="big", role="player", boids=501)
        assert await room_entry(d, "big") is None
        await still_in_default(c, 40)
        r = await c.join("big", "player", boids=500)
        assert r["type"] == "ack", r
        assert len((await c.next_snapshot())["boids"]) == 500
        assert (await room_entry(d, "big"))["boids"] == 500
        await refused(c, "bad_room", "join", room="big", role="player", mode="rts")
        await refused(c, "bad_room", "join", room="default", role="viewer", mode="rts")
        other = await joined(d, "war", "player", mode="rts")
        await refused(c, "bad_room", "join", room="war", role="viewer", mode="sandbox")
        assert c.welcome["room"] == "big" and len(c.welcomes) == 2
        # boids is ignored for a room that exists.
        v = await joined(d, "big", "viewer", boids=20)
        assert len((await v.next_snapshot())["boids"]) == 500
        for x in (c, other, v):
            await x.close()


@test
async def players_of_a_room_with_a_password_must_give_it_and_viewers_need_none():
    with Flockd(FLOCKD, "--boids", "40") as d:
        owner = await joined(d, "locked", "player", password="pw")
        assert (await room_entry(d, "locked"))["password"] is True
        assert (await room_entry(d, "default"))["password"] is False
        c = await Client.connect(d.url)
        await refused(c, "forbidden", "join", room="locked", role="player")
        await refused(c, "forbidden", "join", room="locked", role="player", password="PW")
        await still_in_default(c, 40)
        r = await c.join("locked", "player", password="pw")
        assert r["type"] == "ack" and c.welcome["room"] == "locked", r
        v = await joined(d, "locked", "viewer")
        assert v.welcome["role"] == "viewer"
        for x in (owner, c, v):
            await x.close()


# ---- sessions, /api/rooms and roster ---------------------------------------------------

@test
async def a_join_is_answered_in_turn_then_welcomed_and_only_the_new_rooms_snapshots_follow():
    with Flockd(FLOCKD, "--boids", "40") as d:
        c = await Client.connect(d.url)
        await c.next_snapshot()
        await c.send_raw('{"cmd":"ping","id":1}')
        await c.send_raw('{"cmd":"seek","id":2,"group":0,"x":10,"y":10}')
        await c.send_raw('{"cmd":"join","id":3,"room":"big","role":"player","boids":300}')
        await c.send_raw('{"cmd":"ping","id":4}')
        await c.wait_for(lambda: any(r.get("id") == 4 for r in c.replies), 5)
        # Five frames of the new room (a sanitizer's room on a loaded
        # machine sends fewer than its rate).
        await c.wait_for(lambda: c.welcome.get("room") == "big" and
                         len(c.snapshots) - c.welcome_at >= 5, 10)
        seq = [(m["type"], m.get("id"), m.get("room")) for m in c.messages]
        acks = [(t, i) for t, i, _ in seq if t in ("ack", "error")]
        assert acks == [("ack", 1), ("ack", 2), ("ack", 3), ("ack", 4)], seq
        joined_at = seq.index(("ack", 3, "big"))
        assert seq[joined_at + 1] == ("welcome", None, "big"), seq
        assert seq[joined_at + 2] == ("roster", None, "big"), seq
        before = [len(s["boids"]) for _, s in c.snapshots[:c.welcome_at]]
        after = [len(s["boids"]) for _, s in c.snapshots[c.welcome_at:]]
        assert before and set(before) == {40}, before
        assert len(after) >= 5 and set(after) == {300}, after
        await c.close()


@test
async def the_room_list_reports_every_room_with_its_members_and_rates():
    flags = ["--boids", "120", "--max-rooms", "5", "--team-units", "7"]
    with Flockd(FLOCKD, *flags) as d:
        local = await Client.connect(d.url)  # never joins: admin of default
        v = await joined(d, "b-room", "viewer")
        p = await joined(d, "a-room", "player", mode="rts")
        m = await joined(d, "a-room", "admin", mode="rts")
        await asyncio.sleep(0.5)
        status, ctype, body = await asyncio.to_thread(d.http, "/api/rooms")
        assert status == 200 and ctype.startswith("application/json"), (status, ctype)
        listing = await rooms(d)
        assert listing["max_rooms"] == 5 and listing["create"] is True, listing
        names = [e["name"] for e in listing["rooms"]]
        assert names == ["default", "a-room", "b-room"], names
        types = {"name": str, "mode": str, "players": int, "admins": int, "viewers": int,
                 "boids": int, "tick": int, "tick_hz": (int, float),
                 "snapshot_hz": (int, float), "password": bool, "teams": int,
                 "late_p99_ms": (int, float)}
        for e in listing["rooms"]:
            for key, t in types.items():
                assert isinstance(e.get(key), t), (e["name"], key, e.get(key))
            assert e["tick"] > 0 and e["tick_hz"] == 60 and e["snapshot_hz"] == 20, e
            assert 0 <= e["late_p99_ms"] < 1000, e
        by = {e["name"]: e for e in listing["rooms"]}
        got = {n: (e["mode"], e["players"], e["admins"], e["viewers"], e["boids"], e["teams"])
               for n, e in by.items()}
        assert got == {"default": ("sandbox", 0, 1, 0, 120, 0),
                       "a-room": ("rts", 1, 1, 0, 7, 1),
                       "b-room": ("sandbox", 0, 0, 1, 120, 0)}, got
        for x in (local, v, p, m):
            await x.close()


@test
async def members_get_the_roster_on_every_player_join_and_leave():
    with Flockd(FLOCKD, "--boids", "40") as d:
        v = await joined(d, "party", "viewer")
        await v.wait_for(lambda: v.rosters, 3)
        r = v.rosters[-1]
        assert (r["room"], r["mode"], r["viewers"], r["players"]) == ("party", "sandbox", 1, []), r
        ann = await joined(d, "party", "player", name="ann")
        await ann.wait_for(lambda: ann.rosters, 3)
        root = await joined(d, "party", "admin", name="root")
        want = sorted([(ann.ack["client"], "ann", "player"), (root.ack["client"], "root", "admin")])
        for c in (v, ann, root):
            await c.wait_for(lambda c=c: len(roster_players(c) or []) == 2, 3)
            players = roster_players(c)
            assert [(p["client"], p["name"], p["role"]) for p in players] == want, players
            assert all(p["connected"] is True and "team" not in p for p in players), players
            assert c.rosters[-1]["viewers"] == 1, c.rosters[-1]
        await ann.close()
        for c in (v, root):
            await c.wait_for(lambda c=c: len(roster_players(c) or []) == 1, 3)
            assert roster_players(c)[0]["name"] == "root"
        # An RTS roster names teams, in team order.
        a = await joined(d, "war", "player", mode="rts", name="a")
        b = await joined(d, "war", "player", mode="rts", name="b")
        await a.wait_for(lambda: len(roster_players(a) or []) == 2, 3)
        assert [(p["name"], p["team"]) for p in roster_players(a)] == [("a", 1), ("b", 2)]
        assert a.rosters[-1]["mode"] == "rts" and a.rosters[-1]["room"] == "war"
        for x in (v, root, a, b):
            await x.close()


# ---- 10. timing: a small room beside a huge one ----------------------------------------

@timing
async def timing_a_1k_room_keeps_time_beside_a_100k_room():
    flags = ["--boids", "100000", "--capacity", "100000", "--workers", "2"]
    with Flockd(FLOCKD, *flags) as d:
        c = await Client.connect(d.url, headers_only=True)
        r = await c.join("small", "viewer", boids=1000)
        assert r["type"] == "ack", r
        hz, tick_hz = c.welcome["snapshot_hz"], c.welcome["tick_hz"]
        await asyncio.sleep(2)  # past the creation
        over0 = await asyncio.to_thread(d.metric, "flockd_tick_overruns_total")
        big0 = (await room_entry(d, "default"))["tick"]
        n0, t0 = len(c.snapshots), time.time()
        small, big = [], []
        for _ in range(5):
            await asyncio.sleep(1)
            listing = await rooms(d)
            by = {e["name"]: e for e in listing["rooms"]}
            small.append(by["small"]["late_p99_ms"])
            big.append(by["default"]["late_p99_ms"])
        rate = (len(c.snapshots) - n0) / (time.time() - t0)
        big_hz = (by["default"]["tick"] - big0) / (time.time() - t0)
        over1 = await asyncio.to_thread(d.metric, "flockd_tick_overruns_total")
        assert by["default"]["boids"] == 100000 and by["small"]["boids"] == 1000, by
        assert all(s["boid_count"] == 1000 for _, s in c.snapshots[n0:])
        print(f"FIGURES 1k room beside 100k room (--workers 2): small room late_p99_ms "
              f"max {max(small):.3f} (samples {', '.join(f'{x:.3f}' for x in small)}), "
              f"snapshots {rate:.1f}/s of {hz:g}; 100k room late_p99_ms max {max(big):.3f}, "
              f"{big_hz:.1f} ticks/s of {tick_hz:g}; "
              f"tick overruns +{(over1 or 0) - (over0 or 0):.0f} in {time.time() - t0:.1f} s",
              flush=True)
        assert rate > 0, "the small room sent nothing"
        timely(rate >= 0.9 * hz, rate)
        timely(max(small) < 1000 / tick_hz, small)
        await c.close()


if __name__ == "__main__":
    SUITE.main(skip_args=1)
