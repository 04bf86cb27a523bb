#!/usr/bin/python3
"""The flockd Python library's snapshot decoders (client/python/flockd/decode.py)
against the golden vectors, with numpy and without: every frame of
proto/vectors/v2 decoded in order, every refusal with its code and nothing
held changed, the integer heading and the state hash (in C through
libmurmurhash and in Python: the same value); the version 1 vectors, positions
and angles exactly; the Snapshot built from frames (positions, velocities
estimated within an epoch, NaN across one); client/examples/flocksnap.py,
which now imports the library; and, given snapbench, a real 2,000-boid
stream decoded the same by both decoders.

    /usr/bin/python3 tests/unit/test_pyclient_decode.py [SNAPBENCH] [-v]
"""

import json
import math
import os
import struct
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "client", "python"))
sys.path.insert(1, os.path.join(ROOT, "client", "examples"))

import numpy as np  # noqa: E402

from flockd import decode  # noqa: E402
from flockd.snapshot import Snapshot  # noqa: E402
import flocksnap  # noqa: E402

VECTORS = os.path.join(ROOT, "proto", "vectors")
V2 = os.path.join(VECTORS, "v2")
SNAPBENCH = None
if __name__ == "__main__":
    SNAPBENCH = next((a for a in sys.argv[1:] if not a.startswith("-")), None)
    if SNAPBENCH:
        sys.argv.remove(SNAPBENCH)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


INDEX = read_json(os.path.join(V2, "index.json"))
HEADER_FIELDS = ("kind", "seq", "gap1", "gap0", "base1", "base0", "flags", "paused", "wrap",
                 "tick", "server_time_us", "width", "height", "epoch", "packed_len",
                 "plain_len", "size")
# The three decoders: numpy, boid by boid, and the old module's name for the latter.
DECODERS = {
    "numpy": lambda **kw: decode.Decoder(numpy=True, **kw),
    "python": lambda **kw: decode.Decoder(numpy=False, **kw),
    "flocksnap": lambda **kw: flocksnap.Decoder(**kw),
}


def boids_of(frame):
    return [{"group": int(g), "qx": int(x), "qy": int(y), "heading": int(d)}
            for g, x, y, d in zip(frame.group, frame.qx, frame.qy, frame.heading)]


def stream(name):
    return read_json(os.path.join(V2, f"{name}.json"))["frames"]


