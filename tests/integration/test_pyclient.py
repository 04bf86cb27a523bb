#!/usr/bin/python3
"""Integration tests: the flockd Python library (client/python) against a real
flockd.

Usage: test_pyclient.py FLOCKD_BINARY [--functional | --timing] [TEST_NAME...]
Every command acked with its members; refusals from the library (before
sending) and from the server; the library's checks against what the server
answers for the very same messages (generated from the schema, and the cases
of proto/vectors/commands.json); snapshots of both protocol versions (the
same positions at the same tick), estimated velocities, a refused frame that
asks for a key frame; version 3 (ids, a view's ack and its frames, the view
sent again after a reconnect and forgotten by a join, a view given at
connect in the URL, a refused frame);
reconnecting after flockd is killed and restarted on
the same port (a script with no reconnect code of its own resumes: the
timing part measures how soon) and an RTS player taking its team back;
wss:// with a self-signed certificate; the pip install into a venv and into a
user site; the trial script of client/python/README.md. The last line is
"N passed, N failed".
"""

import asyncio
import json
import math
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from flockd_harness import Client, Flockd, Suite, arg  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIBRARY = os.path.join(ROOT, "client", "python")
sys.path.insert(0, LIBRARY)
import flockd  # noqa: E402
import numpy as np  # noqa: E402
from flockd import schema  # noqa: E402

FLOCKD = arg(0, "build/server/flockd")
PYTHON = "/usr/bin/python3"
SUITE = Suite(timeout=120)
test, timing = SUITE.test, SUITE.timing


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def killed(d):
    """SIGKILL, as a crash would; the harness's exit checks are skipped."""
    d.proc.send_signal(signal.SIGKILL)
    d.proc.wait()
    d._join_drains()


async def refused(coro):
    """The CommandError a command raised (None if it was acked)."""
    try:
        await coro
        return None
    except flockd.CommandError as e:
        return e


# ---- commands ------------------------------------------------------------------------

@test
async def every_command_is_acked_with_its_members():
    with Flockd(FLOCKD, "--boids", "100") as d:
        async with flockd.connect_async(d.url, room="acks", role="admin") as c:
            other = await flockd.connect_async(d.url, room="acks", role="viewer")
            assert (c.welcome.room, c.welcome.role, c.welcome.mode) == ("acks", "admin",
                                                                        "sandbox")
            ack = await c.ping()
            assert isinstance(ack, flockd.Ack) and re.fullmatch(r"[0-9a-f]{16}", ack.hash), ack
            assert ack.tick >= 0
            await c.params(group=4, w_alignment=0.5, own_group_only=1)
            assert (await c.spawn(n=30, group=4, x=100, y=200)).count == 30
            await c.seek(group=4, x=400, y=300)
            await c.seek_clear(group=4)
            obstacle = (await c.obstacle_add(x=800, y=500, r=40)).obstacle
            assert obstacle >= 1
            await c.obstacle_remove(obstacle=obstacle)
            await c.obstacle_add(x=10, y=10, r=5)
            await c.obstacle_clear()
            assert (await c.despawn(n=10, group=4)).count == 10
            await c.pause()
            step = await c.step(n=3)
            assert step.until == step.tick + 3, step
            await c.resume()
            assert (await c.reset(seed=5, boids=50)).count == 50
            await c.keyframe()
            stats = (await c.stats()).stats
            assert isinstance(stats, flockd.Stats) and stats.boids == 50, stats
            e = await refused(c.goto(tick=0))  # a live room: the server's refusal
            assert isinstance(e, flockd.Forbidden) and not e.client_side, e
            e = await refused(c.kick(client=other.welcome.client + 1000))
            assert isinstance(e, flockd.NotFound) and not e.client_side, e
            lost = asyncio.get_running_loop().create_future()
            other.on("disconnect", lambda ev: lost.done() or lost.set_result(ev))
            await c.kick(client=other.welcome.client)
            ev = await asyncio.wait_for(lost, 5)
            assert ev.code == 1008 and not other.connected, ev
            await asyncio.wait_for(other._ended.wait(), 5)  # 1008: no reconnecting
            try:
                await other.ping()
                raise AssertionError("a kicked client sent a command")
            except flockd.ConnectionLost:
                pass
            await other.close()
            join = await c.join("acks2", "player", name="ann")
            assert (join.room, join.role, c.welcome.room) == ("acks2", "player", "acks2"), join
            assert join.client == c.welcome.client


