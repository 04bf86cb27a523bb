#!/usr/bin/python3
"""Integration tests: flockctl (client/cli) against a real flockd.

Usage: test_flockctl.py FLOCKD_BINARY FLOCKCTL_BINARY [--functional | --timing] [--untimed]
       [TEST_NAME...]
Each test starts its own flockd on an ephemeral loopback port and runs
flockctl subcommands against it, checking their output and exit status:
send (acks, refusals, stdin, timeouts), watch, record + dump (checked against
this harness's own snapshot decoder, and its csv and jsonl formats against
the default one), load, each of them in a room joined with a role, password
or admin token (and refused joins), version 3 with and without a view (watch,
record + dump against version 2's boids, load with random views, refused
views), and the usage errors and --help of every subcommand. Rates are compared with the server's configured
snapshot rate (not in an --untimed run, as sanitizer builds make). The
last line is "N passed, N failed".
"""

import json
import math
import os
import socket
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from flockd_harness import Flockd, Suite, arg, decode_snapshot  # noqa: E402

FLOCKD = arg(0, "build/server/flockd")
FLOCKCTL = arg(1, "build/client/cli/flockctl")
HZ = 20
SUITE = Suite(timeout=120)
test = SUITE.test
timing = SUITE.timing
timely = SUITE.assert_timely


def flockctl(*args, stdin=None, timeout=60):
    """Runs flockctl; returns (exit status, stdout lines, stderr)."""
    p = subprocess.run([FLOCKCTL, *map(str, args)], input=stdin, capture_output=True,
                       text=True, timeout=timeout)
    return p.returncode, p.stdout.splitlines(), p.stderr


def json_lines(lines):
    return [json.loads(ln) for ln in lines if ln.startswith("{")]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---- send ------------------------------------------------------------------


@test
def send_prints_one_ack_line_per_command_and_exits_0():
    with Flockd(FLOCKD, "--boids", "100") as d:
        rc, out, err = flockctl("send", "--url", d.url, '{"cmd":"ping","id":1}',
                                '{"cmd":"obstacle_add","id":"ob","x":400,"y":300,"r":20}')
        assert rc == 0, (rc, out, err)
        replies = json_lines(out)
        assert len(out) == 2 and len(replies) == 2, out
        assert replies[0]["type"] == "ack" and replies[0]["id"] == 1
        assert isinstance(replies[0]["tick"], int)
        assert replies[1]["type"] == "ack" and replies[1]["id"] == "ob"
        assert replies[1]["obstacle"] >= 1


@test
def send_reports_a_refused_command_with_its_error_line_and_exits_1():
    with Flockd(FLOCKD, "--boids", "100") as d:
        rc, out, err = flockctl("send", "--url", d.url, '{"cmd":"ping","id":1}',
                                '{"cmd":"seek","id":2,"group":0,"x":-5,"y":1}',
                                '{"cmd":"obstacle_remove","id":3,"obstacle":999}',
                                '{"cmd":"ping","id":4}')
        assert rc == 1, (rc, out, err)
        replies = json_lines(out)
        assert [r["type"] for r in replies] == ["ack", "error", "error", "ack"], replies
        assert replies[1]["id"] == 2 and replies[1]["code"] == "out_of_range"
        assert replies[2]["id"] == 3 and replies[2]["code"] == "not_found"


@test
def send_passes_text_through_so_the_server_judges_bad_json():
    with Flockd(FLOCKD, "--boids", "10") as d:
        rc, out, _ = flockctl("send", "--url", d.url, "{not json", '{"cmd":"fly"}')
        replies = json_lines(out)
        assert rc == 1
        assert [r["code"] for r in replies] == ["bad_json", "unknown_cmd"], replies


@test
def send_reads_commands_from_stdin_when_none_are_given():
    with Flockd(FLOCKD, "--boids", "10") as d:
        rc, out, err = flockctl("send", "--url", d.url,
                                stdin='{"cmd":"ping","id":5}\n\n{"cmd":"pause","id":6}\n')
        assert rc == 0, (rc, out, err)
        assert [r["id"] for r in json_lines(out)] == [5, 6]


@test
def send_exits_1_when_a_command_is_unanswered():
    # A server that accepts the upgrade and then never answers: a plain
    # socket that only speaks the handshake and a welcome.
    import base64
    import hashlib
    import threading
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]

    def serve():
        conn, _ = srv.accept()
        data = b""
        while b"\r\n\r\n" not in data:
            data += conn.recv(4096)
        key = [ln.split(b":", 1)[1].strip() for ln in data.split(b"\r\n")
               if ln.lower().startswith(b"sec-websocket-key:")][0]
        accept = base64.b64encode(hashlib.sha1(
            key + b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest())
        conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                     b"Connection: Upgrade\r\nSec-WebSocket-Accept: " + accept +
                     b"\r\nSec-WebSocket-Protocol: flock.v1\r\n\r\n")
        welcome = b'{"type":"welcome","protocol":1}'
        conn.sendall(bytes([0x81, len(welcome)]) + welcome)
        try:
            while conn.recv(4096):
                pass
        except OSError:
            pass
        conn.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    rc, out, err = flockctl("send", "--url", f"ws://127.0.0.1:{port}/ws", "--timeout", "1",
                            '{"cmd":"ping","id":1}', '{"cmd":"ping","id":2}')
    srv.close()
    assert rc == 1, (rc, out, err)
    assert out == [] and "no reply" in err and "1 command(s) not sent" in err, (out, err)


@test
def send_exits_3_when_nothing_listens():
    rc, out, err = flockctl("send", "--url", f"ws://127.0.0.1:{free_port()}/ws",
                            '{"cmd":"ping"}')
    assert rc == 3 and out == [] and "flockctl send:" in err, (rc, out, err)


# ---- watch -----------------------------------------------------------------


