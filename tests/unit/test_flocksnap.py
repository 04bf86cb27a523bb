#!/usr/bin/python3
"""The Python snapshot decoder (client/examples/flocksnap.py) against the
golden vectors: every frame of proto/vectors/v2 decoded in order, every
refusal with its code, the integer heading and the state hash; and the
version 1 vectors of proto/vectors.

    /usr/bin/python3 tests/unit/test_flocksnap.py [-v]
"""

import json
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "client", "examples"))

import flocksnap  # noqa: E402

VECTORS = os.path.join(ROOT, "proto", "vectors")
V2 = os.path.join(VECTORS, "v2")


def read(path):
    with open(path, "rb") as f:
        return f.read()


def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


INDEX = read_json(os.path.join(V2, "index.json"))

HEADER_FIELDS = {
    "kind": "kind", "seq": "seq", "gap1": "gap1", "gap0": "gap0", "base1": "base1",
    "base0": "base0", "flags": "flags", "paused": "paused", "wrap": "wrap", "tick": "tick",
    "server_time_us": "server_time_us", "width": "width", "height": "height", "epoch": "epoch",
    "packed_len": "packed_len", "plain_len": "plain_len", "size": "size",
}


class Version2Vectors(unittest.TestCase):
    def check_frame(self, snap, want):
        h = want["header"]
        for json_name, attr in HEADER_FIELDS.items():
            self.assertEqual(getattr(snap, attr), h[json_name], json_name)
        self.assertEqual(snap.sim_hash, int(h["sim_hash"], 16))
        self.assertEqual(snap.state_hash, int(h["state_hash"], 16))
        self.assertEqual(len(snap.qx), h["boid_count"])
        self.assertEqual(snap.runs, want["runs"])
        got = [{"group": g, "qx": x, "qy": y, "heading": d}
               for g, x, y, d in zip(snap.group, snap.qx, snap.qy, snap.heading)]
        self.assertEqual(got, want["boids"])
        self.assertEqual(snap.obstacles, want["obstacles"])
        self.assertEqual(snap.targets, want["targets"])

    def test_every_stream_decoded_in_order_should_reproduce_its_frames(self):
        for name in INDEX["streams"]:
            dec = flocksnap.Decoder()
            for frame in read_json(os.path.join(V2, f"{name}.json"))["frames"]:
                with self.subTest(frame=frame["bin"]):
                    self.check_frame(dec.decode(read(os.path.join(V2, frame["bin"]))), frame)

    def test_every_body_should_inflate_to_its_plain_bytes(self):
        for name in INDEX["streams"]:
            for frame in read_json(os.path.join(V2, f"{name}.json"))["frames"]:
                buf, h = read(os.path.join(V2, frame["bin"])), frame["header"]
                body = buf[len(buf) - h["packed_len"]:]
                self.assertEqual(flocksnap.inflate_body(body, h["plain_len"]).hex(), frame["plain"])

    def test_every_invalid_frame_should_be_refused_with_its_code(self):
        for case in read_json(os.path.join(V2, INDEX["invalid"])):
            with self.subTest(case=case["name"]):
                dec = flocksnap.Decoder()
                for before in case["before"]:
                    dec.decode(read(os.path.join(V2, before)))
                held = list(dec.held)
                with self.assertRaises(flocksnap.SnapshotError) as e:
                    dec.decode_v2(bytes.fromhex(case["hex"]))
                self.assertEqual(e.exception.code, case["error"])
                self.assertEqual(dec.held, held)

    def test_the_octant_table_and_the_integer_heading_should_match(self):
        self.assertEqual(flocksnap.OCTANT_TURNS, INDEX["octant_turns"])
        for c in INDEX["heading_of"]:
            self.assertEqual(flocksnap.heading_of(c["x"], c["y"]), c["heading"], c)
        self.assertEqual(flocksnap.aspect_weights(1600.0, 1000.0), (256, 160))

    def test_the_decoder_should_keep_four_bases_and_forget_them(self):
        dec = flocksnap.Decoder()
        for frame in read_json(os.path.join(V2, "epoch.json"))["frames"]:
            dec.decode(read(os.path.join(V2, frame["bin"])))
        self.assertEqual([dec.has(s) for s in range(1, 8)], [False] * 3 + [True] * 4)
        dec.forget()
        with self.assertRaises(flocksnap.SnapshotError) as e:
            dec.decode(read(os.path.join(V2, "epoch_7.bin")))
        self.assertEqual(e.exception.code, "no_base")
        with self.assertRaises(flocksnap.SnapshotError) as e:
            flocksnap.Decoder(max_boids=5).decode(read(os.path.join(V2, "basic_1.bin")))
        self.assertEqual(e.exception.code, "over_limit")


class Version1Vectors(unittest.TestCase):
    def test_every_v1_vector_should_decode_to_its_json(self):
        index = read_json(os.path.join(VECTORS, "index.json"))
        for name in index["snapshots"]:
            want = read_json(os.path.join(VECTORS, f"{name}.json"))
            snap = flocksnap.Decoder().decode(read(os.path.join(VECTORS, f"{name}.bin")))
            self.assertEqual(snap.version, 1)
            self.assertEqual(snap.tick, want["header"]["tick"])
            self.assertEqual(snap.runs, want["runs"])
            for i, b in enumerate(want["boids"]):
                self.assertEqual((snap.group[i], snap.qx[i], snap.qy[i], snap.heading[i]),
                                 (b["group"], b["qx"], b["qy"], b["heading"]))
                self.assertEqual(snap.positions()[i], (b["x"], b["y"]))
            self.assertEqual(snap.obstacles, want["obstacles"])
            self.assertEqual(snap.targets, want["targets"])

    def test_every_invalid_v1_vector_should_be_refused_with_its_code(self):
        index = read_json(os.path.join(VECTORS, "index.json"))
        for case in read_json(os.path.join(VECTORS, index["invalid_snapshots"])):
            with self.subTest(case=case["name"]):
                with self.assertRaises(flocksnap.SnapshotError) as e:
                    flocksnap.decode_v1(bytes.fromhex(case["hex"]))
                self.assertEqual(e.exception.code, case["error"])


if __name__ == "__main__":
    unittest.main()
