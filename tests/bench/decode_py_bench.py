#!/usr/bin/python3
"""decode_py_bench.py — how long the flockd Python library takes to decode a
snapshot frame, key and delta, at 5,000 and 100,000 boids.

    /usr/bin/python3 tests/bench/decode_py_bench.py [SNAPBENCH] [--frames N] [--passes K]

SNAPBENCH (default build/server/snapbench) steps a real flock and writes the
version 2 frames a client that keeps up receives (`--dump`): key frames and
deltas on one and two bases, as a live room sends them. Each stream is
decoded in order by
  numpy       flockd.Decoder() with numpy, the state hash by libmurmurhash2
              (Debian's, through ctypes) when it is installed;
  numpy+pyhash the same with the state hash chained in Python (no libmurmurhash);
  python      flockd.Decoder(numpy=False): boid by boid, the decoder that
              client/examples/flocksnap.py was (it still is, imported from there);
K passes (the boid-by-boid one: 1, on at most N frames), keeping each frame's
fastest time so that other work on the machine shows less. Prints the median
ms per frame per kind side by side and, last, one JSON line.
"""

import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "client", "python"))
sys.path.insert(1, os.path.join(ROOT, "tests", "unit"))

from flockd import decode  # noqa: E402
from test_pyclient_decode import snapbench_stream  # noqa: E402


def timed(make, frames, passes):
    """Per frame: (kind, fastest ms) over the passes."""
    best, kinds = [float("inf")] * len(frames), [None] * len(frames)
    for _ in range(passes):
        dec = make()
        for k, buf in enumerate(frames):
            t0 = time.perf_counter()
            f = dec.decode(buf)
            best[k] = min(best[k], (time.perf_counter() - t0) * 1e3)
            kinds[k] = f.kind
    return list(zip(kinds, best))


def median(xs):
    s = sorted(xs)
    return s[len(s) // 2] if s else float("nan")


class PyHash(decode.Decoder):
    """The numpy decoder with the state hash chained in Python."""

    def _boids(self, h, plain, b1, b0, group):
        real = decode._state_hash_np
        decode._state_hash_np = lambda *a: real(*a, use_lib=False)
        try:
            return super()._boids(h, plain, b1, b0, group)
        finally:
            decode._state_hash_np = real


def main(argv):
    args = [a for a in argv if not a.startswith("--")]
    opts = dict(a[2:].split("=", 1) for a in argv if a.startswith("--") and "=" in a)
    snapbench = args[0] if args else os.path.join(ROOT, "build", "server", "snapbench")
    limit, passes = int(opts.get("frames", 20)), int(opts.get("passes", 3))
    decoders = {
        "numpy": (lambda: decode.Decoder(numpy=True), passes, None),
        "numpy+pyhash": (lambda: PyHash(numpy=True), passes, None),
        "python": (lambda: decode.Decoder(numpy=False), 1, limit),
    }
    lib = "libmurmurhash2" if decode.libmurmur() else "no libmurmurhash2: numpy = numpy+pyhash"
    print(f"Python {sys.version.split()[0]}, numpy {decode.np.__version__}, {lib}")
    result = {"python": sys.version.split()[0], "numpy": decode.np.__version__,
              "libmurmurhash": bool(decode.libmurmur())}
    for boids, seconds in ((5000, 3), (100000, 1.5)):
        frames = snapbench_stream(snapbench, boids, seconds)
        row = {}
        for name, (make, k, most) in decoders.items():
            got = timed(make, frames[:most], k)
            for kind in ("key", "delta"):
                row[f"{name}_{kind}_ms"] = round(median([t for w, t in got if w == kind]), 3)
        result[str(boids)] = row
        print(f"{boids:>7} boids, {len(frames)} frames ({sum(len(f) for f in frames) / len(frames) / boids:.2f} "
              "bytes per boid):")
        for kind in ("key", "delta"):
            cells = "  ".join(f"{name} {row[f'{name}_{kind}_ms']:9.3f}" for name in decoders)
            print(f"  {kind:5} ms per frame: {cells}")
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1:])
