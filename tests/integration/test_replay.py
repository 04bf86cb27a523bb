#!/usr/bin/python3
"""Integration tests for recording, replay and checkpoints (server/store/FILES.md,
server/store/README.md): a real flockd on loopback with
--record and --checkpoint-dir, driven by python3-websockets clients, and
`flockd --replay` on what it wrote.

Usage: test_replay.py FLOCKD_BINARY [--full] [--functional | --timing] [--untimed]
       [TEST_NAME...]

The main test drives a room with random valid commands from 3 clients,
pauses it, kills flockd with SIGKILL half way, restarts it on the same
directories (the room must be back within 1 s, an --untimed run, as
sanitizer builds make, leaves the bound out, exactly where its log ends:
the tick and state hash of the last ping before the crash),
drives it on, then stops it with SIGTERM, restarts it again (nothing acked
may be lost) and replays the whole log with --verify: every recorded hash,
the restore from the checkpoint, and the final hash must match. By default
it runs 2,000 boids, 300 commands and 12 s; --full runs the issue's figure:
10,000 boids, 1,000 commands, 60 s, checkpoints every 5 s. Lines starting
with "FIGURES" carry what it measured. The log is also read here, by an
independent reader of FILES.md §1 (record frames and CRCs, types, commands).
"""

import asyncio
import json
import os
import random
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import zlib

from flockd_harness import Client, Flockd, replay, Suite

FLOCKD = sys.argv[1] if len(sys.argv) > 1 else "build/server/flockd"
FULL = "--full" in sys.argv
if FULL:
    sys.argv.remove("--full")
SUITE = Suite(timeout=600 if FULL else 240)
test = SUITE.test
timing = SUITE.timing
timely = SUITE.assert_timely

BOIDS = 10000 if FULL else 2000
COMMANDS = 1000 if FULL else 300
SECONDS = 60.0 if FULL else 12.0
EVERY = 5.0 if FULL else 1.0  # --checkpoint-every
TICK_HZ = 60


# ---- the command log, read independently (FILES.md §1) ----------------------------

BEGIN, COMMAND, HASH, CHECKPOINT, END = 1, 2, 3, 4, 5


def read_log(path):
    """The records of a command log as (offset, type, payload) tuples; a torn
    tail ends the list, as §1.2 says."""
    data = open(path, "rb").read()
    assert data[:8] == b"FLOCKLOG" and struct.unpack_from("<HHI", data, 8) == (1, 0, 0)
    records, at = [], 16
    while at + 8 <= len(data):
        n, crc = struct.unpack_from("<II", data, at)
        payload = data[at + 8:at + 8 + n]
        if n == 0 or len(payload) < n or zlib.crc32(payload) != crc:
            assert not any(data[at + 8 + n:]), f"corrupt record at {at}"
            break
        records.append((at, payload[0], payload))
        at += 8 + n
    return records


def begin_seq(payload):
    """The sequence number of the checkpoint a BEGIN record carries (§2)."""
    build_len = payload[2]
    state = payload[3 + build_len:]
    assert state[:8] == b"FLOCKCKP"
    return struct.unpack_from("<I", state, 16)[0]


def expected_verifications(records):
    """What --verify compares: every HASH and END, every restore whose
    checkpoint was marked earlier in the log, and every resume (a BEGIN of
    reason 2: the state the records before it reach)."""
    marked, count = set(), 0
    for i, (_, typ, p) in enumerate(records):
        if typ in (HASH, END):
            count += 1
        elif typ == CHECKPOINT:
            marked.add(struct.unpack_from("<I", p, 9)[0])
        elif typ == BEGIN and p[1] == 1 and begin_seq(p) in marked:
            count += 1
        elif typ == BEGIN and p[1] == 2 and i > 0:
            count += 1
    return count


# ---- driving a room ---------------------------------------------------------------

