#!/usr/bin/python3
"""Integration tests: a real flockd, driven by python3-websockets clients.

Usage: test_flockd.py FLOCKD_BINARY [--functional | --timing] [--untimed] [TEST_NAME...]
Each test starts its own flockd on an ephemeral loopback port. The last
line is "N passed, N failed".
"""

import asyncio
import json
import math
import socket
import time

import websockets

from flockd_harness import Client, Flockd, Suite, arg, sanitizer_of

FLOCKD = arg(0, "build/server/flockd")
SUITE = Suite(timeout=60)
test = SUITE.test
timing = SUITE.timing
timely = SUITE.assert_timely


def centroid_distance(snap, group, tx, ty):
    """Mean wrap-aware distance of a group's boids to (tx, ty)."""
    w, h = snap["width"], snap["height"]
    ds = []
    for x, y, _, g in snap["boids"]:
        if g != group:
            continue
        dx = abs(x - tx); dy = abs(y - ty)
        dx = min(dx, w - dx); dy = min(dy, h - dy)
        ds.append(math.hypot(dx, dy))
    return sum(ds) / len(ds)


@test
async def welcome_arrives_with_world_rates_and_parameters():
    with Flockd(FLOCKD, "--boids", "300", "--snapshot-hz", "20") as d:
        c = await Client.connect(d.url)
        w = c.welcome
        assert w["protocol"] == 1
        assert w["tick_hz"] == 60 and w["snapshot_hz"] == 20
        assert w["world"]["width"] == 1600 and w["world"]["height"] == 1000
        names = {p["name"] for p in w["params"]}
        assert {"max_speed", "perception", "w_alignment"} <= names
        assert isinstance(w["client"], int)
        await c.close()


@timing
async def snapshots_arrive_at_the_configured_rate_and_decode():
    with Flockd(FLOCKD, "--boids", "500", "--snapshot-hz", "20") as d:
        c = await Client.connect(d.url)
        await asyncio.sleep(0.5)
        n0 = len(c.snapshots)
        await asyncio.sleep(3.0)
        rate = (len(c.snapshots) - n0) / 3.0
        timely(18.5 <= rate <= 21.5, rate)
        snap = c.snapshots[-1][1]
        assert len(snap["boids"]) == 500
        assert len(snap["raw"]) == 44 + 5 + 5 * 500  # header, one group run, 5 B/boid
        ticks = [s["tick"] for _, s in c.snapshots[n0:]]
        assert all(b > a for a, b in zip(ticks, ticks[1:])), "ticks must increase"
        await c.close()


@test
async def seek_moves_the_group_toward_the_target():
    with Flockd(FLOCKD, "--boids", "200") as d:
        c = await Client.connect(d.url)
        before = await c.next_snapshot()
        d0 = centroid_distance(before, 0, 400, 300)
        ack = await c.command("seek", group=0, x=400, y=300)
        assert ack["type"] == "ack" and ack["id"] == 1 and ack["tick"] >= before["tick"]
        snap = await c.next_snapshot(ack["tick"])
        assert (0, 400.0, 300.0) == tuple(snap["targets"][0]), snap["targets"]
        await asyncio.sleep(6)
        d1 = centroid_distance(c.snapshots[-1][1], 0, 400, 300)
        assert d1 < 0.5 * d0, (d0, d1)
        await c.close()


@test
async def obstacles_appear_in_snapshots_and_are_removed_by_id():
    with Flockd(FLOCKD, "--boids", "100") as d:
        c = await Client.connect(d.url)
        ack = await c.command("obstacle_add", x=800, y=500, r=40)
        assert ack["type"] == "ack", ack
        oid = ack["obstacle"]
        snap = await c.next_snapshot(ack["tick"])
        assert [(oid, 800.0, 500.0, 40.0)] == [tuple(o) for o in snap["obstacles"]]
        ack2 = await c.command("obstacle_remove", obstacle=oid)
        assert ack2["type"] == "ack"
        snap = await c.next_snapshot(ack2["tick"])
        assert snap["obstacles"] == []
        err = await c.command("obstacle_remove", obstacle=oid)
        assert err["type"] == "error" and err["code"] == "not_found", err
        await c.close()


@test
async def pause_freezes_the_tick_and_step_advances_exactly_n():
    with Flockd(FLOCKD, "--boids", "100") as d:
        c = await Client.connect(d.url)
        ack = await c.command("pause")
        s1 = await c.next_snapshot(ack["tick"] - 1)
        await asyncio.sleep(0.5)
        s2 = c.snapshots[-1][1]
        assert s2["paused"] and s2["tick"] == s1["tick"], (s1["tick"], s2["tick"])
        assert s2["raw"][44:] == s1["raw"][44:], "boids must not move while paused"
        ack = await c.command("step", n=7)
        assert ack["type"] == "ack"
        await asyncio.sleep(0.6)
        s3 = c.snapshots[-1][1]
        assert s3["tick"] == s2["tick"] + 7, (s2["tick"], s3["tick"])
        await c.command("resume")
        await asyncio.sleep(0.3)
        assert c.snapshots[-1][1]["tick"] > s3["tick"]
        await c.close()