@timing
def watch_prints_a_line_per_second_with_rates_boids_and_polarization():
    with Flockd(FLOCKD, "--boids", "300", "--snapshot-hz", str(HZ)) as d:
        rc, out, err = flockctl("watch", "--url", d.url, "--seconds", "3", "--protocol", "1")
        assert rc == 0, (rc, err)
        lines = json_lines(out)
        assert len(lines) == 3 and len(out) == 3, out
        assert all(ln["protocol"] == 1 for ln in lines), lines
        assert [ln["t"] for ln in lines] == [1, 2, 3]
        for ln in lines:
            assert ln["boids"] == 300 and ln["paused"] is False
            assert 0 <= ln["polarization"] <= 1
        # The first second includes connecting; the others are steady.
        for ln in lines[1:]:
            assert ln["snapshots_per_s"] > 0 and ln["bytes_per_s"] > 0, ln
            timely(0.75 * HZ <= ln["snapshots_per_s"] <= 1.25 * HZ, ln)
            size = 44 + 5 + 5 * 300
            timely(0.75 * HZ * size <= ln["bytes_per_s"] <= 1.25 * HZ * size, ln)
        assert lines[0]["tick"] < lines[1]["tick"] < lines[2]["tick"]


@timing
def watch_takes_version_2_by_default_and_prints_bytes_per_boid():
    with Flockd(FLOCKD, "--boids", "2000", "--snapshot-hz", str(HZ)) as d:
        rc, out, err = flockctl("watch", "--url", d.url, "--seconds", "4")
        assert rc == 0, (rc, err)
        lines = json_lines(out)
        assert all(ln["protocol"] == 2 and ln["boids"] == 2000 for ln in lines), lines
        for ln in lines[1:]:
            assert ln["snapshots_per_s"] > 0, ln
            timely(0.75 * HZ <= ln["snapshots_per_s"] <= 1.25 * HZ, ln)
            # Deltas: far below version 1's 5 bytes per boid (PROTOCOL.md 11).
            assert 0 < ln["bytes_per_boid"] < 3.0, ln
            assert ln["hash_mismatches"] == 0 and ln["refused"] == 0, ln
        assert lines[0]["key_frames"] >= 1, lines


@test
def watch_polarization_is_one_for_a_flock_heading_one_way():
    with Flockd(FLOCKD, "--boids", "0") as d:
        # Boids spawned at one point with full alignment and no other rule
        # soon share one heading; alignment is all that steers them.
        rc, out, _ = flockctl("send", "--url", d.url,
                              '{"cmd":"params","w_separation":0,"w_cohesion":0,'
                              '"w_alignment":10,"perception":250,"fov":360}',
                              '{"cmd":"spawn","n":50,"group":0,"x":800,"y":500,"spread":5}')
        assert rc == 0, out
        rc, out, _ = flockctl("watch", "--url", d.url, "--seconds", "4")
        assert rc == 0
        lines = json_lines(out)
        assert lines[-1]["boids"] == 50
        assert lines[-1]["polarization"] > 0.95, lines


# ---- record and dump ---------------------------------------------------------


