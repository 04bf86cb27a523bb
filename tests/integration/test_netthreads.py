#!/usr/bin/python3
"""Connections served by several service threads (--net-threads 2).

Usage: test_netthreads.py FLOCKD_BINARY [--functional | --timing] [--untimed] [TEST_NAME...]
Client ids are strided over the service threads (id % threads names the
thread that owns the connection, PROTOCOL.md's ids are otherwise opaque), so
each test connects until it holds clients of both threads, then checks what
must hold across them: viewers of several rooms on both threads get their
rooms' frames (at the full rate, in the timing part unless --untimed) and /metrics counts
each thread's deliveries; a command sent through one thread is acked and
seen by a viewer on the other; kicks, joins and leaves reach across threads;
--max-per-ip and --max-clients count every thread's connections; SIGTERM
closes every client of every thread with 1001. The last line is
"N passed, N failed".
"""

import asyncio
import time

import websockets

from flockd_harness import Client, Flockd, Suite, arg

FLOCKD = arg(0, "build/server/flockd")
SUITE = Suite(timeout=120)
test, timing, timely = SUITE.test, SUITE.timing, SUITE.assert_timely

THREADS = 2
HZ = 20


def thread_of(c):
    return c.welcome["client"] % THREADS


async def spread(d, per_thread):
    """Clients connected until each thread holds `per_thread` of them:
    {thread: [clients]}; the extra connections are closed."""
    by = {t: [] for t in range(THREADS)}
    for _ in range(40 * per_thread):
        if all(len(v) >= per_thread for v in by.values()):
            break
        c = await Client.connect(d.url, headers_only=True)
        if len(by[thread_of(c)]) < per_thread:
            by[thread_of(c)].append(c)
        else:
            await c.close()
            await asyncio.sleep(0.05)  # its place is free again before the next
    assert all(len(v) == per_thread for v in by.values()), {t: len(v) for t, v in by.items()}
    return by


async def joined(c, room, role, **args):
    ack = await c.join(room, role, **args)
    assert ack["type"] == "ack", (room, role, ack)
    c.ack = ack
    return c


def metric(d, name):
    return d.metric(name)


async def metrics(d, name):
    return [await asyncio.to_thread(metric, d, f'{name}{{thread="{t}"}}') for t in range(THREADS)]


async def close_all(clients):
    for c in clients:
        await c.close()


def flockd(*args):
    return Flockd(FLOCKD, "--net-threads", str(THREADS), "--snapshot-hz", str(HZ), *args)


async def viewers_of_two_rooms(d):
    """Two viewers of each of rooms a (30 boids) and b (70 boids) on each
    thread: {(room, thread): [clients]}."""
    by = await spread(d, 4)
    out = {}
    for t, cs in by.items():
        for i, c in enumerate(cs):
            room = "ab"[i % 2]
            await joined(c, room, "viewer", boids=30 if room == "a" else 70)
            out.setdefault((room, t), []).append(c)
    return out


@test
async def viewers_on_both_threads_get_the_frames_of_the_room_each_joined():
    with flockd("--boids", "10") as d:
        assert await metrics(d, "flockd_net_connections") == [0, 0]
        rooms = await viewers_of_two_rooms(d)
        assert await metrics(d, "flockd_net_connections") == [4, 4]
        before = await metrics(d, "flockd_net_deliveries_total")
        start = {c: len(c.snapshots) for cs in rooms.values() for c in cs}
        await asyncio.sleep(1.0)
        for (room, t), cs in rooms.items():
            for c in cs:
                got = [s for _, s in c.snapshots[start[c]:]]
                assert len(got) >= 5, (room, t, len(got))
                assert {s["boid_count"] for s in got} == {30 if room == "a" else 70}, (room, t)
                ticks = [s["tick"] for s in got]
                assert ticks == sorted(set(ticks)), (room, t, ticks)
        after = await metrics(d, "flockd_net_deliveries_total")
        assert all(a - b >= 4 * 5 for a, b in zip(after, before)), (before, after)
        await close_all([c for cs in rooms.values() for c in cs])


@timing
async def viewers_on_both_threads_get_every_room_at_the_full_rate():
    with flockd("--boids", "2000") as d:
        rooms = await viewers_of_two_rooms(d)
        await asyncio.sleep(0.5)
        before = await metrics(d, "flockd_net_deliveries_total")
        start = {c: len(c.snapshots) for cs in rooms.values() for c in cs}
        seconds = 3.0
        await asyncio.sleep(seconds)
        after = await metrics(d, "flockd_net_deliveries_total")
        for (room, t), cs in rooms.items():
            for c in cs:
                fps = (len(c.snapshots) - start[c]) / seconds
                print(f"  room {room}, thread {t}: {fps:.1f} frames/s", flush=True)
                assert fps > 0, (room, t, "no frames")
                timely(fps >= 0.9 * HZ, (room, t, fps))
        share = [(a - b) for a, b in zip(after, before)]
        print(f"  deliveries per thread: {share}", flush=True)
        assert all(s > 0 for s in share), share
        timely(all(s >= 0.9 * HZ * seconds * 4 for s in share), share)
        await close_all([c for cs in rooms.values() for c in cs])