class Driver:
    """Random valid commands for one room, shared by the clients: obstacle
    ids it was given, and what the welcome says of the world and the
    parameters."""

    def __init__(self, welcome, seed):
        self.rng = random.Random(seed)
        self.w = welcome["world"]["width"]
        self.h = welcome["world"]["height"]
        self.params = welcome["params"]
        self.obstacles = []
        self.acked = self.refused = 0

    def command(self):
        rng, w, h = self.rng, self.w, self.h
        kind = rng.choices(
            ["seek", "seek_clear", "obstacle_add", "obstacle_remove", "obstacle_clear", "spawn",
             "despawn", "params", "pause", "resume", "step", "reset", "ping"],
            [20, 5, 10, 8, 1, 6, 6, 8, 1, 6, 1, 1, 3])[0]
        if kind == "seek":
            return kind, {"group": rng.randrange(4), "x": rng.uniform(0, w),
                          "y": rng.uniform(0, h)}
        if kind == "seek_clear":
            return kind, {"group": rng.randrange(4)}
        if kind == "obstacle_add":
            return kind, {"x": rng.uniform(0, w), "y": rng.uniform(0, h),
                          "r": rng.uniform(5, 60)}
        if kind == "obstacle_remove":
            oid = self.obstacles.pop(rng.randrange(len(self.obstacles))) if self.obstacles else 1
            return kind, {"obstacle": oid}
        if kind == "spawn":
            return kind, {"n": rng.randrange(1, 60), "group": rng.randrange(4),
                          "x": rng.uniform(0, w), "y": rng.uniform(0, h)}
        if kind == "despawn":
            return kind, {"n": rng.randrange(1, 60), **({"group": rng.randrange(4)}
                                                         if rng.random() < 0.5 else {})}
        if kind == "params":
            p = rng.choice(self.params)
            v = rng.uniform(p["min"], p["max"])
            v = round(v) if p["integer"] else v
            return kind, {**({"group": rng.randrange(4)} if rng.random() < 0.7 else {}),
                          p["name"]: v}
        if kind == "step":
            return kind, {"n": rng.randrange(1, 30)}
        if kind == "reset":
            return kind, {"seed": rng.randrange(1000), "boids": BOIDS}
        return kind, {}

    async def drive(self, client, count, seconds):
        """Sends `count` commands over about `seconds`, waiting for each reply."""
        for _ in range(count):
            cmd, args = self.command()
            r = await client.command(cmd, timeout=10, **args)
            if r["type"] == "ack":
                self.acked += 1
                if cmd == "obstacle_add":
                    self.obstacles.append(r["obstacle"])
            else:
                self.refused += 1
            await asyncio.sleep(self.rng.uniform(0, 2 * seconds / count))