def read_recording(path, version=1):
    """Parses a recording per client/cli/RECORDING.md: [(arrival_us, kind, bytes)]."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"FLOCKREC" and struct.unpack_from("<HHI", data, 8) == (1, version, 0)
    off, records = 16, []
    while off < len(data):
        arrival, length, kind = struct.unpack_from("<QIB", data, off)
        records.append((arrival, kind, data[off + 16:off + 16 + length]))
        off += 16 + length
    assert off == len(data)
    return records


@timing
def record_then_dump_gives_every_snapshot_decoded_with_its_arrival_time():
    with Flockd(FLOCKD, "--boids", "200", "--snapshot-hz", str(HZ)) as d, \
            tempfile.TemporaryDirectory() as tmp:
        rc, out, _ = flockctl("send", "--url", d.url,
                              '{"cmd":"obstacle_add","x":400,"y":300,"r":25}',
                              '{"cmd":"seek","group":0,"x":100,"y":200}')
        assert rc == 0, out
        applied = max(r["tick"] for r in json_lines(out))
        path = os.path.join(tmp, "flock.rec")
        rc, out, err = flockctl("record", path, "--url", d.url, "--seconds", "2",
                                "--protocol", "1")
        assert rc == 0, (rc, out, err)
        summary = json.loads(out[-1])
        records = read_recording(path)
        assert records[0][1] == 2 and json.loads(records[0][2])["type"] == "welcome"
        snaps = [r for r in records if r[1] == 1]
        assert summary["snapshots"] == len(snaps) > 0, (summary, len(snaps))
        timely(len(snaps) >= 1.5 * HZ, len(snaps))

        rc, out, err = flockctl("dump", path)
        assert rc == 0, (rc, err)
        lines = json_lines(out)
        assert len(lines) == len(records) == len(out)
        assert lines[0]["kind"] == "text" and lines[0]["message"]["type"] == "welcome"
        dumped = [ln for ln in lines if ln["kind"] == "snapshot"]
        ticks = [s["tick"] for s in dumped]
        assert all(b > a for a, b in zip(ticks, ticks[1:])), ticks
        for (arrival, _, raw), s in zip(snaps, dumped):
            ref = decode_snapshot(raw)
            assert s["arrival_us"] == arrival and s["size"] == len(raw)
            assert arrival >= s["server_time_us"], (arrival, s["server_time_us"])
            timely(arrival - s["server_time_us"] < 2_000_000, (arrival, s["server_time_us"]))
            assert s["tick"] == ref["tick"] and s["epoch"] == ref["epoch"]
            assert s["boid_count"] == len(s["boids"]) == 200
            assert s["width"] == 1600 and s["height"] == 1000 and s["wrap"] is True
            assert s["runs"] == [[0, 200]]
            if s["tick"] > applied:  # PROTOCOL.md 5.5: later snapshots show the commands
                assert s["obstacles"] == [[1, 400, 300, 25]], s["obstacles"]
                assert s["targets"] == [[0, 100, 200]], s["targets"]
            for (x, y, h, g), (rx, ry, rh, rg) in zip(s["boids"], ref["boids"]):
                assert abs(x - rx) < 1e-3 and abs(y - ry) < 1e-3 and g == rg
                assert abs(h - rh * math.pi / 128) < 1e-4


@test
def version_2_frames_decode_to_the_positions_version_1_sends_for_the_same_tick():
    """Two recordings of one room at once, one per version: every tick both
    hold decodes to the same quantized boids, obstacles and targets."""
    with Flockd(FLOCKD, "--boids", "1500", "--snapshot-hz", str(HZ)) as d, \
            tempfile.TemporaryDirectory() as tmp:
        rc, out, _ = flockctl("send", "--url", d.url,
                              '{"cmd":"obstacle_add","x":400,"y":300,"r":25}',
                              '{"cmd":"seek","group":0,"x":100,"y":200}')
        assert rc == 0, out
        paths = {v: os.path.join(tmp, f"v{v}.rec") for v in (1, 2)}
        procs = [subprocess.Popen([FLOCKCTL, "record", paths[v], "--url", d.url, "--seconds",
                                   "3", "--protocol", str(v)], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for v in (1, 2)]
        for p in procs:
            _, err = p.communicate(timeout=30)
            assert p.returncode == 0, err
        frames = {}
        for v in (1, 2):
            read_recording(paths[v], v)
            rc, out, err = flockctl("dump", paths[v])
            assert rc == 0, (rc, err)
            snaps = [ln for ln in json_lines(out) if ln["kind"] == "snapshot"]
            assert snaps and all(s["version"] == v for s in snaps), snaps[:1]
            frames[v] = {s["tick"]: s for s in snaps}
        common = sorted(set(frames[1]) & set(frames[2]))
        assert len(common) >= 1.5 * HZ, (len(common), len(frames[1]), len(frames[2]))
        kinds = {frames[2][t]["frame"] for t in common}
        assert "delta" in kinds, kinds
        for t in common:
            a, b = frames[1][t], frames[2][t]
            for key in ("boid_count", "runs", "boids", "obstacles", "targets", "epoch"):
                assert a[key] == b[key], (t, key)


@test
def dump_refuses_a_file_that_is_not_a_recording_and_reports_damage():
    with tempfile.TemporaryDirectory() as tmp:
        bad = os.path.join(tmp, "bad.rec")
        with open(bad, "wb") as f:
            f.write(b"not a recording at all")
        rc, out, err = flockctl("dump", bad)
        assert rc == 1 and out == [] and "not a flockctl recording" in err, (rc, err)

        # A valid header, one good text record, then a record cut short.
        cut = os.path.join(tmp, "cut.rec")
        with open(cut, "wb") as f:
            f.write(b"FLOCKREC" + struct.pack("<HHI", 1, 1, 0))
            f.write(struct.pack("<QIB3x", 5, 2, 2) + b"{}")
            f.write(struct.pack("<QIB3x", 6, 100, 1) + b"FK")
        rc, out, err = flockctl("dump", cut)
        assert rc == 1 and len(out) == 1 and "broken record" in err, (rc, out, err)

        # A snapshot record whose bytes do not decode is printed with its error.
        junk = os.path.join(tmp, "junk.rec")
        with open(junk, "wb") as f:
            f.write(b"FLOCKREC" + struct.pack("<HHI", 1, 1, 0))
            f.write(struct.pack("<QIB3x", 7, 4, 1) + b"XK\x01\x01")
        rc, out, err = flockctl("dump", junk)
        assert rc == 1 and json.loads(out[0])["error"] == "bad_magic", (rc, out)

        rc, _, err = flockctl("dump", os.path.join(tmp, "missing.rec"))
        assert rc == 1 and "cannot read" in err


# ---- load --------------------------------------------------------------------

LOAD_KEYS = ["clients", "connected", "frames_per_s", "mb_per_s", "client_rate_p50",
             "client_rate_p1", "age_ms_p50", "age_ms_p99", "skipped", "failures"]


@timing
def load_reports_the_configured_snapshot_rate_for_every_client():
    with Flockd(FLOCKD, "--boids", "2000", "--snapshot-hz", str(HZ)) as d:
        rc, out, err = flockctl("load", "--url", d.url, "--clients", "50", "--seconds", "4",
                                "--protocol", "1")
        assert rc == 0, (rc, out, err)
        s = json.loads(out[-1])
        assert s["protocol"] == 1 and s["bytes_per_boid"] > 5.0, s
        assert list(s)[:len(LOAD_KEYS)] == LOAD_KEYS, list(s)
        assert s["clients"] == 50 and s["connected"] == 50 and s["failures"] == 0, s
        assert s["client_rate_p1"] > 0 and s["frames_per_s"] > 0 and s["mb_per_s"] > 0, s
        timely(0.85 * HZ <= s["client_rate_p50"] <= 1.1 * HZ, s)
        timely(s["client_rate_p1"] >= 0.6 * HZ, s)
        timely(0.85 * 50 * HZ <= s["frames_per_s"] <= 1.1 * 50 * HZ, s)
        size = 44 + 5 + 5 * 2000
        timely(s["mb_per_s"] >= 0.8 * 50 * HZ * size / 1e6, s)
        assert 0 <= s["age_ms_p50"] <= s["age_ms_p99"], s
        timely(s["age_ms_p99"] < 1000, s)
        assert s["bad_frames"] == 0


@timing
def load_takes_version_2_by_default_at_the_same_rate_in_fewer_bytes():
    with Flockd(FLOCKD, "--boids", "2000", "--snapshot-hz", str(HZ)) as d:
        rc, out, err = flockctl("load", "--url", d.url, "--clients", "50", "--seconds", "4")
        assert rc == 0, (rc, out, err)
        s = json.loads(out[-1])
        assert s["protocol"] == 2 and s["connected"] == 50 and s["failures"] == 0, s
        assert s["client_rate_p50"] > 0, s
        timely(0.85 * HZ <= s["client_rate_p50"] <= 1.1 * HZ, s)
        assert s["bad_frames"] == 0, s
        # load counts only what comes in its window, after every client has
        # connected: the clients' first frames, key frames, come in it when
        # they come after the last connect, which is a matter of timing.
        timely(s["key_frames"] >= 1, s)
        assert 0 < s["bytes_per_boid"] < 3.0, s


@test
def load_with_slow_readers_still_connects_every_client():
    with Flockd(FLOCKD, "--boids", "500", "--snapshot-hz", str(HZ)) as d:
        rc, out, err = flockctl("load", "--url", d.url, "--clients", "20", "--seconds", "3",
                                "--read-delay-ms", "150", "--threads", "1")
        assert rc == 0, (rc, out, err)
        s = json.loads(out[-1])
        assert s["connected"] == 20 and s["failures"] == 0, s
        # A reader that wakes every 150 ms sees the snapshots that queued
        # meanwhile: older on arrival than a fast reader's.
        assert s["client_rate_p50"] > 0 and s["age_ms_p50"] >= 20, s


@test
def load_sets_each_clients_receive_buffer_when_asked():
    with Flockd(FLOCKD, "--boids", "500", "--snapshot-hz", str(HZ)) as d:
        sizes = {}
        for asked in ["0", "262144"]:
            rc, out, err = flockctl("load", "--url", d.url, "--clients", "10", "--seconds", "2",
                                    "--rcvbuf", asked, "--protocol", "1")
            assert rc == 0, (rc, out, err)
            s = json.loads(out[-1])
            assert s["connected"] == 10 and s["failures"] == 0 and s["client_rate_p50"] > 0, s
            sizes[asked] = s["rcvbuf"]
        # Linux keeps twice what is asked, up to net.core.rmem_max (socket(7));
        # left alone, a TCP socket starts at net.ipv4.tcp_rmem's default.
        with open("/proc/sys/net/ipv4/tcp_rmem") as f:
            initial = int(f.read().split()[1])
        with open("/proc/sys/net/core/rmem_max") as f:
            most = int(f.read())
        assert sizes == {"0": initial, "262144": 2 * min(262144, most)}, sizes
    rc, out, err = flockctl("load", "--rcvbuf", "-1")
    assert rc == 2 and "--rcvbuf" in err, (rc, out, err)


@test
def load_exits_3_and_counts_failures_when_nothing_listens():
    rc, out, err = flockctl("load", "--url", f"ws://127.0.0.1:{free_port()}/ws",
                            "--clients", "3", "--seconds", "0.5", "--timeout", "0.5")
    assert rc == 3, (rc, out, err)
    s = json.loads(out[-1])
    assert s["connected"] == 0 and s["failures"] == 3, s


# ---- rooms and roles -----------------------------------------------------------

TOKEN = "adm1n-t0ken"


def popen_flockctl(*args):
    return subprocess.Popen([FLOCKCTL, *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def finish(proc, timeout=30):
    """(exit status, stdout lines, stderr) of a flockctl started with popen_flockctl."""
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out.splitlines(), err


def load_in_room(d, room, *args):
    """flockctl load of d's room: (exit status, its summary object, stderr)."""
    rc, out, err = flockctl("load", "--url", d.url, "--room", room, *args)
    return rc, json.loads(out[-1]), err