class Version2Vectors(unittest.TestCase):
    def check_frame(self, frame, want):
        h = want["header"]
        for name in HEADER_FIELDS:
            self.assertEqual(getattr(frame, name), h[name], name)
        self.assertEqual(frame.sim_hash, int(h["sim_hash"], 16))
        self.assertEqual(frame.state_hash, int(h["state_hash"], 16))
        self.assertEqual(frame.count, h["boid_count"])
        self.assertEqual(frame.runs, want["runs"])
        self.assertEqual(boids_of(frame), want["boids"])
        self.assertEqual(frame.obstacles, want["obstacles"])
        self.assertEqual(frame.targets, want["targets"])

    def test_every_stream_decoded_in_order_should_reproduce_its_frames(self):
        for kind, make in DECODERS.items():
            for name in INDEX["streams"]:
                dec = make()
                for frame in stream(name):
                    with self.subTest(decoder=kind, frame=frame["bin"]):
                        self.check_frame(dec.decode(read(os.path.join(V2, frame["bin"]))), frame)

    def test_the_numpy_decoder_should_give_numpy_arrays_and_the_other_arrays(self):
        f = decode.Decoder(numpy=True).decode(read(os.path.join(V2, "basic_1.bin")))
        self.assertEqual((f.qx.dtype, f.qy.dtype, f.heading.dtype, f.group.dtype),
                         (np.uint16, np.uint16, np.uint8, np.uint8))
        f = flocksnap.Decoder().decode(read(os.path.join(V2, "basic_1.bin")))
        self.assertEqual((f.qx.typecode, f.heading.typecode, f.group.typecode), ("H", "B", "B"))

    def test_every_body_should_inflate_to_its_plain_bytes(self):
        for name in INDEX["streams"]:
            for frame in stream(name):
                buf, h = read(os.path.join(V2, frame["bin"])), frame["header"]
                body = buf[len(buf) - h["packed_len"]:]
                self.assertEqual(decode.inflate_body(body, h["plain_len"]).hex(), frame["plain"])

    def test_every_invalid_frame_should_be_refused_with_its_code_and_change_nothing(self):
        for kind, make in DECODERS.items():
            for case in read_json(os.path.join(V2, INDEX["invalid"])):
                with self.subTest(decoder=kind, case=case["name"]):
                    dec = make()
                    for before in case["before"]:
                        dec.decode(read(os.path.join(V2, before)))
                    held = list(dec.held)
                    with self.assertRaises(decode.SnapshotError) as e:
                        dec.decode_v2(bytes.fromhex(case["hex"]))
                    self.assertEqual(e.exception.code, case["error"])
                    self.assertEqual(dec.held, held)

    def test_the_octant_table_and_the_integer_heading_should_match(self):
        self.assertEqual(decode.OCTANT_TURNS, INDEX["octant_turns"])
        xs = np.array([c["x"] for c in INDEX["heading_of"]], dtype=np.int32)
        ys = np.array([c["y"] for c in INDEX["heading_of"]], dtype=np.int32)
        got = decode.heading_of_np(xs, ys)
        for c, vectorised in zip(INDEX["heading_of"], got):
            self.assertEqual(decode.heading_of(c["x"], c["y"]), c["heading"], c)
            self.assertEqual(int(vectorised), c["heading"], c)
        self.assertEqual(decode.aspect_weights(1600.0, 1000.0), (256, 160))

    def test_heading_of_over_arrays_should_equal_it_one_by_one_at_the_extremes(self):
        rng = np.random.default_rng(7)
        top = (1 << 23) - 1
        xs = np.concatenate([rng.integers(-top, top + 1, 5000), [top, -top, 1, 0, -1, top]])
        ys = np.concatenate([rng.integers(-top, top + 1, 5000), [top - 1, 1, top, 1, 0, -top]])
        keep = (xs != 0) | (ys != 0)
        xs, ys = xs[keep].astype(np.int32), ys[keep].astype(np.int32)
        want = [decode.heading_of(int(x), int(y)) for x, y in zip(xs, ys)]
        self.assertEqual(decode.heading_of_np(xs, ys).tolist(), want)

    def test_the_state_hash_should_be_the_same_in_c_and_in_python(self):
        for frame in stream("basic"):
            f = decode.Decoder(numpy=True).decode(read(os.path.join(V2, frame["bin"]))) \
                if frame["header"]["kind"] == "key" else None
            if f is None:
                continue
            want = int(frame["header"]["state_hash"], 16)
            args = (f.qx, f.qy, f.heading, f.group)
            self.assertEqual(decode.state_hash(*args), want)
            self.assertEqual(decode._state_hash_np(*args, use_lib=False), want)
            self.assertEqual(decode._state_hash_np(*args, use_lib=True), want)

    def test_the_decoder_should_keep_four_bases_and_forget_them(self):
        for kind, make in DECODERS.items():
            dec = make()
            for frame in stream("epoch"):
                dec.decode(read(os.path.join(V2, frame["bin"])))
            self.assertEqual([dec.has(s) for s in range(1, 8)], [False] * 3 + [True] * 4)
            dec.forget()
            with self.assertRaises(decode.SnapshotError) as e:
                dec.decode(read(os.path.join(V2, "epoch_7.bin")))
            self.assertEqual(e.exception.code, "no_base")
            with self.assertRaises(decode.SnapshotError) as e:
                make(max_boids=5).decode(read(os.path.join(V2, "basic_1.bin")))
            self.assertEqual(e.exception.code, "over_limit")


class Version1Vectors(unittest.TestCase):
    def test_every_v1_vector_should_decode_to_its_json(self):
        index = read_json(os.path.join(VECTORS, "index.json"))
        for kind, make in DECODERS.items():
            for name in index["snapshots"]:
                want = read_json(os.path.join(VECTORS, f"{name}.json"))
                f = make().decode(read(os.path.join(VECTORS, f"{name}.bin")))
                snap = Snapshot(f, 60)
                self.assertEqual((f.version, f.tick, f.epoch), (1, want["header"]["tick"],
                                                                want["header"]["epoch"]))
                self.assertEqual(f.runs, want["runs"])
                self.assertEqual(boids_of(f), [{k: b[k] for k in ("group", "qx", "qy",
                                                                  "heading")}
                                               for b in want["boids"]])
                for i, b in enumerate(want["boids"]):  # binary64, exactly
                    self.assertEqual((snap.x[i], snap.y[i]), (b["x"], b["y"]), (kind, name))
                    self.assertEqual(snap.heading[i], b["heading_rad"], (kind, name))
                self.assertEqual(f.obstacles, want["obstacles"])
                self.assertEqual(f.targets, want["targets"])
                self.assertEqual([o._asdict() for o in snap.obstacles], want["obstacles"])

    def test_every_invalid_v1_vector_should_be_refused_with_its_code(self):
        index = read_json(os.path.join(VECTORS, "index.json"))
        for use_np in (True, False):
            for case in read_json(os.path.join(VECTORS, index["invalid_snapshots"])):
                with self.subTest(numpy=use_np, case=case["name"]):
                    with self.assertRaises(decode.SnapshotError) as e:
                        decode.decode_v1(bytes.fromhex(case["hex"]), use_np)
                    self.assertEqual(e.exception.code, case["error"])


