#!/usr/bin/python3
"""A big room's step on several tick threads changes nothing but its speed.

Usage: test_workers.py FLOCKD_BINARY
The same seed and the same commands (a reset, parameters, a spawn, a seek
target and an obstacle for a while, stepping while paused) must leave the
same state hash after every round of steps whether flockd ticks with --workers 1 or --workers 2;
with two workers the room's long ticks are cut into pieces for both
threads (flockd_split_ticks_total grows), with one they never are, and a
small room never is. (What an idle flockd costs is a benchmark's figure:
tests/bench/idle_bench.py.) The last line is "N passed, N failed".
"""

import asyncio
import os
import sys
import time

from flockd_harness import Client, Flockd, Suite

FLOCKD = sys.argv[1] if len(sys.argv) > 1 else "build/server/flockd"
SUITE = Suite(timeout=300)
test = SUITE.test

BOIDS = 30011  # no multiple of the pieces' cut (64)
# A short period, so that a room of BOIDS takes more than its share
# (an eighth) of it even on a fast machine: its steps are split.
TICK_HZ = 240
STEP_N = 25


async def hashes_after_commands(d):
    """Drives one flockd through a fixed script; returns the (tick, hash)
    pings reported after each round of steps."""
    c = await Client.connect(d.url, headers_only=True)
    try:
        assert (await c.command("pause"))["type"] == "ack"
        r = await c.command("reset", seed=77, boids=BOIDS, timeout=30)
        assert r["type"] == "ack", r
        w = c.welcome["world"]
        # Before each round of steps: the commands that precede it. Rounds
        # with and without targets and obstacles take different rules.
        rounds = [
            [("params", {"group": 1, "max_speed": 150, "fov": 200}),
             ("spawn", {"n": 500, "group": 1, "x": w["width"] * 0.7, "y": w["height"] * 0.2})],
            [],
            [("seek", {"group": 0, "x": w["width"] * 0.3, "y": w["height"] * 0.6}),
             ("obstacle_add", {"x": w["width"] * 0.5, "y": w["height"] * 0.5, "r": 40})],
            [("seek_clear", {"group": 0}), ("obstacle_clear", {})],
        ]
        seen = []
        for commands in rounds:
            for cmd, args in commands:
                r = await c.command(cmd, timeout=30, **args)
                assert r["type"] == "ack", (cmd, r)
            r = await c.command("step", n=STEP_N, timeout=30)
            assert r["type"] == "ack", r
            until = r["until"]
            ping = await c.command("ping", timeout=30)
            for _ in range(600):  # the steps run one per tick: wait for the last
                if ping["tick"] >= until:
                    break
                await asyncio.sleep(0.05)
                ping = await c.command("ping", timeout=30)
            assert ping["tick"] == until, (ping, until)
            seen.append((ping["tick"], ping["hash"]))
        return seen
    finally:
        await c.close()


async def run_with(workers):
    with Flockd(FLOCKD, "--boids", str(BOIDS), "--capacity", str(BOIDS + 1000),
                "--tick-hz", str(TICK_HZ), "--snapshot-hz", "20",
                "--workers", str(workers), stop_timeout=60) as d:
        seen = await hashes_after_commands(d)
        split = await asyncio.to_thread(d.metric, "flockd_split_ticks_total")
        return seen, split


@test
async def one_worker_and_two_give_the_same_hashes_after_every_step():
    one, split_one = await run_with(1)
    two, split_two = await run_with(2)
    print(f"FIGURES --workers 1: {one}, split ticks {split_one}; "
          f"--workers 2: {two}, split ticks {split_two}", flush=True)
    assert split_one == 0, split_one
    assert split_two > 0, split_two  # the comparison is between split and whole steps
    assert one == two, (one, two)
    assert len({h for _, h in one}) == len(one)  # the world moved between pings


@test
async def a_small_room_never_splits_its_steps():
    with Flockd(FLOCKD, "--boids", "100", "--workers", "2") as d:
        c = await Client.connect(d.url, headers_only=True)
        start = (await c.command("ping"))["tick"]
        for _ in range(200):
            if (await c.command("ping"))["tick"] >= start + 60:
                break
            await asyncio.sleep(0.05)
        stats = (await c.command("stats"))["stats"]
        await c.close()
        ticks = await asyncio.to_thread(d.metric, "flockd_ticks_total")
        split = await asyncio.to_thread(d.metric, "flockd_split_ticks_total")
        assert ticks >= 60, ticks
        # The rule: a room splits after two ticks in a row longer than 1/8
        # of its period. Its ticks stayed shorter (under a sanitizer even a
        # small room's may not, and then it may split): at most a tick that
        # the machine held up for a moment split, not the room's steps.
        share_ms = 1000 / c.welcome["tick_hz"] / 8
        if stats["tick_ms_p99"] < share_ms:
            assert split <= ticks / 100, (split, ticks, stats["tick_ms_p99"])
        else:
            print(f"  ticks of {stats['tick_ms_p99']:.2f} ms p99 (over {share_ms:.2f} ms): "
                  f"{split:.0f} split", flush=True)


if __name__ == "__main__":
    SUITE.main(skip_args=1)