@test
def watch_record_and_send_work_in_a_room_the_join_creates_with_a_password():
    with Flockd(FLOCKD, "--boids", "100", "--admin-token", TOKEN) as d, \
            tempfile.TemporaryDirectory() as tmp:
        # The admin's join creates "lab" with a password; its commands go there.
        rc, out, err = flockctl("send", "--url", d.url, "--room", "lab", "--role", "admin",
                                "--token", TOKEN, "--password", "pw", "--name", "ops",
                                '{"cmd":"reset","boids":37,"id":1}', '{"cmd":"stats","id":2}')
        assert rc == 0, (rc, out, err)
        replies = json_lines(out)
        assert [r["id"] for r in replies] == [1, 2], replies
        assert replies[0]["count"] == 37 and replies[1]["stats"]["boids"] == 37, replies
        assert d.room("lab")["password"] is True and d.room("default")["boids"] == 100

        path = os.path.join(tmp, "lab.rec")
        recorder = popen_flockctl("record", path, "--url", d.url, "--room", "lab", "--role",
                                  "player", "--password", "pw", "--seconds", "1.5")
        watcher = popen_flockctl("watch", "--url", d.url, "--room", "lab", "--seconds", "2")
        rc, out, err = finish(recorder)
        assert rc == 0, (rc, out, err)
        records = read_recording(path, 2)
        welcome = json.loads(records[0][2])
        assert welcome["type"] == "welcome" and welcome["room"] == "lab", welcome
        assert welcome["role"] == "player"
        # Nothing of default (its welcome, frames, the join's ack) is in the file.
        texts = [json.loads(r[2]) for r in records if r[1] == 2]
        assert not any(t["type"] == "ack" or t.get("room") == "default" for t in texts), texts
        rc, out, err = flockctl("dump", path)
        assert rc == 0, (rc, err)
        snaps = [ln for ln in json_lines(out) if ln["kind"] == "snapshot"]
        assert len(snaps) >= 10 and {s["boid_count"] for s in snaps} == {37}, len(snaps)

        rc, out, err = finish(watcher)
        assert rc == 0, (rc, out, err)
        lines = json_lines(out)
        assert lines and all(ln["boids"] == 37 for ln in lines), lines


@test
def a_refused_join_exits_1_with_the_servers_code_and_message():
    with Flockd(FLOCKD, "--boids", "20", "--admin-token", TOKEN) as d:
        rc, out, err = flockctl("send", "--url", d.url, "--room", "vault", "--role", "admin",
                                "--token", TOKEN, "--password", "right", '{"cmd":"ping"}')
        assert rc == 0, (rc, out, err)
        # A player with the wrong password: refused, and nothing is watched.
        rc, out, err = flockctl("watch", "--url", d.url, "--room", "vault", "--role", "player",
                                "--password", "wrong", "--seconds", "1")
        assert rc == 1 and out == [], (rc, out, err)
        assert "flockctl watch: join refused: forbidden: " in err, err
        # An admin with the wrong token: the command is never sent.
        rc, out, err = flockctl("send", "--url", d.url, "--room", "vault", "--role", "admin",
                                "--token", "guess", '{"cmd":"pause"}')
        assert rc == 1 and out == [] and "join refused: forbidden" in err, (rc, out, err)
        assert "guess" not in err, err  # secrets are not repeated
        # Record: refused the same way.
        with tempfile.TemporaryDirectory() as tmp:
            rc, out, err = flockctl("record", os.path.join(tmp, "x.rec"), "--url", d.url,
                                    "--room", "vault", "--role", "player", "--seconds", "1")
            assert rc == 1 and "join refused: forbidden" in err, (rc, out, err)
        # A viewer may join, but its admin command is refused (exit 1).
        rc, out, err = flockctl("send", "--url", d.url, "--room", "vault", "--role", "viewer",
                                '{"cmd":"pause","id":7}', '{"cmd":"ping","id":8}')
        replies = json_lines(out)
        assert rc == 1 and [r["type"] for r in replies] == ["error", "ack"], (rc, out, err)
        assert replies[0]["id"] == 7 and replies[0]["code"] == "forbidden", replies
        rc, out, err = flockctl("send", "--url", d.url, "--room", "vault", "--role", "admin",
                                "--token", TOKEN, '{"cmd":"stats"}')
        assert rc == 0 and json_lines(out)[0]["stats"]["paused"] is False, (rc, out, err)