class Snapshots(unittest.TestCase):
    def frames(self, name, use_np=True):
        dec = decode.Decoder(numpy=use_np)
        return [dec.decode(read(os.path.join(V2, f["bin"]))) for f in stream(name)]

    def test_velocities_should_be_estimated_within_an_epoch_the_short_way_round(self):
        for use_np in (True, False):
            f1, f2 = self.frames("basic", use_np)[:2]
            first = Snapshot(f1, 60)
            second = Snapshot(f2, 60, first)
            self.assertTrue(all(math.isnan(v) for v in first.vx))
            dt = (f2.tick - f1.tick) / 60
            for i in range(f2.count):
                dx = second.x[i] - first.x[i]
                dx -= f2.width * round(dx / f2.width)  # the world wraps
                self.assertAlmostEqual(second.vx[i], dx / dt, places=6)
                self.assertLess(abs(second.vx[i]), f2.width / 2 / dt)

    def test_velocities_should_be_unknown_across_an_epoch_and_kept_while_paused(self):
        frames = self.frames("epoch")
        snaps, prev = [], None
        for f in frames:
            prev = Snapshot(f, 60, prev)
            snaps.append(prev)
        for a, b in zip(snaps, snaps[1:]):
            if a.epoch != b.epoch:
                self.assertTrue(np.isnan(b.vx).all(), (a.tick, b.tick))
            elif a.tick == b.tick:
                self.assertIs(b.vx, a.vx)
            else:
                self.assertFalse(np.isnan(b.vx).any())

    def test_group_helpers_should_select_the_groups_boids(self):
        f = self.frames("basic")[0]
        for use_np in (True, False):
            f = self.frames("basic", use_np)[0]
            snap = Snapshot(f, 60)
            mine = [i for i, g in enumerate(f.group) if g == 2]
            self.assertEqual(len(mine), 2)
            hs = [f.heading[i] * math.pi / 128 for i in mine]
            want = math.hypot(sum(map(math.cos, hs)) / 2, sum(map(math.sin, hs)) / 2)
            self.assertAlmostEqual(snap.polarization(2), want, places=12)
            self.assertTrue(math.isnan(snap.polarization(200)))
            self.assertIsNone(snap.centroid(200))
            self.assertEqual(snap.distance((1, 1), (1599, 999)), math.hypot(2, 2))


def snapbench_stream(snapbench, boids, seconds):
    """The frames `snapbench --dump` writes (each a u32 length and the frame)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "frames.bin")
        subprocess.run([snapbench, "--boids", str(boids), "--seconds", str(seconds), "--dump",
                        path], check=True, capture_output=True)
        data = read(path)
    out, at = [], 0
    while at + 4 <= len(data):
        (n,) = struct.unpack_from("<I", data, at)
        out.append(data[at + 4:at + 4 + n])
        at += 4 + n
    return out


@unittest.skipUnless(SNAPBENCH, "give snapbench's path to decode a real stream")
class RealStream(unittest.TestCase):
    def test_both_decoders_should_agree_on_every_frame_of_a_real_flock(self):
        frames = snapbench_stream(SNAPBENCH, 2000, 3)
        fast, slow = decode.Decoder(numpy=True), decode.Decoder(numpy=False)
        kinds = set()
        for buf in frames:
            a, b = fast.decode(buf), slow.decode(buf)
            kinds.add((a.kind, a.gap0 > 0 if a.kind == "delta" else None))
            self.assertEqual(a.qx.tolist(), b.qx.tolist())
            self.assertEqual(a.qy.tolist(), b.qy.tolist())
            self.assertEqual(a.heading.tolist(), b.heading.tolist())
        # Key frames, deltas on one base and on two: every path was taken.
        self.assertTrue({("key", None), ("delta", True)} <= kinds, kinds)


if __name__ == "__main__":
    unittest.main()