BAD = [
    ("{not json", "bad_json"),
    ("[1,2,3]", "bad_json"),
    ('{"cmd":"fly","id":1}', "unknown_cmd"),
    ('{"cmd":"seek","id":2,"group":0,"x":"10","y":5}', "bad_arg"),
    ('{"cmd":"seek","id":3,"group":0,"x":1e308,"y":5}', "out_of_range"),
    ('{"cmd":"seek","id":4,"group":0,"x":NaN,"y":5}', "bad_json"),
    ('{"cmd":"seek","id":5,"group":300,"x":1,"y":5}', "out_of_range"),
    ('{"cmd":"seek","id":6,"group":0,"x":1}', "bad_arg"),
    ('{"cmd":"obstacle_add","id":7,"x":5,"y":5,"r":-1}', "out_of_range"),
    ('{"cmd":"spawn","id":8,"n":100000000,"group":0,"x":5,"y":5}', "out_of_range"),
    ('{"cmd":"spawn","id":9,"n":16000,"group":0,"x":5,"y":5}', "capacity"),
    ('{"cmd":"params","id":10,"max_speed":-5}', "out_of_range"),
    ('{"cmd":"params","id":11,"warp":1}', "bad_arg"),
    ('{"cmd":"ping","id":12,"extra":true}', "bad_arg"),
    ('{"cmd":"step","id":13,"n":0}', "out_of_range"),
    ('{"cmd":"obstacle_remove","id":14,"id2":1}', "bad_arg"),
]


@test
async def every_bad_command_gets_its_error_code_and_changes_nothing():
    with Flockd(FLOCKD, "--boids", "400") as d:
        c = await Client.connect(d.url)
        await c.command("pause")
        await asyncio.sleep(0.2)
        before = c.snapshots[-1][1]
        for text, code in BAD:
            await c.send_raw(text)
        await c.wait_for(lambda: len([r for r in c.replies if r["type"] == "error"])
                         >= len(BAD), 5)
        errors = [r for r in c.replies if r["type"] == "error"]
        # Every reply leaves in the order the commands arrived, whether it was
        # refused while parsing or by the room (capacity).
        assert [e["code"] for e in errors] == [code for _, code in BAD], errors
        assert all(e["message"] for e in errors)
        by_id = {e["id"]: e["code"] for e in errors if e["id"] is not None}
        for text, code in BAD:
            rid = json.loads(text).get("id") if text.startswith('{"') else None
            if rid is not None and "NaN" not in text:
                assert by_id[rid] == code, (text, by_id.get(rid))
        await asyncio.sleep(0.3)
        after = c.snapshots[-1][1]
        assert after["raw"][8:16] == before["raw"][8:16], "tick must not move"
        assert after["raw"][24:] == before["raw"][24:], "world must be unchanged"
        await c.close()


@test
async def replies_leave_in_the_order_commands_arrived():
    with Flockd(FLOCKD, "--boids", "50") as d:
        c = await Client.connect(d.url)
        texts = ['{"cmd":"ping","id":1}', '{"cmd":"nope","id":2}', '{bad', '{"cmd":"ping","id":4}',
                 '{"cmd":"seek","id":5,"group":0,"x":-1,"y":0}', '{"cmd":"obstacle_remove","id":6,"obstacle":99}']
        for t in texts:
            await c.send_raw(t)
        await c.wait_for(lambda: len(c.replies) >= len(texts), 5)
        got = [(r["id"], r["type"], r.get("code")) for r in c.replies]
        assert got == [(1, "ack", None), (2, "error", "unknown_cmd"), (None, "error", "bad_json"),
                       (4, "ack", None), (5, "error", "out_of_range"),
                       (6, "error", "not_found")], got
        await c.close()


@test
async def commands_take_effect_between_ticks_without_waiting_for_the_next():
    # One tick every 500 ms: a command that waited for the next tick would
    # be acked after 250 ms on average, and eight in a row all within
    # 200 ms about once in 1,500 runs.
    with Flockd(FLOCKD, "--boids", "100", "--tick-hz", "2", "--snapshot-hz", "2") as d:
        c = await Client.connect(d.url)
        took = []
        for k in range(8):
            t0 = time.monotonic()
            ack = await c.command("seek", group=0, x=100 + k, y=100)
            took.append(time.monotonic() - t0)
            assert ack["type"] == "ack", ack
        assert max(took) < 0.2, took
        # Applied before the next step: the snapshot it came after does not
        # show it, the first snapshot of a later tick does.
        shown = await c.next_snapshot()
        ack = await c.command("obstacle_add", x=800, y=500, r=40)
        assert ack["type"] == "ack" and ack["tick"] == shown["tick"], (ack, shown["tick"])
        assert shown["obstacles"] == [], shown["obstacles"]
        snap = await c.next_snapshot(ack["tick"])
        assert snap["tick"] == ack["tick"] + 1, (snap["tick"], ack["tick"])
        assert [(ack["obstacle"], 800.0, 500.0, 40.0)] == [tuple(o) for o in snap["obstacles"]]
        await c.close()