@test
def a_join_flockctl_sends_shapes_the_room_it_creates_and_bad_shapes_are_usage_errors():
    with Flockd(FLOCKD, "--boids", "20", "--team-units", "10") as d:
        rc, out, err = flockctl("send", "--url", d.url, "--room", "war", "--role", "admin",
                                "--mode", "rts", "--teams", "2", "--units", "12", "--width",
                                "900", "--height", "700.5", "--edges", "wrap", '{"cmd":"ping"}')
        assert rc == 0, (rc, out, err)
        e = d.room("war")
        assert (e["mode"], e["max_teams"], e["units"]) == ("rts", 2, 12), e
        assert (e["width"], e["height"], e["edges"]) == (900, 700.5, "wrap"), e
        for flag, value, said in (("--teams", "1", "field 'teams' must be in [2, 255]"),
                                  ("--width", "wide", "field 'width' must be a number"),
                                  ("--edges", "torus", "--edges")):
            rc, out, err = flockctl("send", "--url", d.url, "--room", "war2", flag, value,
                                    '{"cmd":"ping"}')
            assert rc == 2 and out == [] and said in err, (flag, rc, err)
        assert d.room("war2") is None
        rc, out, err = flockctl("send", "--url", d.url, "--room", "war2", "--units", "3",
                                '{"cmd":"ping"}')
        assert rc == 1 and "join refused: bad_arg: join: 'teams' and 'units'" in err, err


@test
def load_joins_every_viewer_to_the_room_before_it_measures():
    with Flockd(FLOCKD, "--boids", "200", "--snapshot-hz", str(HZ)) as d:
        rc, out, err = flockctl("send", "--url", d.url, "--room", "hall", "--role", "admin",
                                '{"cmd":"reset","boids":25}')
        assert rc == 0, (rc, out, err)
        proc = popen_flockctl("load", "--url", d.url, "--room", "hall", "--name", "v",
                              "--clients", "6", "--seconds", "2")
        seen = 0
        for _ in range(40):  # the viewers while load measures
            seen = max(seen, d.room("hall")["viewers"])
            if seen == 6 or proc.poll() is not None:
                break
            time.sleep(0.05)
        rc, out, err = finish(proc)
        assert rc == 0, (rc, out, err)
        s = json.loads(out[-1])
        assert s["room"] == "hall" and s["join_failures"] == 0, s
        assert s["connected"] == 6 and s["failures"] == 0 and s["client_rate_p50"] > 0, s
        assert seen == 6 and d.room("default")["viewers"] == 0, seen
        assert "connecting took" in err, err

        # Refused joins are counted and reported, and fail the run.
        rc, out, err = flockctl("send", "--url", d.url, "--room", "locked", "--role", "player",
                                "--password", "pw", '{"cmd":"ping"}')
        assert rc == 0, (rc, out, err)
        rc, s, err = load_in_room(d, "locked", "--role", "player", "--clients", "3",
                                  "--seconds", "0.5")
        assert rc == 1 and s["join_failures"] == 3 and s["failures"] == 3, (rc, s)
        assert s["connected"] == 0, s
        assert "3 join(s) refused: forbidden: " in err, err


@timing
def load_in_a_room_measures_the_full_snapshot_rate_after_every_join():
    with Flockd(FLOCKD, "--boids", "100", "--snapshot-hz", str(HZ)) as d:
        rc, s, err = load_in_room(d, "arena", "--clients", "100", "--seconds", "3")
        assert rc == 0, (rc, s, err)
        assert s["connected"] == 100 and s["join_failures"] == 0 and s["room"] == "arena", s
        # Every client is in the room when the window opens: none is still
        # joining (or still getting the room's first frames) while measured.
        assert s["client_rate_p1"] <= s["client_rate_p50"] <= 1.1 * HZ, s
        timely(s["client_rate_p1"] >= 0.85 * HZ, s)


# ---- version 3: views ----------------------------------------------------------

VIEW = "100,100,800,450"  # world units, within the 2263 x 1414 world of 2000 boids


@test
def watch_with_protocol_3_prints_the_level_of_detail_of_the_whole_room_and_of_a_view():
    with Flockd(FLOCKD, "--boids", "2000", "--snapshot-hz", str(HZ)) as d:
        rc, out, err = flockctl("watch", "--url", d.url, "--protocol", "3", "--seconds", "3")
        assert rc == 0, (rc, out, err)
        lines = json_lines(out)
        assert len(lines) == 3 and all(ln["protocol"] == 3 for ln in lines), lines
        for ln in lines[1:]:  # without a view: the whole room, every tile, all its boids
            assert ln["boids"] == 2000 and ln["boids_per_frame"] == 2000, ln
            assert ln["shift"] == 0 and ln["sample"] == 0 and ln["parts_per_frame"] > 1, ln
            assert ln["kb_per_s"] > 0 and ln["refused"] == 0, ln
            assert abs(ln["kb_per_s"] * 1000 - ln["bytes_per_s"]) <= 100, ln
        whole = lines[-1]["parts_per_frame"]
        # A small budget for a part of the world: fewer parts, a sample of the boids.
        rc, out, err = flockctl("watch", "--url", d.url, "--protocol", "3", "--view", VIEW,
                                "--budget", "4000", "--px", "400", "--seconds", "3")
        assert rc == 0, (rc, out, err)
        lines = json_lines(out)
        for ln in lines[1:]:
            assert ln["boids"] == 2000 and ln["refused"] == 0 and ln["hash_mismatches"] == 0
            assert ln["sample"] >= 1 and 0 < ln["parts_per_frame"] < whole, ln
            assert 0 < ln["boids_per_frame"] < 2000, ln
            assert 0 <= ln["polarization"] <= 1, ln


@timing
def watch_with_a_view_gets_the_snapshot_rate_in_fewer_bytes():
    with Flockd(FLOCKD, "--boids", "2000", "--snapshot-hz", str(HZ)) as d:
        rates = {}
        for view in ([], ["--view", VIEW, "--budget", "4000"]):
            rc, out, err = flockctl("watch", "--url", d.url, "--protocol", "3", "--seconds",
                                    "4", *view)
            assert rc == 0, (rc, out, err)
            lines = json_lines(out)[1:]
            for ln in lines:
                timely(0.75 * HZ <= ln["snapshots_per_s"] <= 1.25 * HZ, ln)
            rates[bool(view)] = sum(ln["kb_per_s"] for ln in lines) / len(lines)
        assert rates[True] < rates[False] / 3, rates


