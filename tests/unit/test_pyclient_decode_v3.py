#!/usr/bin/python3
"""The flockd Python library's version 3 decoder (client/python/flockd/
decode_v3.py) against proto/vectors/v3, with numpy and without: every frame
of view.json decoded in order to exactly its header, parts, boids, tile
hashes and fields; every frame of invalid.json refused with its code and
nothing held changed; the sampling hash; both decoders giving the same
answer, frame or code, for frames of the vectors damaged at random (the
order of §12.7's checks included); the connection's Decoder handing version 3
frames to it; Snapshots of version 3 frames (ids, velocities matched by id,
fields, the flags).

    /usr/bin/python3 tests/unit/test_pyclient_decode_v3.py [-v]
"""

import json
import math
import os
import random
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "client", "python"))

import numpy as np  # noqa: E402

from flockd import decode, decode_v3  # noqa: E402
from flockd.errors import SnapshotError  # noqa: E402
from flockd.snapshot import Snapshot  # noqa: E402

V3 = os.path.join(ROOT, "proto", "vectors", "v3")
HEADER_FIELDS = ("seq", "tick", "server_time_us", "flags", "shift", "sample", "width", "height",
                 "room_boids", "cols", "rows", "frame_hash", "size")


def read(path):
    with open(path, "rb") as f:
        return f.read()


def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


VIEW = read_json(os.path.join(V3, "view.json"))
INVALID = read_json(os.path.join(V3, "invalid.json"))
FRAMES = [read(os.path.join(V3, f["file"])) for f in VIEW["frames"]]


def decoders():
    """name -> a new V3Decoder of the vectors' field size."""
    return {"numpy": lambda: decode_v3.V3Decoder(numpy=True, field_cells=VIEW["field_cells"]),
            "python": lambda: decode_v3.V3Decoder(numpy=False, field_cells=VIEW["field_cells"])}


def ints(values):
    return [int(v) for v in values]


def part_of(frame, part):
    """A decoded part as view.json writes one."""
    s = slice(part.start, part.start + part.count)
    out = {"tx": part.tx, "ty": part.ty, "kind": part.kind, "id": ints(frame.ids[s]),
           "qx": ints(frame.qx[s]), "qy": ints(frame.qy[s]), "heading": ints(frame.heading[s]),
           "group": ints(frame.group[s]), "tile_hash": part.hash}
    if part.kind == "delta":
        out.update(gap1=part.gap1, gap0=part.gap0)
    if part.field is not None:
        f = part.field
        out["field"] = {"cells": f.cells, "count": ints(decode_v3._flat(f.count)),
                        "vx": ints(decode_v3._flat(f.vx)), "vy": ints(decode_v3._flat(f.vy))}
    return out


def outcome(dec, before, buf):
    """What decoding buf after the frames `before` gives: the boids, or the code."""
    for b in before:
        dec.decode(b)
    try:
        f = dec.decode(buf)
    except SnapshotError as e:
        return e.code
    return [ints(a) for a in (f.ids, f.qx, f.qy, f.heading, f.group)] + [
        [(p.tx, p.ty, p.kind, p.count, p.hash) for p in f.parts]]


class Version3Vectors(unittest.TestCase):
    def test_every_frame_decoded_in_order_should_reproduce_view_json(self):
        for name, make in decoders().items():
            dec = make()
            for want, buf in zip(VIEW["frames"], FRAMES):
                with self.subTest(decoder=name, frame=want["file"]):
                    f = dec.decode(buf)
                    for field in HEADER_FIELDS:
                        self.assertEqual(getattr(f, field), want[field], field)
                    self.assertEqual(list(f.rect), want["rect"])
                    self.assertEqual(f.obstacles, want["obstacles"])
                    self.assertEqual(f.targets, want["targets"])
                    self.assertEqual([part_of(f, p) for p in f.parts], want["parts"])
                    self.assertEqual(f.count, sum(len(p["id"]) for p in want["parts"]))
                    self.assertEqual((f.version, f.kind, f.epoch), (3, "view", None))

    def test_the_vectors_should_cover_every_kind_of_part(self):
        kinds = {(p["kind"], p.get("gap0", 0) > 0, "field" in p)
                 for f in VIEW["frames"] for p in f["parts"]}
        self.assertTrue({("key", False, False), ("delta", False, False), ("delta", True, False),
                         ("empty", False, False), ("key", False, True)} <= kinds, kinds)

    def test_every_invalid_frame_should_be_refused_with_its_code_and_change_nothing(self):
        for name, make in decoders().items():
            for case in INVALID:
                with self.subTest(decoder=name, case=case["name"]):
                    dec = make()
                    for before in case["after"]:
                        dec.decode(read(os.path.join(V3, before)))
                    held = list(dec.held)
                    with self.assertRaises(SnapshotError) as e:
                        dec.decode(bytes.fromhex(case["hex"]))
                    self.assertEqual(e.exception.code, case["error"])
                    self.assertEqual(dec.held, held)

    def test_the_numpy_decoder_should_give_numpy_arrays_and_the_other_arrays(self):
        f = decoders()["numpy"]().decode(FRAMES[0])
        self.assertEqual((f.ids.dtype, f.qx.dtype, f.qy.dtype, f.heading.dtype, f.group.dtype),
                         (np.uint32, np.uint16, np.uint16, np.uint8, np.uint8))
        f = decoders()["python"]().decode(FRAMES[0])
        self.assertEqual((f.ids.typecode, f.qx.typecode, f.heading.typecode), ("I", "H", "B"))

    def test_a_decoder_should_keep_four_frames_and_forget_them(self):
        dec = decoders()["numpy"]()
        for buf in FRAMES:
            dec.decode(buf)
        self.assertEqual([f.seq for f in dec.held], [5, 6, 7, 8])
        dec.forget(field_cells=2)
        self.assertEqual((dec.held, dec.field_cells), ([], 2))
        with self.assertRaises(SnapshotError) as e:  # a delta on frame 1
            dec.decode(FRAMES[1])
        self.assertEqual(e.exception.code, "no_base")

    def test_the_sampling_hash_should_be_murmurs_finalizer(self):
        self.assertEqual(decode_v3.mix(0), 0)
        self.assertEqual(decode_v3.mix(1), 0x514E28B7)
        ids = np.arange(1, 5001, dtype=np.uint32)
        for s in (0, 1, 3, 16):
            want = [decode_v3.in_sample(int(i), s) for i in ids]
            self.assertEqual(decode_v3.in_sample_np(ids, s).tolist(), want)
        # sample s + 1 is within sample s, and about half of it
        n = [int(decode_v3.in_sample_np(ids, s).sum()) for s in range(4)]
        self.assertEqual(n[0], 5000)
        self.assertTrue(all(abs(n[s + 1] - n[s] / 2) < n[s] / 8 for s in range(3)), n)

    def test_tiles_and_super_tiles_should_follow_the_quantized_grid(self):
        self.assertEqual([decode_v3.tile_of(q, 3) for q in (0, 21845, 21846, 65535)],
                         [0, 0, 1, 2])
        self.assertEqual([decode_v3.grid_at(40, k) for k in (0, 1, 3, 6, 7)], [40, 20, 5, 1, 1])
        self.assertEqual(decode_v3.super_tile_bounds(1200, 800, 3, 2, 1, 1, 0),
                         (43690 * 1200 / 65536, 0.0, 43690 * 1200 / 65536, 65536 * 800 / 65536))