@test
async def refusals_come_from_the_library_before_sending_and_from_the_server_as_they_are():
    with Flockd(FLOCKD, "--boids", "50", "--capacity", "200", "--admin-token", "s3cret") as d:
        try:
            await flockd.connect_async(d.url, room="x", role="admin", token="wrong")
            raise AssertionError("a wrong token was taken")
        except flockd.Forbidden as e:
            assert not e.client_side and e.command == "join", e
        async with flockd.connect_async(d.url, room="x", role="admin", token="s3cret") as c:
            sent = c._ids  # ids are only drawn for what is sent
            before = next(sent)
            for coro, cls in ((c.seek(group=1, x=1601, y=0), flockd.OutOfRange),
                              (c.seek(group=1.5, x=1, y=0), flockd.BadArgument),
                              (c.seek(group=1, x=1), flockd.BadArgument),
                              (c.params(group=1, wings=2), flockd.BadArgument),
                              (c.command("fly"), flockd.UnknownCommand),
                              (c.seek(group=1, x=math.nan, y=0), flockd.BadJson)):
                e = await refused(coro)
                assert isinstance(e, cls) and e.client_side, (cls, e)
            assert next(sent) == before + 1, "a refused command was sent"
            e = await refused(c.spawn(n=200, group=1, x=1, y=1))  # only the room knows
            assert isinstance(e, flockd.Capacity) and not e.client_side, e
            e = await refused(c.obstacle_remove(obstacle=77))
            assert isinstance(e, flockd.NotFound) and e.code == "not_found", e
        async with flockd.connect_async(d.url, room="x", role="viewer") as v:
            e = await refused(v.seek(group=1, x=1, y=1))
            assert isinstance(e, flockd.Forbidden) and e.client_side, e
            assert (await v.stats()).stats.boids == 50


async def server_answer(raw, text):
    """The server's reply (ack or error) to one message sent as it is."""
    r = await raw.command_text(text)
    return None if r["type"] == "ack" else r


def mirror_cases(welcome):
    """(role, cmd, args) messages the schema implies: each argument at its
    bounds and past them, mistyped, missing; unknown members; registry
    parameters; for each role."""
    room = schema.Room.of(welcome)
    for spec in schema.SCHEMA["commands"]:
        if spec["name"] in ("join", "kick", "reset", "goto", "step"):
            continue  # they change the connection or the room under the test
        base = {}
        for a in spec["args"]:
            if a.get("required"):
                base[a["name"]] = schema.bound(a.get("min", 0), room) if \
                    a["type"] in ("int", "number") else a.get("values", ["a"])[0]
        if spec.get("registry"):
            base["w_alignment"] = 1
        for role in ("admin", "viewer", "player"):
            yield role, spec["name"], dict(base)
        yield "admin", spec["name"], dict(base, not_an_argument=1)
        for a in spec["args"]:
            name = a["name"]
            if a.get("required"):
                yield "admin", spec["name"], {k: v for k, v in base.items() if k != name}
            if a["type"] not in ("int", "number"):
                continue
            lo, hi = schema.bound(a["min"], room), schema.bound(a["max"], room)
            for v in (lo - 1, hi + 1, hi, lo + 0.5, "1", True, None):
                yield "admin", spec["name"], dict(base, **{name: v})
    for v in (10.5, -1, "x", 0.5):
        yield "admin", "params", {"group": 2, "w_alignment": v}
    yield "admin", "params", {"group": 2}
    yield "admin", "params", {"wings": 1}
    yield "admin", "params", {"own_group_only": 0.5}
    for role in ("viewer", "player", "admin"):
        yield role, "join", {"room": "mirror", "role": "viewer", "name": "a\x7f"}
        yield role, "join", {"room": "bad room", "role": "viewer"}
        yield role, "join", {"room": "r" * 33, "role": "viewer"}
        yield role, "join", {"room": "mirror", "role": "pilot"}