def record_v3(d, path, *args, seconds=2):
    rc, out, err = flockctl("record", path, "--url", d.url, "--protocol", "3",
                            "--seconds", seconds, *args)
    assert rc == 0, (rc, out, err)
    return json.loads(out[-1])


@test
def record_and_dump_version_3_view_frames_with_their_ids():
    with Flockd(FLOCKD, "--boids", "2000", "--snapshot-hz", str(HZ)) as d, \
            tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "view.rec")
        summary = record_v3(d, path, "--view", VIEW, "--budget", "8000")
        records = read_recording(path, 3)
        # The welcome, then the ack of the view, which went in the URL (no
        # id), and only then frames: every one of them is of the view.
        texts = [(k, json.loads(r[2])) for k, r in enumerate(records) if r[1] != 1][:2]
        (_, welcome), (at, ack) = texts
        assert welcome["type"] == "welcome" and welcome["protocol"] == 3, welcome
        assert ack["type"] == "ack" and ack["id"] is None and len(ack["rect"]) == 4, ack
        assert summary["snapshots"] == sum(1 for r in records if r[1] == 1) >= 10, summary
        assert at < next(k for k, r in enumerate(records) if r[1] == 1), at  # before any frame

        rc, out, err = flockctl("dump", path)
        assert rc == 0, (rc, err)
        snaps = [ln for ln in json_lines(out) if ln["kind"] == "snapshot"]
        viewed = [s for s in snaps if s["rect"] == ack["rect"] and s["shift"] == ack["shift"]]
        assert viewed and all(s["sample"] == ack["sample"] for s in viewed), snaps[-1]
        assert snaps[0]["rect"] == ack["rect"], (snaps[0]["rect"], ack)  # never the whole room
        for s in snaps:
            assert s["version"] == 3 and s["room_boids"] == 2000, s
            assert s["boid_count"] == len(s["boids"]) == sum(p[2] for p in s["parts"])
            assert len(s["parts"]) == s["rect"][2] * s["rect"][3], s["parts"]
            assert s["key_parts"] + s["delta_parts"] <= len(s["parts"]), s
            ids, at = [b[0] for b in s["boids"]], 0
            for _, _, count in s["parts"]:  # a part's boids by id, ascending
                assert ids[at:at + count] == sorted(set(ids[at:at + count])), ids
                at += count
        assert sum(s["delta_parts"] for s in snaps) > 0, "no delta part decoded"
        assert any(s["fields"] for s in viewed if s["sample"] > 0), "no field"

        rc, csv, err = flockctl("dump", "--format", "csv", path)
        assert rc == 0 and csv[0] == "tick,server_time_us,arrival_us,seq,id,group,x,y,heading"
        rows = [r.split(",") for r in csv[1:]]
        assert [[int(r[4]), float(r[6]), float(r[7]), float(r[8]), int(r[5])] for r in rows] \
            == [b for s in snaps for b in s["boids"]]
        assert [int(r[3]) for r in rows] == [s["seq"] for s in snaps for _ in s["boids"]]
        rc, jsonl, err = flockctl("dump", "--format", "jsonl", path)
        objects = json_lines(jsonl)
        assert rc == 0 and len(objects) == len(snaps), (rc, err)
        for o, s in zip(objects, snaps):
            assert (o["seq"], o["shift"], o["sample"], o["room_boids"]) == (
                s["seq"], s["shift"], s["sample"], s["room_boids"])
            assert [list(b) for b in zip(o["id"], o["x"], o["y"], o["heading"],
                                         o["group"])] == s["boids"]


@test
def version_3_frames_hold_the_boids_version_2_sends_for_the_same_tick():
    """Three recordings of one room at once: version 2, version 3 of the
    whole room (the same boids) and version 3 of a view (some of them)."""
    with Flockd(FLOCKD, "--boids", "1500", "--snapshot-hz", str(HZ)) as d, \
            tempfile.TemporaryDirectory() as tmp:
        runs = {"v2": ["--protocol", "2"], "whole": ["--protocol", "3"],
                "view": ["--protocol", "3", "--view", VIEW, "--budget", "6000"]}
        procs = {k: popen_flockctl("record", os.path.join(tmp, k), "--url", d.url,
                                   "--seconds", "3", *v) for k, v in runs.items()}
        boids = {}
        for k, p in procs.items():
            rc, out, err = finish(p)
            assert rc == 0, (k, rc, out, err)
            rc, out, err = flockctl("dump", os.path.join(tmp, k))
            assert rc == 0, (k, rc, err)
            lines = json_lines(out)
            # The view holds from the frame after its ack on; frames of its
            # tick and before (encoded before the view came) are of the
            # whole room.
            since = max([ln["message"]["tick"] for ln in lines if ln["kind"] == "text" and
                         ln["message"].get("type") == "ack" and "shift" in ln["message"]] or [0])
            assert (since > 0) == (k == "view"), (k, since)
            snaps = [ln for ln in lines if ln["kind"] == "snapshot" and ln["tick"] > since]
            boids[k] = {s["tick"]: sorted(tuple(b[-4:]) for b in s["boids"]) for s in snaps}
        common = sorted(set(boids["v2"]) & set(boids["whole"]) & set(boids["view"]))
        assert len(common) >= HZ, {k: len(v) for k, v in boids.items()}
        for t in common:
            assert boids["whole"][t] == boids["v2"][t], t
            assert 0 < len(boids["view"][t]) < len(boids["v2"][t]), t
            assert set(boids["view"][t]) <= set(boids["v2"][t]), t


@test
def a_refused_view_exits_1_with_the_servers_code_and_message():
    with Flockd(FLOCKD, "--boids", "200") as d, tempfile.TemporaryDirectory() as tmp:
        wide = "0,0,99999,10"  # wider than the world
        rc, out, err = flockctl("watch", "--url", d.url, "--protocol", "3", "--view", wide,
                                "--seconds", "1")
        assert rc == 1 and out == [], (rc, out, err)
        assert "flockctl watch: view refused: out_of_range: " in err, err
        rc, out, err = flockctl("record", os.path.join(tmp, "x.rec"), "--url", d.url,
                                "--protocol", "3", "--view", wide, "--seconds", "1")
        assert rc == 1 and "view refused: out_of_range" in err, (rc, out, err)
        rc, out, err = flockctl("load", "--url", d.url, "--protocol", "3", "--view", wide,
                                "--clients", "3", "--seconds", "0.5")
        s = json.loads(out[-1])
        assert rc == 1 and s["view_failures"] == 3 and s["failures"] == 3, (rc, s)
        assert s["connected"] == 0 and s["views"] == 0, s
        assert "3 view(s) refused: out_of_range: " in err, err


