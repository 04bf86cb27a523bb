#!/usr/bin/python3
"""A room that cannot keep its tick rate slows its clock (PROTOCOL.md §6.7):
a room of a million boids at 60 ticks a second beside a small room, on two
tick threads (a sanitizer's build: 300,000). The huge room reports a dilation below 1 in stats, in the
welcome of a client that joins it, in /metrics and in a `dilation` message
to its members; the small room keeps 1.0 throughout; once the huge room's
boids are despawned it recovers to 1.0 and says so.

Nothing here bounds time tightly (the machine may be loaded, or a
sanitizer's): each figure is waited for, for up to two minutes.

Usage: test_dilation.py FLOCKD_BINARY [TEST_NAME...]
The last line is "N passed, N failed".
"""

import asyncio
import time

from flockd_harness import Flockd, Suite, arg, joined, ok, sanitizer_of

FLOCKD = arg(0, "build/server/flockd")
SUITE = Suite(timeout=300)
test = SUITE.test

# Far more than one tick thread steps 60 times a second: a million boids
# (at some 20 M boid updates a second, about 50 ms a step), fewer under a
# sanitizer, which is slower by three to fifteen times (and its ticks of a
# million boids would take seconds each).
HUGE = 300000 if sanitizer_of(FLOCKD) else 1000000
FLAGS = ["--tick-hz", "60", "--snapshot-hz", "20", "--workers", "2", "--boids", "1000",
         "--capacity", str(HUGE), "--max-room-boids", str(HUGE)]
PATIENCE = 120  # seconds any figure is waited for


async def stats(c):
    return (await ok(c, "stats"))["stats"]


async def stats_until(c, cond, what):
    """Asks for stats until cond(stats) holds (PATIENCE seconds at most)."""
    deadline = time.time() + PATIENCE
    while True:
        s = await stats(c)
        if cond(s):
            return s
        assert time.time() < deadline, f"{what}: last stats {s}"
        await asyncio.sleep(0.25)


def dilations(c):
    """The dilation messages c was sent, in order."""
    return [m for m in c.messages if m.get("type") == "dilation"]


async def metric_until(d, name, cond, what):
    deadline = time.time() + PATIENCE
    while True:
        v = await asyncio.to_thread(d.metric, name)
        if v is not None and cond(v):
            return v
        assert time.time() < deadline, f"{what}: {name} is {v}"
        await asyncio.sleep(0.25)


@test
async def a_huge_room_dilates_its_clock_and_a_small_one_beside_it_does_not():
    with Flockd(FLOCKD, *FLAGS, stop_timeout=60) as d:
        small = await joined(d, "default", "viewer", headers_only=True)
        admin = await joined(d, "huge", "admin", headers_only=True, boids=HUGE, timeout=60)
        # The huge room sheds snapshots, then slows its clock: stats say so ...
        s = await stats_until(admin, lambda s: s["dilation"] < 0.9 and s["snapshot_hz"] <= 5,
                              "the huge room dilates")
        assert 0 < s["dilation"] < 1 and s["boids"] == HUGE, s
        assert s["snapshot_hz"] > 0, s  # at the floor (or below it, one a tick)
        # ... a dilation message to its members, for this room ...
        await admin.wait_for(lambda: any(m["factor"] < 1 for m in dilations(admin)), PATIENCE)
        told = next(m for m in dilations(admin) if m["factor"] < 1)
        assert told["room"] == "huge" and 0 < told["tick_hz"] < 60, told
        assert 0 < told["snapshot_hz"] <= 5, told
        # ... the welcome of a client that comes now ...
        late = await joined(d, "huge", "viewer", headers_only=True, timeout=30)
        assert 0 < late.welcome["dilation"] < 1, late.welcome
        # ... and /metrics, a gauge per room.
        await metric_until(d, 'flockd_room_time_dilation{room="huge"}', lambda v: v < 1,
                           "the huge room's gauge")
        # The small room keeps its rate: 1.0 everywhere, no dilation.
        s = await stats_until(small, lambda s: s["dilation"] == 1, "the small room keeps up")
        assert s["snapshot_hz"] == 20, s
        assert "dilation" not in small.welcome, small.welcome
        await metric_until(d, 'flockd_room_time_dilation{room="default"}', lambda v: v == 1,
                           "the small room's gauge")
        assert not [m for m in dilations(small) if m["factor"] < 0.5], dilations(small)
        assert all(m["room"] == "huge" for m in dilations(admin) + dilations(late))
        # Its boids gone, the huge room keeps up again and tells its members.
        r = await ok(admin, "despawn", n=HUGE, timeout=60)
        assert r["count"] == HUGE, r
        # (Its clock first, then its snapshots: their cost's estimate falls a
        # fifth with each snapshot it sends.)
        s = await stats_until(admin, lambda s: s["dilation"] == 1 and s["snapshot_hz"] == 20,
                              "the huge room recovers")
        assert s["boids"] == 0, s
        await admin.wait_for(lambda: dilations(admin)[-1]["factor"] == 1, PATIENCE)
        back = dict(dilations(admin)[-1])  # its snapshots then maybe not all back yet
        assert 0 < back.pop("snapshot_hz") <= 20, dilations(admin)[-1]
        assert back == {"type": "dilation", "room": "huge", "factor": 1, "tick_hz": 60}, back
        await late.wait_for(lambda: dilations(late) and dilations(late)[-1]["factor"] == 1,
                            PATIENCE)
        await metric_until(d, 'flockd_room_time_dilation{room="huge"}', lambda v: v == 1,
                           "the huge room's gauge, recovered")
        assert (await stats(small))["dilation"] == 1
        for c in (small, admin, late):
            await c.close()


@test
async def a_dilated_room_keeps_its_commands_queue_bounded():
    """Commands sent faster than a dilated room applies them (between its
    ticks) wait in its queue of --queue commands: past it they are refused
    queue_full at once, and every command gets exactly one reply."""
    with Flockd(FLOCKD, *FLAGS, "--queue", "16", stop_timeout=60) as d:
        admin = await joined(d, "huge", "admin", headers_only=True, boids=HUGE, timeout=60)
        await stats_until(admin, lambda s: s["dilation"] < 1, "the huge room dilates")
        sent = []
        for burst in range(3):  # each most likely within one of its long ticks
            for i in range(60):
                sent.append(1000 + 100 * burst + i)
                await admin.send_raw('{"cmd":"ping","id":%d}' % sent[-1])
            await asyncio.sleep(0.15)
        ours = lambda: [r for r in admin.replies if r.get("id") in sent]  # noqa: E731
        await admin.wait_for(lambda: len(ours()) >= len(sent), PATIENCE)
        await asyncio.sleep(0.5)
        assert sorted(r["id"] for r in ours()) == sent  # one reply each
        kinds = [r["type"] if r["type"] == "ack" else r["code"] for r in ours()]
        assert set(kinds) == {"ack", "queue_full"}, kinds
        assert (await stats(admin))["dilation"] < 1
        await admin.close()


if __name__ == "__main__":
    SUITE.main(skip_args=1)