@test
async def the_librarys_refusals_are_what_the_server_answers_for_the_same_messages():
    with Flockd(FLOCKD, "--boids", "50", "--rate", "10000", "--burst", "10000") as d:
        raws = {}
        for role in ("admin", "viewer", "player"):
            raws[role] = await RawClient.connect(d.url)
            r = await raws[role].command_text(json.dumps({"cmd": "join", "room": "mirror",
                                                          "role": role}))
            assert r["type"] == "ack", r
            await raws[role].wait_for(lambda c=raws[role]: len(c.welcomes) >= 2, 5)
        checked = 0
        for role, cmd, args in mirror_cases(raws["admin"].welcome):
            room = schema.Room.of(raws[role].welcome)
            text = schema.encode(cmd, args)
            try:
                schema.check(cmd, args, room)
                mine = None
            except flockd.CommandError as e:
                mine = e
            theirs = await server_answer(raws[role], text)
            what = (role, text, mine, theirs)
            if theirs and theirs["code"] in schema.COMMANDS[cmd]["errors"] and mine is None:
                continue  # only the live room decides it (§5.4 apply-time errors)
            assert (mine and mine.code) == (theirs and theirs["code"]), what
            if mine and mine.code != "forbidden":
                assert mine.message == theirs["message"], what
            checked += 1
        print(f"{checked} messages: the library and the server agree", flush=True)
        for raw in raws.values():
            await raw.close()


def commands_json_cases():
    """The cases of proto/vectors/commands.json a library could be asked to
    send: a JSON object whose values Python reads back as they were written."""
    with open(os.path.join(ROOT, "proto", "vectors", "commands.json"), encoding="utf-8") as f:
        vectors = json.load(f)

    def no_duplicates(pairs):
        if len({k for k, _ in pairs}) != len(pairs):
            raise ValueError("duplicate member")
        return dict(pairs)

    for case in vectors["cases"]:
        if "text" not in case or len(case["text"].encode()) > vectors["limits"]["max_message"]:
            continue  # raw bytes, or padding the library never sends
        try:
            m = json.loads(case["text"], object_pairs_hook=no_duplicates,
                           parse_constant=lambda c: 1 / 0)
        except (ValueError, ZeroDivisionError):
            continue
        if not isinstance(m, dict) or not isinstance(m.get("cmd"), str) or \
                not isinstance(m.get("id", 0), int) or isinstance(m.get("id"), bool):
            continue
        if any(isinstance(v, float) and not math.isfinite(v) for v in m.values()):
            continue
        yield vectors["limits"], case, m


@test
async def the_librarys_checks_give_the_verdicts_of_the_command_vectors():
    with Flockd(FLOCKD, "--boids", "10") as d:
        async with flockd.connect_async(d.url) as c:
            registry = c.welcome.to_dict()["params"]
        n = 0
        for limits, case, m in commands_json_cases():
            room = schema.Room(limits["width"], limits["height"], limits["capacity"],
                               limits["max_message"], registry, "admin")
            cmd, msg_id = m.pop("cmd"), m.pop("id", None)
            try:
                schema.check(cmd, m, room, msg_id)
                got = None
            except flockd.CommandError as e:
                got = e.code
            assert got == (None if case.get("ok") else case["error"]), (case["name"], got)
            n += 1
        assert n >= 40, n
        print(f"{n} cases of commands.json", flush=True)


class RawClient(Client):
    """The harness's client, sending text as it is and matching replies by order."""

    async def command_text(self, text, timeout=5):
        seen = len(self.replies)
        await self.ws.send(text)
        await self.wait_for(lambda: len(self.replies) > seen, timeout)
        return self.replies[seen]

    @classmethod
    async def connect(cls, url, **kw):
        return await super().connect(url, headers_only=True, **kw)