def raw_ws_connect(port):
    """A WebSocket client that completes the handshake and then never reads."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connect: small window
    s.connect(("127.0.0.1", port))
    s.sendall(("GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
               "Sec-WebSocket-Version: 13\r\n\r\n").encode())
    return s


@timing
async def clients_that_never_read_neither_grow_memory_nor_delay_others():
    with Flockd(FLOCKD, "--boids", "2000", "--stale-timeout", "2") as d:
        c = await Client.connect(d.url)
        await asyncio.sleep(1)
        # The watcher's own rate before, so the comparison holds on slow
        # (sanitizer) builds too.
        n0 = len(c.snapshots)
        await asyncio.sleep(3)
        base = (len(c.snapshots) - n0) / 3
        rss0 = d.rss_kib()
        idle = [raw_ws_connect(d.port) for _ in range(20)]
        n0 = len(c.snapshots)
        await asyncio.sleep(8)
        rate = (len(c.snapshots) - n0) / 8
        rss1 = d.rss_kib()
        assert rate > 0, "the watcher got nothing while they were stuck"
        timely(rate >= 0.95 * base and base > 5, (base, rate))
        # A stuck client holds at most one partly written 10 KB frame.
        assert rss1 - rss0 < 20 * 64 + 4096, (rss0, rss1)
        _, _, metrics = d.http("/metrics")
        stale = [l for l in metrics.splitlines() if l.startswith('flockd_limit_hits_total{limit="stale"}')]
        assert stale and int(stale[0].split()[1]) >= 20, stale
        for s in idle:
            s.close()
        await c.close()


@test
async def healthz_and_metrics_answer_over_http():
    with Flockd(FLOCKD, "--boids", "50") as d:
        c = await Client.connect(d.url)
        await c.command("ping")
        await c.send_raw("{bad")
        await asyncio.sleep(0.2)
        status, ctype, body = d.http("/healthz")
        h = json.loads(body)
        assert status == 200 and ctype.startswith("application/json")
        assert h["status"] == "ok" and h["clients"] == 1 and h["tick"] > 0
        status, ctype, body = d.http("/metrics")
        assert status == 200 and ctype.startswith("text/plain")
        for name in ("flockd_ticks_total", "flockd_tick_duration_seconds_bucket",
                     "flockd_tick_overruns_total", "flockd_clients 1",
                     "flockd_snapshots_sent_total", "flockd_snapshots_skipped_total",
                     "flockd_bytes_sent_total", "flockd_commands_accepted_total",
                     'flockd_commands_rejected_total{code="bad_json"} 1'):
            assert name in body, name
        # What malloc holds (the soak judges it): the room's arrays at least,
        # where malloc is glibc's; a sanitizer's allocator answers for itself.
        if sanitizer_of(FLOCKD) is None:
            assert d.metric("flockd_heap_in_use_bytes") > 1 << 20, body
        assert d.metric("flockd_heap_free_bytes") >= 0, body
        # The ping's reply was timed, and not the refusal sent at once.
        assert d.metric("flockd_command_reply_seconds_count") == 1, body
        assert d.metric('flockd_command_reply_seconds_bucket{le="+Inf"}') == 1
        first = d.metric("flockd_command_reply_seconds_sum")
        assert first > 0, first
        t0 = time.monotonic()
        for _ in range(5):  # one at a time: each waits inside the client's round trip
            await c.command("seek", group=0, x=10, y=10)
        took = time.monotonic() - t0
        assert d.metric("flockd_command_reply_seconds_count") == 6
        assert 0 < d.metric("flockd_command_reply_seconds_sum") - first < took
        await c.close()


@test
async def sigterm_closes_clients_with_1001_and_exits_zero():
    with Flockd(FLOCKD, "--boids", "50") as d:
        c = await Client.connect(d.url)
        await c.next_snapshot()
        t0 = time.time()
        rc = await asyncio.get_running_loop().run_in_executor(None, d.terminate)
        assert rc == 0, rc
        assert time.time() - t0 < 3
        await asyncio.wait_for(c.reader, 3)
        assert c.ws.close_code == 1001, c.ws.close_code


@timing
async def oversized_messages_close_with_1009_and_the_room_keeps_ticking():
    with Flockd(FLOCKD, "--boids", "50", "--max-message", "1024") as d:
        watcher = await Client.connect(d.url)
        bad = await Client.connect(d.url)
        await bad.send_raw("x" * 5000)
        await asyncio.wait_for(bad.reader, 3)
        assert bad.ws.close_code == 1009, bad.ws.close_code
        n0 = len(watcher.snapshots)
        await asyncio.sleep(1)
        assert len(watcher.snapshots) > n0, "the room stopped"
        timely(len(watcher.snapshots) - n0 >= 18, len(watcher.snapshots) - n0)
        await watcher.close()


if __name__ == "__main__":
    SUITE.main(skip_args=1)