@test
def load_with_random_views_connects_every_client_with_a_distinct_view():
    with Flockd(FLOCKD, "--boids", "2000", "--snapshot-hz", str(HZ)) as d:
        before = d.metric("flockd_commands_accepted_total")
        rc, out, err = flockctl("load", "--url", d.url, "--protocol", "3", "--views", "random",
                                "--view-size", "400,300", "--budget", "20000", "--clients",
                                "20", "--seconds", "2", "--decode")
        assert rc == 0, (rc, out, err)
        s = json.loads(out[-1])
        assert s["protocol"] == 3 and s["connected"] == 20 and s["failures"] == 0, s
        assert s["views"] == s["distinct_views"] == 20 and s["view_failures"] == 0, s
        assert s["decode"] is True and s["decode_failures"] == 0 and s["bad_frames"] == 0, s
        assert s["client_rate_p50"] > 0 and s["client_kb_per_s_p50"] > 0, s
        assert s["client_kb_per_s_p50"] <= s["client_kb_per_s_p99"] <= s["client_kb_per_s_max"]
        assert 0 < s["boids_per_frame"] < 2000 and s["parts_per_frame"] >= 1, s
        assert s["view_rate_min"] > 0 and s["view_sample_max"] >= 0, s
        # Every view and every client's keyframe was applied by the server.
        assert d.metric("flockd_commands_accepted_total") - before >= 40

        # One view for all: 1 distinct; the whole room without --view.
        # (3 s: a sanitizer's flockd on a loaded machine may send nothing for a second)
        rc, out, err = flockctl("load", "--url", d.url, "--protocol", "3", "--view", VIEW,
                                "--clients", "5", "--seconds", "3")
        s = json.loads(out[-1])
        assert rc == 0 and s["views"] == 5 and s["distinct_views"] == 1, (rc, s, err)
        rc, out, err = flockctl("load", "--url", d.url, "--protocol", "3", "--clients", "5",
                                "--seconds", "3")
        s = json.loads(out[-1])
        assert rc == 0 and s["views"] == 0 and s["boids_per_frame"] == 2000, (rc, s, err)
        assert s["decode_failures"] is None and s["view_rate_min"] is None, s


@timing
def load_with_random_views_measures_the_snapshot_rate_of_every_client():
    with Flockd(FLOCKD, "--boids", "5000", "--snapshot-hz", str(HZ)) as d:
        rc, out, err = flockctl("load", "--url", d.url, "--protocol", "3", "--views", "random",
                                "--view-size", "800,450", "--budget", "20000", "--clients",
                                "100", "--seconds", "4")
        assert rc == 0, (rc, out, err)
        s = json.loads(out[-1])
        assert s["connected"] == 100 and s["distinct_views"] == 100 and s["bad_frames"] == 0, s
        timely(s["client_rate_p1"] >= 0.75 * s["view_rate_min"], s)
        timely(s["client_rate_p50"] <= 1.1 * HZ, s)
        timely(s["age_ms_p99"] < 1000, s)


@test
def view_flags_are_checked_before_connecting():
    url = f"ws://127.0.0.1:{free_port()}/ws"
    bad = [
        (["watch", "--view", VIEW], "--view needs --protocol 3"),
        (["record", "x.rec", "--protocol", "2", "--view", VIEW], "--view needs --protocol 3"),
        (["watch", "--protocol", "3", "--view", "1,2,3"], "--view wants X,Y,W,H"),
        (["watch", "--protocol", "3", "--view", "-1,0,10,10"], "--view wants X,Y,W,H"),
        (["watch", "--protocol", "3", "--view", "0,0,0,10"], "--view wants X,Y,W,H"),
        (["watch", "--protocol", "3", "--budget", "5000"], "--budget needs --view"),
        (["watch", "--protocol", "3", "--view", VIEW, "--px", "0"], "--px wants"),
        (["watch", "--protocol", "3", "--view", VIEW, "--budget", "999"], "--budget wants"),
        (["watch", "--protocol", "4"], "--protocol wants"),
        (["watch", "--protocol", "3", "--views", "random"], "unknown flag"),
        (["load", "--protocol", "3", "--views", "all", "--seconds", "1"], "--views wants"),
        (["load", "--protocol", "3", "--view-size", "4,4", "--seconds", "1"],
         "--view-size needs --views random"),
        (["load", "--protocol", "3", "--views", "random", "--view-size", "4", "--seconds", "1"],
         "--view-size wants W,H"),
        (["load", "--protocol", "3", "--views", "random", "--view", VIEW, "--seconds", "1"],
         "--view and --views exclude each other"),
        (["send", "--protocol", "3", "--view", VIEW, "{}"], "unknown flag"),
        (["watch", "--decode"], "unknown flag"),
    ]
    for args, message in bad:
        args = [args[0], "--url", url] + args[1:]
        rc, out, err = flockctl(*args)
        assert rc == 2 and out == [] and message in err, (args, rc, err)
    for cmd, flags in [("watch", ["--view X,Y,W,H", "--px N", "--budget B"]),
                       ("record", ["--view X,Y,W,H", "--px N", "--budget B"]),
                       ("load", ["--view X,Y,W,H", "--views random", "--view-size W,H",
                                 "--decode"])]:
        rc, out, _ = flockctl(cmd, "--help")
        text = "\n".join(out)
        assert rc == 0 and all(f in text for f in flags), (cmd, flags)
        assert "--protocol 3" in text, cmd
        assert "view refused: out_of_range" in text or "view(s) refused: out_of_range" in text


# ---- dump formats ---------------------------------------------------------------