# ---- snapshots -----------------------------------------------------------------------

@test
async def snapshots_of_both_versions_show_the_same_state_and_velocities_are_estimated():
    with Flockd(FLOCKD, "--boids", "300") as d:
        v2 = await flockd.connect_async(d.url, room="snaps", role="admin")
        v1 = await flockd.connect_async(d.url, room="snaps", role="viewer", protocol=1)
        assert (v2.protocol, v1.protocol) == (2, 1)
        snap = await v2.next_snapshot(timeout=5)
        snap = await v2.next_snapshot(timeout=5)  # the second has velocities
        assert snap.version == 2 and snap.count == 300 and snap.x.dtype.name == "float64"
        top = v2.welcome["values"]["max_speed"]
        speed = (snap.vx ** 2 + snap.vy ** 2) ** 0.5
        assert not math.isnan(speed.max()) and speed.max() <= top * 1.05 + 1, speed.max()
        assert snap.ids is None
        ack = await v2.spawn(n=20, group=9, x=800, y=500)
        fresh = await v2.next_snapshot(timeout=5)  # taken after the spawn
        assert fresh.count == 320 and fresh.tick > ack.tick and (fresh.group == 9).sum() == 20
        await v2.pause()
        a = await v2.wait_for(lambda s: s.paused, timeout=5)
        b = await v1.wait_for(lambda s: s.paused and s.tick == a.tick, timeout=5)
        assert b.version == 1 and (a.x == b.x).all() and (a.heading == b.heading).all()
        assert (a.group == b.group).all() and a.epoch == b.epoch
        assert v2.refused_frames == 0 and v2.frames > 3, (v2.refused_frames, v2.frames)
        await v2.resume()
        await v1.close()
        await v2.close()


async def after_a_refused_frame(c, is_delta):
    """The first snapshot c gives after its decoder lost its bases right
    after a delta (is_delta(snapshot)), which it must have refused, counted
    and asked a key frame for."""
    for _ in range(5):  # unless the server sent a key frame just then
        await c.wait_for(is_delta, timeout=5)
        it = c.snapshots()
        c._decoder.forget()  # as if the bases were lost: deltas cannot decode
        snap = await it.next(timeout=5)
        it.close()
        if c.refused_frames:
            break
    assert c.refused_frames >= 1 and c.keyframes_requested >= 1, c.refused_frames
    return snap


@test
async def a_frame_the_decoder_refuses_is_counted_and_a_key_frame_asked_for():
    with Flockd(FLOCKD, "--boids", "200") as d:
        async with flockd.connect_async(d.url) as c:
            snap = await after_a_refused_frame(c, lambda s: s.kind == "delta")
            assert snap.kind == "key", snap.kind  # nothing of a refused frame came through
            await c.wait_for(lambda s: s.kind == "delta", timeout=5)


@test
async def a_view_given_at_connect_is_in_the_url_from_the_first_frame_and_after_a_reconnect():
    with Flockd(FLOCKD, "--boids", "2000") as d:
        view = dict(x=100, y=100, w=600, h=400, px=300)
        c = await flockd.connect_async(d.url, protocol=3, view=view)
        ack = c.view_ack
        assert isinstance(ack, flockd.Ack) and len(ack.rect) == 4 and ack.id is None, ack
        snap = await c.next_snapshot(timeout=5)  # the first frame: the view's
        assert list(snap.rect) == ack.rect and snap.count < 2000, (snap.rect, ack)
        back = asyncio.get_running_loop().create_future()
        c.on("reconnect", lambda ev: back.done() or back.set_result(ev))
        c._ws.transport.abort()
        await asyncio.wait_for(back, 10)
        await c.wait_for(lambda s: c.view_ack is not ack, timeout=5)  # acked again
        assert c.view_ack.rect == ack.rect and c.view_ack.id is None, c.view_ack  # in the URL
        assert c.refused_frames == 0, c.refused_frames
        await c.close()
        # a view the room refuses: start() raises it
        try:
            await flockd.connect_async(d.url, protocol=3, view=dict(x=0, y=0, w=0, h=10))
            raise AssertionError("a view of width 0 was taken")
        except flockd.CommandError as e:
            assert e.code == "out_of_range" and "the URL's view" in str(e), e
        for bad in (dict(x=0, y=0, w=10), dict(x=0, y=0, w=10, h=float("inf"))):
            try:
                flockd.Client(d.url, protocol=3, view=bad)
                raise AssertionError(f"{bad} was taken")
            except ValueError:
                pass