@test
async def a_command_through_one_thread_is_acked_and_seen_by_viewers_on_the_other():
    with flockd("--boids", "10") as d:
        by = await spread(d, 1)
        admin, viewer = by[0][0], by[1][0]
        await joined(admin, "x", "admin", boids=40)
        await joined(viewer, "x", "viewer")
        r = await admin.command("spawn", n=25, group=0, x=100, y=100, spread=10)
        assert r["type"] == "ack", r
        await viewer.wait_for(lambda: viewer.snapshots and
                              viewer.snapshots[-1][1]["boid_count"] == 65, 3)
        # And the other way round: a command through thread 1.
        await joined(viewer, "x", "admin")
        r = await viewer.command("despawn", n=5)
        assert r["type"] == "ack", r
        await admin.wait_for(lambda: admin.snapshots and
                             admin.snapshots[-1][1]["boid_count"] == 60, 3)
        await close_all([admin, viewer])


def listed(c):
    return {p["client"] for p in c.rosters[-1]["players"]} if c.rosters else set()


@test
async def joins_leaves_and_kicks_reach_across_threads():
    with flockd("--boids", "10") as d:
        by = await spread(d, 2)
        admin, other = by[0]
        p, q = by[1]
        await joined(admin, "k", "admin", name="admin")
        mine = admin.welcome["client"]
        await joined(p, "k", "player", name="p")
        await joined(q, "k", "player", name="q")
        pid, qid = p.welcome["client"], q.welcome["client"]
        await admin.wait_for(lambda: listed(admin) == {mine, pid, qid}, 3)
        await p.wait_for(lambda: listed(p) == {mine, pid, qid}, 3)
        # q leaves (joins another room) on thread 1: thread 0's admin sees it.
        await joined(q, "elsewhere", "player")
        await admin.wait_for(lambda: listed(admin) == {mine, pid}, 3)
        # The admin on thread 0 kicks p on thread 1.
        r = await admin.command("kick", client=pid)
        assert r["type"] == "ack", r
        await asyncio.wait_for(p.reader, 3)
        assert p.ws.close_code == 1008, p.ws.close_code
        await admin.wait_for(lambda: listed(admin) == {mine}, 3)
        assert (await asyncio.to_thread(d.room, "k"))["players"] == 0
        # A member of another room cannot be kicked from this one.
        r = await admin.command("kick", client=qid)
        assert r["type"] == "error" and r["code"] == "not_found", r
        assert q.ws.open and other.ws.open
        await close_all([admin, other, q])


async def refused_status(d):
    try:
        ws = await websockets.connect(d.url, subprotocols=["flock.v1"])
    except websockets.exceptions.InvalidStatusCode as e:
        return e.status_code
    await ws.close()
    return 101


@test
async def per_address_and_total_limits_count_every_threads_connections():
    with flockd("--boids", "10", "--max-per-ip", "4") as d:
        by = await spread(d, 2)
        assert await refused_status(d) == 429
        await by[1][0].close()
        await asyncio.sleep(0.3)
        c = await Client.connect(d.url)  # the freed place, whichever thread takes it
        await close_all([c, by[0][0], by[0][1], by[1][1]])
    with flockd("--boids", "10", "--max-clients", "4") as d:
        by = await spread(d, 2)
        assert await refused_status(d) == 503
        health = await asyncio.to_thread(d.http, "/healthz")
        assert '"clients":4' in health[2], health
        await close_all([c for cs in by.values() for c in cs])


@test
async def sigterm_closes_the_clients_of_every_thread_with_1001():
    with flockd("--boids", "10") as d:
        by = await spread(d, 3)
        clients = [c for cs in by.values() for c in cs]
        for c in clients:
            await c.next_snapshot()
        t0 = time.time()
        rc = await asyncio.get_running_loop().run_in_executor(None, d.terminate)
        assert rc == 0, rc
        assert time.time() - t0 < 3
        for c in clients:
            await asyncio.wait_for(c.reader, 3)
            assert c.ws.close_code == 1001, (thread_of(c), c.ws.close_code)


if __name__ == "__main__":
    SUITE.main(skip_args=1)