class BothDecoders(unittest.TestCase):
    def test_both_decoders_should_agree_on_damaged_frames(self):
        """Bits flipped, frames cut and bytes added at random, after the
        frames before them in the stream: the same boids or the same code
        from both (the numpy decoder reads the stayers of every part after
        the walk; a failure must still be the first in §12.7's order)."""
        rng = random.Random(3)
        codes = set()
        for _ in range(400):
            k = rng.randrange(len(FRAMES))
            buf = bytearray(FRAMES[k])
            how = rng.random()
            if how < 0.6:
                for _ in range(rng.randint(1, 3)):
                    buf[rng.randrange(40 if rng.random() < 0.1 else 56, len(buf))] ^= \
                        1 << rng.randrange(8)
            elif how < 0.8:
                buf = buf[:rng.randrange(len(buf))]
            else:
                at = rng.randrange(56, len(buf))
                buf[at:at] = bytes([rng.randrange(256)])
            got = [outcome(make(), FRAMES[:k], bytes(buf)) for make in decoders().values()]
            self.assertEqual(got[0], got[1], (k, buf.hex()))
            codes.add(got[0] if isinstance(got[0], str) else "ok")
        self.assertTrue({"ok", "bad_body", "hash_mismatch", "truncated", "bad_value",
                         "no_base"} <= codes, codes)


class Connection(unittest.TestCase):
    def test_the_connections_decoder_should_take_version_3_frames(self):
        dec = decode.Decoder(field_cells=VIEW["field_cells"])
        frames = [dec.decode(b) for b in FRAMES]
        self.assertEqual([f.seq for f in frames], [f["seq"] for f in VIEW["frames"]])
        with self.assertRaises(SnapshotError) as e:
            dec.decode_v3(bytes.fromhex(INVALID[0]["hex"]))  # a version 2 frame
        self.assertEqual(e.exception.code, "bad_version")
        dec.forget()
        with self.assertRaises(SnapshotError):
            dec.decode(FRAMES[1])

    def snapshots(self, use_np):
        dec = decode_v3.V3Decoder(numpy=use_np, field_cells=VIEW["field_cells"])
        out, prev = [], None
        for buf in FRAMES:
            prev = Snapshot(dec.decode(buf), 60, prev)
            out.append(prev)
        return out

    def test_a_snapshot_should_match_velocities_by_id(self):
        for use_np in (True, False):
            s = self.snapshots(use_np)
            a, b = s[0], s[1]  # ticks 1001 and 1003
            self.assertTrue(all(math.isnan(v) for v in a.vx))
            i, j = list(a.ids).index(1), list(b.ids).index(1)
            self.assertAlmostEqual(b.vx[j], (b.x[j] - a.x[i]) / (2 / 60), places=9)
            born = list(s[2].ids).index(20)  # born between frames 2 and 3: unknown
            self.assertTrue(math.isnan(s[2].vx[born]))
            self.assertEqual((b.version, b.kind, b.epoch, b.fogged, b.delayed), (3, "view", None,
                                                                                 False, False))
            last = s[-1]
            self.assertEqual((last.sample, len(last.field)), (1, 6))
            self.assertEqual(sum(int(c) for f in last.field for c in decode_v3._flat(f.count)),
                             sum(sum(p["field"]["count"]) for p in VIEW["frames"][-1]["parts"]))
            self.assertIsNone(s[0].field)

    def test_a_boid_that_wraps_should_have_the_short_way_round_velocity(self):
        s = self.snapshots(True)
        for a, b in zip(s, s[1:]):
            common = set(a.ids.tolist()) & set(b.ids.tolist())
            for boid in common:
                j = b.ids.tolist().index(boid)
                if a.tick < b.tick:
                    self.assertLess(abs(b.vx[j]) * (b.tick - a.tick) / 60, b.width / 2)


if __name__ == "__main__":
    unittest.main()