@test
async def version_3_snapshots_carry_ids_and_the_view_survives_a_reconnect():
    with Flockd(FLOCKD, "--boids", "2000") as d:
        c = await flockd.connect_async(d.url, room="views", role="admin", protocol=3)
        stream = c.welcome.stream
        assert c.protocol == 3 and stream.audience == "all", (c.protocol, stream)
        snap = await c.next_snapshot(timeout=5)
        grid = (0, 0, stream.tiles.cols, stream.tiles.rows)
        assert (snap.version, snap.kind, snap.count, snap.rect) == (3, "view", 2000, grid)
        assert len(set(snap.ids.tolist())) == 2000 and snap.field is None and not snap.fogged
        ack = await c.view(x=100, y=100, w=600, h=400, px=20)
        assert isinstance(ack, flockd.Ack) and c.view_ack is ack and ack.sample > 0, ack
        assert len(ack.rect) == 4 and ack.rate > 0 and ack.bytes > 0, ack
        snap = await c.wait_for(lambda s: list(s.rect) == ack.rect, timeout=5)
        assert snap.sample == ack.sample and snap.count < 2000 and snap.field, snap
        assert sum(int(f.count.sum()) for f in snap.field) >= snap.count
        later = await c.next_snapshot(timeout=5)
        known = ~np.isnan(later.vx)
        assert known.sum() >= later.count // 2, (known.sum(), later.count)  # matched by id
        speed = np.hypot(later.vx[known], later.vy[known])
        assert speed.max() <= c.welcome.values.max_speed * 1.05 + 1, speed.max()
        back = asyncio.get_running_loop().create_future()
        c.on("reconnect", lambda ev: back.done() or back.set_result(ev))
        c._ws.transport.abort()  # the network fails under it
        await asyncio.wait_for(back, 10)
        snap = await c.wait_for(lambda s: list(s.rect) == ack.rect, timeout=5)
        assert c.view_ack is not ack and c.view_ack.rect == ack.rect, c.view_ack  # sent again
        assert c.refused_frames == 0, c.refused_frames
        await c.join("views2", "admin")  # another room: the whole of it again
        assert c.view_ack is None
        snap = await c.next_snapshot(timeout=5)
        assert snap.rect == grid and snap.sample == 0, snap.rect
        await c.close()


@test
async def a_version_3_frame_the_decoder_refuses_is_counted_and_a_key_frame_asked_for():
    with Flockd(FLOCKD, "--boids", "500") as d:
        async with flockd.connect_async(d.url, protocol=3) as c:
            has_delta = lambda s: any(p.kind == "delta" for p in s.parts)  # noqa: E731
            snap = await after_a_refused_frame(c, has_delta)
            assert {p.kind for p in snap.parts} <= {"key", "empty"}  # the first after the ack
            await c.wait_for(has_delta, timeout=5)


# ---- reconnecting ----------------------------------------------------------------------

SCRIPT = """
import sys, time
import flockd
with flockd.connect(sys.argv[1], room="lab", role="admin") as c:
    c.spawn(n=40, group=3, x=800, y=500)
    for k, snap in enumerate(c.snapshots()):
        if k % 5 == 0:
            c.ping()
        print(f"{time.time():.3f} {snap.tick} {c.reconnects} {c.welcome.room} "
              f"{(snap.group == 3).sum()}", flush=True)
"""