async def drive(url, driver, count, seconds, clients=3):
    """`count` commands from `clients` clients at once over `seconds`; the
    last ack's tick."""
    cs = [await Client.connect(url, headers_only=True) for _ in range(clients)]
    await asyncio.gather(*(driver.drive(c, count // clients, seconds) for c in cs))
    ping = await cs[0].command("ping")
    for c in cs:
        await c.close()
    return ping["tick"]


def start(dirs, *extra):
    """A flockd recording into dirs; returns it started and the seconds it took
    until a client had the room's welcome."""
    t0 = time.time()
    d = Flockd(FLOCKD, "--boids", str(BOIDS), "--record", dirs["rec"], "--checkpoint-dir",
               dirs["ckpt"], "--checkpoint-every", str(EVERY), *extra, stop_timeout=60)
    d.__enter__()
    return d, t0


async def welcome_after(d, t0):
    c = await Client.connect(d.url, headers_only=True)
    took = time.time() - t0
    return c, took


def killed(d):
    """SIGKILL, as a crash would."""
    d.proc.send_signal(signal.SIGKILL)
    d.proc.wait()
    d._join_drains()


# ---- tests --------------------------------------------------------------------------

# It times the restart (the room back within 1 s): it runs alone.
@timing
async def a_room_recorded_through_a_crash_and_a_restart_replays_and_verifies():
    tmp = tempfile.mkdtemp(prefix="flockd-replay-")
    dirs = {"rec": os.path.join(tmp, "rec"), "ckpt": os.path.join(tmp, "ckpt")}
    try:
        # Phase 1: random commands, then a crash.
        d, t0 = start(dirs)
        c, _ = await welcome_after(d, t0)
        driver = Driver(c.welcome, 1)
        await c.close()
        t_drive = time.time()
        last_tick = await drive(d.url, driver, COMMANDS // 2, SECONDS / 2)
        c = await Client.connect(d.url, headers_only=True)
        assert (await c.command("pause"))["type"] == "ack"
        before = await c.command("ping")
        killed_at = time.time()
        killed(d)
        print(f"FIGURES phase 1: {driver.acked} acked, {driver.refused} refused in "
              f"{killed_at - t_drive:.1f} s; last ack at tick {last_tick}", flush=True)

        # The room is back within 1 s of the start, where its log ends: the
        # state of the last ping, every acked command in it.
        d, t0 = start(dirs)
        c, took = await welcome_after(d, t0)
        back = c.welcome["tick"]
        print(f"FIGURES restart after SIGKILL: welcome after {took * 1000:.0f} ms at tick "
              f"{back} (last ack {last_tick}, the ping before the kill {before['tick']})",
              flush=True)
        timely(took <= 1.0, took)
        now = await c.command("ping")
        assert (now["tick"], now["hash"]) == (before["tick"], before["hash"]), (now, before)
        assert any("resumed at tick" in line for line in d.stderr), d.stderr
        assert (await c.command("resume"))["type"] == "ack"
        await c.close()

        # Phase 2: more commands, then a clean stop with a known last state.
        await drive(d.url, driver, COMMANDS - COMMANDS // 2, SECONDS / 2)
        c = await Client.connect(d.url, headers_only=True)
        assert (await c.command("pause"))["type"] == "ack"
        assert (await c.command("obstacle_clear"))["type"] == "ack"
        oid = (await c.command("obstacle_add", x=10, y=10, r=5))["obstacle"]
        ping = await c.command("ping")
        await c.close()
        d.__exit__(None, None, None)
        assert any("checkpoints of" in line for line in d.stdout), d.stdout

        # SIGTERM then restart: nothing acked is lost.
        d, t0 = start(dirs)
        c, _ = await welcome_after(d, t0)
        assert c.welcome["tick"] == ping["tick"], (c.welcome["tick"], ping)
        again = await c.command("ping")
        assert again["hash"] == ping["hash"] and again["tick"] == ping["tick"], (again, ping)
        await c.close()
        c = await Client.connect(d.url)
        snap = await c.next_snapshot()
        assert snap["paused"] and oid in [o[0] for o in snap["obstacles"]], snap["obstacles"]
        await c.close()
        d.__exit__(None, None, None)

        # The whole log replays: every hash, the restore after the crash, the end.
        log = os.path.join(dirs["rec"], "default.flog")
        records = read_log(log)
        kinds = [t for _, t, _ in records]
        assert kinds.count(BEGIN) == 3 and kinds.count(END) == 2, kinds.count(BEGIN)
        commands = kinds.count(COMMAND)
        print(f"FIGURES log: {os.path.getsize(log)} bytes, {len(records)} records, "
              f"{commands} commands", flush=True)
        t = time.time()
        rc, out, err = replay(FLOCKD, log, "--verify")
        took = time.time() - t
        print(f"FIGURES replay --verify: {out} in {took:.1f} s; {err.strip()}", flush=True)
        assert rc == 0 and out["first_divergence"] is None, (rc, out, err)
        assert out["verified"] == expected_verifications(records), (out, records[-1][:2])
        assert out["hash"] == ping["hash"] and out["tick"] == ping["tick"], (out, ping)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


async def spawn_every(c, seconds, period=0.05):
    """One boid every `period` until `seconds` are up, each waiting for its
    reply; the count acked (every reply must be an ack)."""
    acked, end = 0, time.time() + seconds
    while time.time() < end:
        r = await c.command("spawn", n=1, group=0, x=200, y=200)
        assert r["type"] == "ack", r
        acked += 1
        await asyncio.sleep(period)
    return acked


async def boids_of(c):
    return len((await c.next_snapshot(timeout=10))["boids"])


# The measure: spawns every 50 ms in the default room and in a room
# a join created 3 s before the crash (no checkpoint of it was due), kill -9
# with no pause first: both rooms come back with every acked boid.
@test
async def a_killed_server_restarts_its_rooms_where_their_logs_end():
    tmp = tempfile.mkdtemp(prefix="flockd-replay-")
    dirs = {"rec": os.path.join(tmp, "rec"), "ckpt": os.path.join(tmp, "ckpt")}
    try:
        d = Flockd(FLOCKD, "--boids", "300", "--record", dirs["rec"], "--checkpoint-dir",
                   dirs["ckpt"], "--checkpoint-every", "30", stop_timeout=60)
        d.__enter__()
        a = await Client.connect(d.url, headers_only=True)
        b = await Client.connect(d.url, headers_only=True)
        assert (await b.join("fresh", "admin", boids=100))["type"] == "ack"
        spawned = await asyncio.gather(spawn_every(a, 3.0), spawn_every(b, 3.0))
        killed(d)
        assert not os.path.exists(os.path.join(dirs["ckpt"], "fresh.ckpt"))
        d = Flockd(FLOCKD, "--boids", "300", "--record", dirs["rec"], "--checkpoint-dir",
                   dirs["ckpt"], "--checkpoint-every", "30", stop_timeout=60)
        d.__enter__()
        a = await Client.connect(d.url)
        b = await Client.connect(d.url)
        assert (await b.join("fresh", "viewer"))["type"] == "ack"
        back = (await boids_of(a), await boids_of(b))
        print(f"FIGURES kill -9 after {spawned} acked spawns: the rooms came back with "
              f"{back[0] - 300} and {back[1] - 100} of them", flush=True)
        assert back == (300 + spawned[0], 100 + spawned[1]), (back, spawned, d.stderr)
        assert sum("where its command log ends" in line for line in d.stderr) == 2, d.stderr
        await a.close()
        await b.close()
        d.__exit__(None, None, None)
        for room in ("default", "fresh"):
            rc, out, err = replay(FLOCKD, os.path.join(dirs["rec"], room + ".flog"), "--verify")
            assert rc == 0 and out["first_divergence"] is None and out["verified"] > 0, (
                room, out, err)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def tampered(src, dst):
    """Copies the log with one seek command's x moved by 1 unit (its CRC made
    right again); returns that command's tick."""
    data = bytearray(open(src, "rb").read())
    for at, typ, p in read_log(src):
        if typ == COMMAND and p[17] == 1:  # seek: group u8, x f32, y f32
            tick = struct.unpack_from("<Q", p, 1)[0]
            x = struct.unpack_from("<f", p, 19)[0]
            struct.pack_into("<f", data, at + 8 + 19, x + 1 if x < 100 else x - 1)
            n = struct.unpack_from("<I", data, at)[0]
            struct.pack_into("<I", data, at + 4, zlib.crc32(bytes(data[at + 8:at + 8 + n])))
            open(dst, "wb").write(data)
            return tick
    raise AssertionError("no seek in the log")


@test
async def a_changed_command_is_found_at_the_first_hash_after_it():
    tmp = tempfile.mkdtemp(prefix="flockd-replay-")
    dirs = {"rec": os.path.join(tmp, "rec"), "ckpt": os.path.join(tmp, "ckpt")}
    try:
        with Flockd(FLOCKD, "--boids", "500", "--record", dirs["rec"]) as d:
            c = await Client.connect(d.url, headers_only=True)
            for k in range(5):
                assert (await c.command("seek", group=0, x=200 + 100 * k, y=300))["type"] == "ack"
                await asyncio.sleep(0.3)
            await c.close()
        log = os.path.join(dirs["rec"], "default.flog")
        rc, out, _ = replay(FLOCKD, log, "--verify")
        assert rc == 0 and out["verified"] > 0, out
        bad = os.path.join(tmp, "bad.flog")
        tick = tampered(log, bad)
        rc, out, err = replay(FLOCKD, bad, "--verify")
        div = out["first_divergence"]
        assert rc == 1 and div is not None and tick < div <= tick + 60, (rc, out, tick)
        assert f"diverges at tick {div}" in err, err
        # Without --verify nothing is compared, and it plays to the end.
        rc, out, _ = replay(FLOCKD, bad)
        assert rc == 0 and out["verified"] == 0 and out["first_divergence"] is None, out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@test
async def a_torn_log_replays_to_its_last_whole_record_and_recording_resumes_after_it():
    tmp = tempfile.mkdtemp(prefix="flockd-replay-")
    rec = os.path.join(tmp, "rec")
    try:
        with Flockd(FLOCKD, "--boids", "300", "--record", rec) as d:
            c = await Client.connect(d.url, headers_only=True)
            await c.command("seek", group=0, x=100, y=100)
            await asyncio.sleep(1.2)
            await c.close()
        log = os.path.join(rec, "default.flog")
        size = os.path.getsize(log)
        with open(log, "r+b") as f:  # the END record cut in half, as a crash would
            f.truncate(size - 10)
        rc, out, err = replay(FLOCKD, log, "--verify")
        assert rc == 0 and "torn record" in err, (rc, err)
        with Flockd(FLOCKD, "--boids", "300", "--record", rec) as d:
            await asyncio.sleep(0.3)
        assert any("torn record" in line for line in d.stderr), d.stderr
        records = read_log(log)
        assert [t for _, t, _ in records].count(BEGIN) == 2
        rc, out, _ = replay(FLOCKD, log, "--verify")
        assert rc == 0 and out["first_divergence"] is None, out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def checkpoint_of(binary_dir, room):
    return open(os.path.join(binary_dir, room + ".ckpt"), "rb").read()


@test
async def bad_checkpoints_are_refused_by_name_and_their_rooms_start_fresh():
    tmp = tempfile.mkdtemp(prefix="flockd-replay-")
    ck = os.path.join(tmp, "ckpt")
    try:
        with Flockd(FLOCKD, "--boids", "300", "--checkpoint-dir", ck) as d:
            c = await Client.connect(d.url, headers_only=True)
            assert (await c.join("arena", "admin", mode="rts"))["type"] == "ack"
            await c.close()
        good = checkpoint_of(ck, "default")
        assert good[:8] == b"FLOCKCKP" and os.path.exists(os.path.join(ck, "arena.ckpt"))
        flipped = bytearray(good)
        flipped[len(good) // 2] ^= 0xff
        other = bytearray(good)
        other[8] = 9  # version 9, checksum made right again
        struct.pack_into("<I", other, len(other) - 4, zlib.crc32(bytes(other[:-4])))
        cases = {
            "default": (good[:len(good) // 3], "shorter than its header says"),
            "arena": (bytes(flipped), "checksum"),
            "room-v9": (bytes(other), "another format version"),
            "huge": (b"FLOCKCKP" + b"\0" * (4 << 20), "oversized"),
            "stray": (b"hello", "not a flockd checkpoint"),
        }
        for name, (data, _) in cases.items():
            open(os.path.join(ck, name + ".ckpt"), "wb").write(data)
        with Flockd(FLOCKD, "--boids", "300", "--checkpoint-dir", ck) as d:
            c = await Client.connect(d.url, headers_only=True)
            assert c.welcome["tick"] < 120, c.welcome["tick"]  # fresh, not restored
            assert d.room("arena") is None
            await c.close()
        err = "".join(d.stderr)
        for name, (_, reason) in cases.items():
            path = os.path.join(ck, name + ".ckpt")
            line = next((l for l in d.stderr if path + " refused" in l), None)
            assert line and reason in line, (name, reason, err)
            assert os.path.exists(path + ".refused") or name == "default", name
        assert 'room "default" starts fresh' in err, err
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@test
async def an_rts_room_comes_back_with_its_teams_and_a_player_rejoins_its_team():
    tmp = tempfile.mkdtemp(prefix="flockd-replay-")
    dirs = {"rec": os.path.join(tmp, "rec"), "ckpt": os.path.join(tmp, "ckpt")}
    try:
        d, t0 = start(dirs, "--grace", "30")
        p = await Client.connect(d.url, headers_only=True)
        ack = await p.join("arena", "player", mode="rts", name="ann", password="pw")
        assert ack["type"] == "ack" and ack["team"] == 1, ack
        oid = (await p.command("obstacle_add", x=100, y=100, r=10))["obstacle"]
        await asyncio.sleep(EVERY + 0.5)
        # (A loaded machine may write the room's first checkpoint later.)
        ckpt = os.path.join(dirs["ckpt"], "arena.ckpt")
        for _ in range(100):
            if os.path.exists(ckpt):
                break
            await asyncio.sleep(0.1)
        before = await p.command("ping")
        killed(d)
        d, t0 = start(dirs, "--grace", "30")
        room = d.room("arena")
        assert room and room["teams"] == 1 and room["password"], room
        q = await Client.connect(d.url, headers_only=True)
        wrong = await q.join("arena", "player", name="eve")
        assert wrong["type"] == "error" and wrong["code"] == "forbidden", wrong
        back = await q.join("arena", "player", name="ann", password="pw", rejoin=ack["rejoin"])
        assert back["type"] == "ack" and back["team"] == 1, back
        # Its obstacle is its own still: it may remove it.
        r = await q.command("obstacle_remove", obstacle=oid)
        assert r["type"] == "ack", r
        assert before["tick"] > 0
        await q.close()
        d.__exit__(None, None, None)
        rc, out, err = replay(FLOCKD, os.path.join(dirs["rec"], "arena.flog"), "--verify")
        assert rc == 0 and out["first_divergence"] is None and out["verified"] > 0, (out, err)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    SUITE.main()
