#!/usr/bin/python3
"""decode_v3_bench.py — how long the flockd Python library takes to decode a
version 3 frame: a view of about 2,000 boids and the whole of a
100,000-boid room, the key frame a stream starts with and the deltas after.

    /usr/bin/python3 tests/bench/decode_v3_bench.py [FLOCKD] [--boids=N] [--seconds=S]
                                                     [--passes=K]

FLOCKD (default build/server/flockd) runs a room of N boids (default
100,000; the world grows with them) for S seconds (default 4) while two
version 3 connections record what they are sent: one with no view (the whole
room) and one whose view holds about 2,000 boids. Each recording is then
decoded in order by
  numpy        flockd's decoder with numpy, the tile hashes by libmurmurhash2
               (Debian's, through ctypes) when it is installed;
  numpy+pyhash the same with the tile hashes chained in Python;
  python       without numpy, boid by boid (1 pass, the first few frames);
K passes (default 3), keeping each frame's fastest time, so that other work
on the machine shows less. Prints the ms of the key frame and the median of
the deltas per decoder, and, last, one JSON line.
"""

import asyncio
import json
import os
import sys
import time

import websockets

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "client", "python"))
sys.path.insert(1, os.path.join(ROOT, "tests", "integration"))

from flockd import decode, decode_v3  # noqa: E402
from flockd_harness import Flockd  # noqa: E402


async def record(url, view, seconds):
    """(welcome, every frame sent, the index of the first that is all keys
    after the view): with a view, the view and then a keyframe command."""
    async with websockets.connect(url, subprotocols=["flock.v3"], max_size=None) as ws:
        welcome = json.loads(await ws.recv())
        commands = [{"cmd": "view", "id": 1, **view}, {"cmd": "keyframe", "id": 2}] \
            if view else []
        if commands:
            await ws.send(json.dumps(commands.pop(0)))
        frames, first, start = [], 0, time.monotonic()
        while time.monotonic() - start < seconds:
            msg = await ws.recv()
            if isinstance(msg, bytes):
                frames.append(msg)
                continue
            reply = json.loads(msg)
            if reply.get("type") in ("ack", "error"):
                assert reply["type"] == "ack", msg
                if commands:
                    await ws.send(json.dumps(commands.pop(0)))
                else:
                    first = len(frames)  # the keyframe's: all keys from here
    return welcome, frames, first


def view_of(world, boids, want=2000):
    """A view that holds about `want` boids with its margin, in the world's middle."""
    side = (world["width"] * world["height"] * want / boids) ** 0.5 * 0.8
    return {"x": world["width"] / 3, "y": world["height"] / 3, "w": side * 16 / 9,
            "h": side * 9 / 16, "px": 1920}


class PyHash(decode_v3.V3Decoder):
    """The numpy decoder with the tile hashes chained in Python."""

    def decode(self, buf):
        real = decode_v3._tile_hashes_np
        decode_v3._tile_hashes_np = lambda f, parts: real(f, parts, use_lib=False)
        try:
            return super().decode(buf)
        finally:
            decode_v3._tile_hashes_np = real


def timed(make, frames, first, most, passes):
    """(ms of frame `first`, median ms of at most `most` frames after it,
    boids per frame); the frames before `first` are decoded, not timed."""
    timed_frames = frames[first:first + 1 + (most or len(frames))]
    best = [float("inf")] * len(timed_frames)
    count = 0
    for _ in range(passes):
        dec = make()
        for buf in frames[:first]:
            dec.decode(buf)
        for k, buf in enumerate(timed_frames):
            t0 = time.perf_counter()
            f = dec.decode(buf)
            best[k] = min(best[k], (time.perf_counter() - t0) * 1e3)
            count = f.count
    rest = sorted(best[1:])
    return best[0], rest[len(rest) // 2] if rest else float("nan"), count


def main(argv):
    args = [a for a in argv if not a.startswith("--")]
    opts = dict(a[2:].split("=", 1) for a in argv if a.startswith("--") and "=" in a)
    binary = args[0] if args else os.path.join(ROOT, "build", "server", "flockd")
    boids, seconds = int(opts.get("boids", 100000)), float(opts.get("seconds", 4))
    passes = int(opts.get("passes", 3))
    with Flockd(binary, "--boids", str(boids), "--capacity", str(max(boids, 16384))) as d:
        world = asyncio.run(record(d.url, None, 0.1))[0]["world"]

        async def both():
            return await asyncio.gather(record(d.url, None, seconds),
                                        record(d.url, view_of(world, boids), seconds))
        recorded = asyncio.run(both())
    decoders = {"numpy": (lambda: decode_v3.V3Decoder(numpy=True), passes, None),
                "numpy+pyhash": (lambda: PyHash(numpy=True), passes, None),
                "python": (lambda: decode_v3.V3Decoder(numpy=False), 1, 6)}
    lib = "libmurmurhash2" if decode.libmurmur() else "no libmurmurhash2: numpy = numpy+pyhash"
    print(f"Python {sys.version.split()[0]}, numpy {decode.np.__version__}, {lib}; "
          f"{boids} boids on {world['width']:g} x {world['height']:g}")
    result = {"python": sys.version.split()[0], "numpy": decode.np.__version__,
              "libmurmurhash": bool(decode.libmurmur()), "boids": boids}
    for name, (welcome, frames, first) in zip(("whole", "view"), recorded):
        row = {"frames": len(frames) - first,
               "bytes": round(sum(map(len, frames[first + 1:])) / (len(frames) - first - 1))}
        for dname, (make, k, most) in decoders.items():
            key, delta, count = timed(make, frames, first, most, k)
            row[f"{dname}_key_ms"], row[f"{dname}_delta_ms"] = round(key, 3), round(delta, 3)
            row["boids"] = count
        result[name] = row
        print(f"{name:5}: {row['boids']} boids a frame, {row['bytes']} bytes a delta "
              f"({row['frames']} frames)")
        for kind in ("key", "delta"):
            cells = "  ".join(f"{n} {row[f'{n}_{kind}_ms']:9.3f}" for n in decoders)
            print(f"  {kind:5} ms per frame: {cells}")
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1:])