async def resume_after_restart(down_s):
    """Runs SCRIPT (no reconnect code) against a flockd that is killed and,
    down_s seconds later, started again on the same port; returns the
    seconds from the new flockd listening to the script's next snapshot."""
    port = free_port()
    d = Flockd(FLOCKD, "--boids", "100", "--port", str(port)).__enter__()
    env = dict(os.environ, PYTHONPATH=LIBRARY)
    p = await asyncio.create_subprocess_exec(PYTHON, "-c", SCRIPT, d.url, env=env,
                                             stdout=asyncio.subprocess.PIPE,
                                             stderr=asyncio.subprocess.PIPE)
    lines = []

    async def line(pred, timeout):
        deadline = time.time() + timeout
        while time.time() < deadline:
            raw = await asyncio.wait_for(p.stdout.readline(), deadline - time.time())
            if not raw:
                raise AssertionError("the script ended: " + (await p.stderr.read()).decode())
            fields = raw.decode().split()
            lines.append(fields)
            if pred(fields):
                return fields
        raise AssertionError(f"no such line within {timeout} s: {lines[-3:]}")

    try:
        await line(lambda f: f[4] == "40", 10)
        killed(d)
        await asyncio.sleep(down_s)
        d = Flockd(FLOCKD, "--boids", "100", "--port", str(port)).__enter__()
        back_at = time.time()
        first = await line(lambda f: f[2] == "1", 30)
        took = float(first[0]) - back_at
        assert first[3] == "lab", first  # rejoined its room
        await line(lambda f: f[2] == "1", 5)  # and goes on, its pings answered
        return took
    finally:
        p.send_signal(signal.SIGINT)
        await asyncio.wait_for(p.wait(), 10)
        d.__exit__(None, None, None)


@test
async def a_script_resumes_by_itself_after_flockd_is_killed_and_restarted():
    took = await resume_after_restart(0.2)
    print(f"resumed {took:.2f} s after flockd listened again", flush=True)


@timing
async def a_script_resumes_within_two_seconds_of_flockd_answering_again():
    took = await resume_after_restart(3.0)
    print(f"FIGURES reconnect: the script's next snapshot {took * 1000:.0f} ms after the "
          "restarted flockd listened (down 3 s, backoff capped at 1 s)", flush=True)
    assert took <= 2.0, took


@test
async def an_rts_player_takes_its_team_back_after_its_connection_drops():
    with Flockd(FLOCKD, "--boids", "0", "--team-units", "5") as d:
        c = await flockd.connect_async(d.url, room="war", role="player", mode="rts", name="ann")
        team, token = c.team, c.rejoin_token
        assert team and token and c.welcome.team == team, (team, token)
        events = []
        c.on("*", lambda ev: events.append(ev.kind))
        back = asyncio.get_running_loop().create_future()
        c.on("reconnect", lambda ev: back.done() or back.set_result(ev))
        c._ws.transport.abort()  # the network fails under it
        ev = await asyncio.wait_for(back, 10)
        assert ev.attempts >= 1 and ev.downtime > 0, ev
        assert c.team == team and c.welcome.team == team and c.welcome.room == "war"
        assert c.rejoin_token and c.rejoin_token != token  # a new one each join
        seen = [e for e in events if e != "roster"]
        assert seen[:3] == ["disconnect", "welcome", "reconnect"], events
        await c.seek(group=team, x=100, y=100)  # still its own group
        e = await refused(c.seek(group=team + 1, x=100, y=100))
        assert isinstance(e, flockd.Forbidden) and e.client_side, e
        await c.close()


# ---- TLS, installing, the README -----------------------------------------------------------

@test
async def wss_with_a_self_signed_certificate_needs_insecure():
    with tempfile.TemporaryDirectory() as tmp:
        crt, key = os.path.join(tmp, "a.crt"), os.path.join(tmp, "a.key")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                        key, "-out", crt, "-days", "2", "-subj", "/CN=localhost"], check=True,
                       capture_output=True)
        with Flockd(FLOCKD, "--tls-cert", crt, "--tls-key", key, "--boids", "50") as d:
            assert d.url.startswith("wss://")
            try:
                await flockd.connect_async(d.url, connect_timeout=5)
                raise AssertionError("an unverifiable certificate was taken")
            except flockd.ConnectError as e:
                assert "certificate verify failed" in str(e), e
            async with flockd.connect_async(d.url, insecure=True, room="tls",
                                            role="admin") as c:
                assert (await c.ping()).tick >= 0
                assert (await c.next_snapshot(timeout=5)).count == 50
            ctx = flockd.client.tls_context(d.url)
            ctx.load_verify_locations(crt)
            ctx.check_hostname = False
            async with flockd.connect_async(d.url, ssl=ctx) as c:
                assert (await c.next_snapshot(timeout=5)).version == 2