@test
def dump_csv_and_jsonl_hold_the_values_of_the_default_dump():
    with Flockd(FLOCKD, "--boids", "60") as d, tempfile.TemporaryDirectory() as tmp:
        rc, out, _ = flockctl("send", "--url", d.url,
                              '{"cmd":"spawn","n":15,"group":3,"x":200,"y":300}',
                              '{"cmd":"obstacle_add","x":400,"y":300,"r":25}')
        assert rc == 0, out
        # A frame with the spawned boids is out before the recording's first
        # (the room's latest frame, which a loaded machine may not have
        # replaced yet when the recorder connects): the room counts them,
        # then ticks on past two snapshot periods (the count comes at the
        # spawn, the frame at the next snapshot).
        deadline = time.time() + 10
        while d.room("default")["boids"] != 75 and time.time() < deadline:
            time.sleep(0.02)
        room = d.room("default")
        until = room["tick"] + 2 * room["tick_hz"] // room["snapshot_hz"] + 1
        while d.room("default")["tick"] < until and time.time() < deadline:
            time.sleep(0.02)
        path = os.path.join(tmp, "f.rec")
        rc, out, err = flockctl("record", path, "--url", d.url, "--seconds", "1")
        assert rc == 0, (rc, out, err)
        results = {fmt: flockctl("dump", "--format", fmt, path) for fmt in ("records", "csv")}
        results["jsonl"] = flockctl("dump", path, "--format=jsonl")
        assert all(rc == 0 for rc, _, _ in results.values()), results
        assert flockctl("dump", path)[1] == results["records"][1]  # records is the default
        snaps = [ln for ln in json_lines(results["records"][1]) if ln["kind"] == "snapshot"]
        # The first frames may still be the room's latest from before the
        # spawn (a sanitized room's frames can lag its stats): 60 boids
        # lead, then only 75.
        counts = [s["boid_count"] for s in snaps]
        spawned = counts.index(75) if 75 in counts else len(counts)
        assert set(counts[:spawned]) <= {60} and set(counts[spawned:]) == {75}, counts
        assert len(counts) - spawned >= 10, counts

        header, *rows = results["csv"][1]
        assert header == "tick,server_time_us,arrival_us,epoch,index,group,x,y,heading"
        assert len(rows) == sum(counts), (len(rows), counts)
        where = [(s, i) for s in snaps for i in range(s["boid_count"])]
        for row, (s, i) in zip(rows, where):
            tick, time_us, arrival, epoch, index, group, x, y, h = row.split(",")
            assert (int(tick), int(time_us), int(arrival), int(epoch), int(index)) == (
                s["tick"], s["server_time_us"], s["arrival_us"], s["epoch"], i), (row, s)
            assert [float(x), float(y), float(h), int(group)] == s["boids"][i], (row, i)

        objects = json_lines(results["jsonl"][1])
        assert len(objects) == len(results["jsonl"][1]) == len(snaps)
        for o, s in zip(objects, snaps):
            for key in ("tick", "server_time_us", "arrival_us", "epoch", "width", "height",
                        "paused", "boid_count", "obstacles", "targets"):
                assert o[key] == s[key], (key, o[key], s[key])
            assert [list(b) for b in zip(o["x"], o["y"], o["heading"], o["group"])] == s["boids"]
        assert {g for o in objects for g in o["group"]} == {0, 3}
        assert objects[-1]["obstacles"] == [[1, 400, 300, 25]], objects[-1]["obstacles"]


# ---- usage -------------------------------------------------------------------


@test
def every_subcommand_has_help_and_usage_errors_exit_2():
    for cmd in ["send", "watch", "record", "dump", "load"]:
        rc, out, _ = flockctl(cmd, "--help")
        assert rc == 0 and out[0].startswith(f"usage: flockctl {cmd}"), (cmd, out[:1])
        assert any("exit status" in ln for ln in out), cmd
    rc, out, _ = flockctl("--help")
    assert rc == 0 and all(c in "\n".join(out) for c in ["send", "watch", "record", "load"])
    for args in [[], ["fly"], ["send", "--bogus", "1"], ["load", "--clients", "0"],
                 ["load", "--clients", "2.5"], ["watch", "--url", "http://x/ws"],
                 ["record"], ["dump", "a", "b"], ["watch", "extra"], ["send", "--timeout"]]:
        rc, _, err = flockctl(*args)
        assert rc == 2 and err, (args, rc, err)


@test
def join_flags_are_checked_as_the_server_would_before_connecting():
    for cmd in ["send", "watch", "record", "load"]:
        rc, out, _ = flockctl(cmd, "--help")
        text = "\n".join(out)
        assert rc == 0 and all(f in text for f in ["--room NAME", "--role viewer|player|admin",
                                                   "--token T", "--password P", "--name N"]), cmd
    rc, out, _ = flockctl("dump", "--help")
    assert rc == 0 and "--format records|csv|jsonl" in "\n".join(out), out
    rc, out, _ = flockctl("--help")
    assert rc == 0 and "--room NAME" in "\n".join(out), out
    # Nothing listens at this URL: a usage error must come before connecting.
    url = f"ws://127.0.0.1:{free_port()}/ws"
    bad = [
        (["watch", "--room", "a b"], "bad --room 'a b'"),
        (["watch", "--room", ""], "bad --room ''"),
        (["record", "x.rec", "--room", "r" * 33], "must be 1 to 32 bytes"),
        (["send", "--role", "king", "{}"], "--role wants one of viewer|player|admin"),
        (["load", "--name", "n" * 33, "--seconds", "1"], "bad --name"),
        (["load", "--name", "tab\there", "--seconds", "1"], "not allowed"),
        (["send", "--token", "s3cret\x01", "{}"], "bad --token:"),
        (["watch", "--password", "p" * 129], "bad --password: field 'password' must be 0 to 128"),
        (["watch", "--room"], "missing value for"),
        (["dump", "--format", "xml", "f.rec"], "--format wants one of records|csv|jsonl"),
        (["watch", "--format", "csv"], "unknown flag"),
    ]
    for args, message in bad:
        if args[0] != "dump":
            args = [args[0], "--url", url] + args[1:]
        rc, out, err = flockctl(*args)
        assert rc == 2 and out == [] and message in err, (args, rc, err)
        assert "s3cret" not in err and "p" * 129 not in err, err
    # The longest of everything is accepted (and then cannot connect: 3).
    rc, _, err = flockctl("watch", "--url", url, "--room", "R-_9" * 8, "--role", "admin",
                          "--token", "t" * 128, "--password", "\u00e9" * 64, "--name", "n" * 32)
    assert rc == 3, (rc, err)


if __name__ == "__main__":
    SUITE.main(skip_args=2)