PING = ("import sys, flockd\n"
        "with flockd.connect(sys.argv[1]) as c:\n"
        "    print(flockd.__file__, c.ping().tick >= 0, c.next_snapshot(timeout=5).count)\n")


@test
async def pip_installs_the_package_offline_into_a_venv_and_a_user_site():
    with tempfile.TemporaryDirectory() as tmp, Flockd(FLOCKD, "--boids", "25") as d:
        venv = os.path.join(tmp, "venv")
        # Debian's pip installs into the venv (--python): the venv's own copy
        # of pip would take seconds to set up and install the same way.
        subprocess.run([PYTHON, "-m", "venv", "--system-site-packages", "--without-pip", venv],
                       check=True)
        py = os.path.join(venv, "bin", "python")
        r = subprocess.run([PYTHON, "-m", "pip", "--python", py, "install", LIBRARY],
                           capture_output=True, text=True, cwd=tmp)
        assert r.returncode == 0 and "Successfully installed flockd" in r.stdout, r
        plain = {k: v for k, v in os.environ.items()
                 if k not in ("PYTHONPATH", "PYTHONNOUSERSITE", "PYTHONUSERBASE")}
        user = dict(plain, PYTHONUSERBASE=os.path.join(tmp, "user"))
        r = subprocess.run([PYTHON, "-m", "pip", "install", "--user", "--break-system-packages",
                            LIBRARY], capture_output=True, text=True, cwd=tmp, env=user)
        assert r.returncode == 0, r
        for python, env, where in ((py, plain, venv), (PYTHON, user, os.path.join(tmp, "user"))):
            r = subprocess.run([python, "-c", PING, d.url], capture_output=True, text=True,
                               cwd=tmp, env=env, timeout=30)
            assert r.returncode == 0, r
            path, ok, count = r.stdout.split()
            assert path.startswith(where) and ok == "True" and count == "25", r.stdout
        site = subprocess.run([py, "-c", "import flockd.schema as s; print(s.__file__)"],
                              capture_output=True, text=True, cwd=tmp).stdout.strip()
        assert os.path.exists(os.path.join(os.path.dirname(site), "schema.json")), site


def readme_trial():
    with open(os.path.join(LIBRARY, "README.md"), encoding="utf-8") as f:
        text = f.read()
    block = re.search(r"<!-- trial -->\n```python\n(.*?)```\n<!-- /trial -->", text, re.S)
    return block.group(1)


@test
async def the_trial_script_of_the_readme_fits_25_lines_and_runs():
    script = readme_trial()
    assert len(script.splitlines()) <= 25, len(script.splitlines())
    with Flockd(FLOCKD, "--boids", "100") as d, tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trial.py")
        with open(path, "w") as f:
            f.write(script)
        p = await asyncio.create_subprocess_exec(
            PYTHON, path, d.url, "3", stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=dict(os.environ, PYTHONPATH=LIBRARY))
        out, err = await asyncio.wait_for(p.communicate(), 60)
        out = out.decode()
        assert p.returncode == 0, (out, err.decode())
        m = re.search(r"(\d+) snapshots of 200 boids over ([\d.]+) s; polarization "
                      r"([\d.]+) -> ([\d.]+)", out)
        assert m and int(m.group(1)) >= 50 and float(m.group(2)) >= 2.8, out
        async with flockd.connect_async(d.url, room="trial", role="viewer") as c:
            await c.wait_for(lambda s: s.count == 100, timeout=10)  # its boids despawned


if __name__ == "__main__":
    SUITE.main(skip_args=1)
