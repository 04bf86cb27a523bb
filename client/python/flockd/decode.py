"""Snapshot decoders, versions 1 and 2 (proto/PROTOCOL.md §4, §11), and
the connection's Decoder of all three versions (version 3: decode_v3.py).

A connection keeps one Decoder and hands it every binary message in the
order they arrive; `decode()` returns a Frame (the state in the wire's
terms: quantized qx, qy, heading per boid, their groups, obstacles,
targets, the header) or raises SnapshotError with the status name of §4.6
and §11.7. A version 2 decoder keeps the last HISTORY frames it decoded as
the bases of later deltas; a refused frame changes nothing it holds.
`forget()` starts a new stream (after a welcome). A version 3 frame goes
to the decoder's V3Decoder (decode_v3.py), which keeps its own bases.

With numpy (Debian's python3-numpy) the arrays are numpy arrays and a delta
frame is reconstructed with whole-array operations: its prediction, the
residual planes, the exceptions and the integer headings of §11.4. Without
numpy they are `array` arrays filled boid by boid (`Decoder(numpy=False)`
asks for that path, which is the decoder that client/examples/flocksnap.py
used to be). The state hash of §11.6 is MurmurHash3_x86_32, a chain no
array operation shortens: it is computed by Debian's libmurmurhash2
(loaded with ctypes) when that library is installed, else in Python, which
costs about 0.7 µs per boid (70 ms for 100,000 boids) on a 2-core machine.
"""

import math
import struct
import zlib
from array import array

from .errors import SnapshotError

try:
    import numpy as np
except ImportError:  # numpy is optional
    np = None

HISTORY = 4
KIND_KEY = 1
KIND_DELTA = 2
FLAG_PAUSED = 0x01
FLAG_WRAP = 0x02

_V1_HEADER = struct.Struct("<2sBBBBHQQffIIHH")  # §4.2, 44 bytes
_V2_HEADER = struct.Struct("<2sBBBBHQQffIIHHIBBHIIIQQ")  # §11.2, 80 bytes
_RUN = struct.Struct("<BI")
_OBSTACLE = struct.Struct("<Ifff")
_TARGET = struct.Struct("<Bff")
_MAX_RATIO = 1032  # deflate's largest expansion
_ESCAPE = 255
_M32 = 0xFFFFFFFF

# §11.4: T[t] = floor(atan(t / 256) * 32768 / pi + 0.5); no entry lies near a
# rounding tie, so math.atan gives the table every decoder uses.
OCTANT_TURNS = [math.floor(math.atan(t / 256) * 32768 / math.pi + 0.5) for t in range(257)]


class Frame:
    """One decoded frame. qx, qy (u16), heading (u8, §4.4's quantized
    direction) and group (u8) hold one entry per boid, as numpy arrays or
    `array` arrays; runs, obstacles and targets are lists of dicts (group,
    count; id, x, y, r; group, x, y). Header fields: version, kind ('key'
    or 'delta'), tick, server_time_us, width, height, epoch, flags, paused,
    wrap, size; version 2 adds seq, base1, base0 (None when absent), gap1,
    gap0, packed_len, plain_len, sim_hash and state_hash. A version 3
    frame (kind 'view', epoch None) has `ids` (u32) as well, runs part after
    part, and seq, fogged, delayed, shift, sample, room_boids, cols, rows,
    rect (x, y, cols, rows: super-tiles), frame_hash, field_cells and
    parts (decode_v3.Part: which super-tile holds which slice, its field).
    The arrays of a version 2 or 3 frame are its decoder's bases: do not
    change them."""

    def __init__(self, **fields):
        self.__dict__.update(fields)

    @property
    def count(self):
        return len(self.qx)

    def positions(self):
        """(x, y) of every boid in world units: the centre of its quantum (§4.4)."""
        w, h = self.width, self.height
        return [((a + 0.5) * w / 65536, (b + 0.5) * h / 65536) for a, b in zip(self.qx, self.qy)]

    def angles(self):
        """The heading of every boid in radians, [0, 2 pi)."""
        return [h * math.pi / 128 for h in self.heading]


# ---- integer helpers of §11.4 and the state hash of §11.6 ------------------------------

def heading_of(x, y):
    """§11.4: the heading (0..255) of direction (x, y), not both 0."""
    a, b = abs(x), abs(y)
    if a >= b:
        turn = OCTANT_TURNS[(256 * b + a // 2) // a]
    else:
        turn = 16384 - OCTANT_TURNS[(256 * a + b // 2) // b]
    if x < 0:
        turn = 32768 - turn
    if y < 0:
        turn = 65536 - turn
    return ((turn + 128) >> 8) & 255


def aspect_weights(width, height):
    """§11.4: (ax, ay), each at least 1."""
    m = max(width, height)
    return (max(1, math.floor(256.0 * width / m + 0.5)),
            max(1, math.floor(256.0 * height / m + 0.5)))


def _murmur_mix(k):
    k = (k * 0xCC9E2D51) & _M32
    k = ((k << 15) | (k >> 17)) & _M32
    return (k * 0x1B873593) & _M32


def _murmur_final(h, length):
    h ^= length
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _M32
    return h ^ (h >> 16)


def _murmur_chain(mixed, nbytes):
    """Both lanes (seeds 0 and 1) over blocks already mixed: the hash."""
    lo, hi = 0, 1
    for k in mixed:
        lo ^= k
        lo = (((lo << 13) | (lo >> 19)) * 5 + 0xE6546B64) & _M32
        hi ^= k
        hi = (((hi << 13) | (hi >> 19)) * 5 + 0xE6546B64) & _M32
    n = nbytes & _M32
    return _murmur_final(hi, n) << 32 | _murmur_final(lo, n)


def state_hash(qx, qy, heading, group):
    """§11.6 in Python alone: MurmurHash3_x86_32 of 8 bytes per boid, seeds 0 and 1."""
    def blocks():
        for x, y, h, g in zip(qx.tolist(), qy.tolist(), heading.tolist(), group.tolist()):
            yield _murmur_mix(x | y << 16)
            yield _murmur_mix(h | g << 8)
    return _murmur_chain(blocks(), 8 * len(qx))


_libmurmur = []  # [function or None], once looked for


def libmurmur():
    """Debian's libmurmurhash2 MurmurHash3_x86_32 through ctypes, or None
    when it is not installed (or does not give the reference value)."""
    if _libmurmur:
        return _libmurmur[0]
    fn = None
    try:
        import ctypes
        import ctypes.util
        try:
            lib = ctypes.CDLL("libmurmurhash.so.2")
        except OSError:
            lib = ctypes.CDLL(ctypes.util.find_library("murmurhash") or "libmurmurhash.so")
        fn = lib.MurmurHash3_x86_32
        fn.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p]
        fn.restype = None
        out = ctypes.c_uint32()
        fn(b"hello", 5, 0, ctypes.byref(out))
        if out.value != 0x248BFA47:
            fn = None
    except (OSError, AttributeError, TypeError):
        fn = None
    _libmurmur.append(fn)
    return fn


_RECORD = None if np is None else np.dtype(
    [("qx", "<u2"), ("qy", "<u2"), ("h", "u1"), ("g", "u1"), ("pad", "<u2")])


def _state_hash_np(qx, qy, heading, group, use_lib=True):
    """§11.6 over numpy arrays: the 8-byte records built at once, hashed by
    libmurmurhash when it is there, else mixed by numpy and chained here."""
    n = len(qx)
    rec = np.zeros(n, dtype=_RECORD)
    rec["qx"], rec["qy"], rec["h"], rec["g"] = qx, qy, heading, group
    fn = libmurmur() if use_lib else None
    if fn is not None and 8 * n < 2**31:
        import ctypes
        lo, hi = ctypes.c_uint32(), ctypes.c_uint32()
        fn(rec.ctypes.data, 8 * n, 0, ctypes.byref(lo))
        fn(rec.ctypes.data, 8 * n, 1, ctypes.byref(hi))
        return hi.value << 32 | lo.value
    k = rec.view("<u4") * np.uint32(0xCC9E2D51)
    k = (k << np.uint32(15)) | (k >> np.uint32(17))
    k *= np.uint32(0x1B873593)
    return _murmur_chain(k.tolist(), 8 * n)


# ---- header and sections ------------------------------------------------------------

def _check_magic(buf, version, kinds):
    if len(buf) < 4:
        raise SnapshotError("truncated", f"{len(buf)} bytes")
    if buf[0:2] != b"FK":
        raise SnapshotError("bad_magic", "magic is not FK")
    if buf[2] != version:
        raise SnapshotError("bad_version", f"version {buf[2]}")
    if buf[3] not in kinds:
        raise SnapshotError("bad_type", f"type {buf[3]}")


def _check_world(flags, reserved_ok, width, height, nruns, ntarg):
    if flags & ~(FLAG_PAUSED | FLAG_WRAP) or not reserved_ok:
        raise SnapshotError("bad_value", f"flags 0x{flags:02x} or reserved bytes")
    if not (math.isfinite(width) and width > 0 and math.isfinite(height) and height > 0):
        raise SnapshotError("bad_value", f"world {width} x {height}")
    if nruns > 256 or ntarg > 256:
        raise SnapshotError("bad_value", f"{nruns} runs, {ntarg} targets")


def _check_length(buf, want):
    if len(buf) < want:
        raise SnapshotError("truncated", f"{len(buf)} bytes, the header needs {want}")
    if len(buf) > want:
        raise SnapshotError("bad_length", f"{len(buf)} bytes, the header needs {want}")


def _read_runs(buf, off, nruns, nboids, use_np):
    """The runs at off (§4.3, §4.6 step 9) and one group per boid."""
    runs, total = [], 0
    for k in range(nruns):
        g, count = _RUN.unpack_from(buf, off + 5 * k)
        if count < 1 or (runs and g <= runs[-1]["group"]) or total + count > nboids:
            raise SnapshotError("bad_value", f"run {k}: group {g}, {count} boids")
        runs.append({"group": g, "count": count})
        total += count
    if total != nboids:
        raise SnapshotError("bad_value", f"runs add up to {total}, boid_count is {nboids}")
    if use_np:
        group = np.repeat(np.array([r["group"] for r in runs], dtype=np.uint8),
                          [r["count"] for r in runs])
    else:
        group = array("B")
        for r in runs:
            group.extend([r["group"]] * r["count"])
    return runs, group


def _read_extras(buf, off, nobst, ntarg):
    """Obstacles and targets at off (§4.5, §4.6 step 9)."""
    obstacles = []
    for k in range(nobst):
        oid, x, y, r = _OBSTACLE.unpack_from(buf, off + 16 * k)
        if oid <= (obstacles[-1]["id"] if obstacles else 0) or not all(
                map(math.isfinite, (x, y, r))) or not r > 0:
            raise SnapshotError("bad_value", f"obstacle {k}: id {oid}, r {r}")
        obstacles.append({"id": oid, "x": x, "y": y, "r": r})
    off += 16 * nobst
    targets = []
    for k in range(ntarg):
        g, x, y = _TARGET.unpack_from(buf, off + 9 * k)
        if (targets and g <= targets[-1]["group"]) or not (math.isfinite(x) and math.isfinite(y)):
            raise SnapshotError("bad_value", f"target {k}: group {g}")
        targets.append({"group": g, "x": x, "y": y})
    return obstacles, targets, off + 9 * ntarg


def _read_v2_header(buf):
    """§11.7 steps 1-7: the header fields as a dict."""
    _check_magic(buf, 2, (KIND_KEY, KIND_DELTA))
    if len(buf) < _V2_HEADER.size:
        raise SnapshotError("truncated", f"{len(buf)} bytes, the header has 80")
    (_, _, kind, flags, reserved, nruns, tick, time_us, width, height, epoch, nboids, nobst,
     ntarg, seq, gap1, gap0, reserved2, packed, plain, reserved3, sim_hash,
     hash_) = _V2_HEADER.unpack_from(buf, 0)
    _check_world(flags, reserved == reserved2 == reserved3 == 0, width, height, nruns, ntarg)
    if plain > packed * _MAX_RATIO:
        raise SnapshotError("bad_value", f"plain_len {plain} exceeds 1032 x packed_len")
    if kind == KIND_KEY and (gap1 or gap0 or plain != 5 * nboids):
        raise SnapshotError("bad_value", f"key frame with gaps {gap1}, {gap0}, plain_len {plain}")
    if kind == KIND_DELTA and (gap1 == 0 or not 3 * nboids <= plain <= 7 * nboids
                               or (plain - 3 * nboids) % 2):
        raise SnapshotError("bad_value", f"delta with gap1 {gap1}, plain_len {plain}")
    _check_length(buf, 80 + 5 * nruns + 16 * nobst + 9 * ntarg + packed)
    return dict(kind=kind, flags=flags, nruns=nruns, tick=tick, time_us=time_us, width=width,
                height=height, epoch=epoch, nboids=nboids, nobst=nobst, ntarg=ntarg, seq=seq,
                gap1=gap1, gap0=gap0, packed=packed, plain=plain, sim_hash=sim_hash, hash=hash_)


def inflate_body(body, plain_len):
    """§11.6: one raw deflate stream, exactly body, to exactly plain_len bytes."""
    d = zlib.decompressobj(-15)
    try:
        plain = d.decompress(body, plain_len + 1)  # never more than one byte past
    except zlib.error as e:
        raise SnapshotError("bad_body", f"not a raw deflate stream: {e}") from None
    if not d.eof or d.unused_data or d.unconsumed_tail or len(plain) != plain_len:
        raise SnapshotError("bad_body", f"the body is not one stream of {plain_len} bytes")
    return plain


# ---- version 1 ------------------------------------------------------------------------

_V1_BOID = None if np is None else np.dtype([("qx", "<u2"), ("qy", "<u2"), ("h", "u1")])


def decode_v1(buf, use_np=None):
    """Decodes a version 1 snapshot (§4) into a Frame."""
    buf = bytes(buf)
    use_np = np is not None if use_np is None else use_np
    _check_magic(buf, 1, (1,))
    if len(buf) < _V1_HEADER.size:
        raise SnapshotError("truncated", f"{len(buf)} bytes, the header has 44")
    (_, _, _, flags, reserved, nruns, tick, time_us, width, height, epoch, nboids, nobst,
     ntarg) = _V1_HEADER.unpack_from(buf, 0)
    _check_world(flags, reserved == 0, width, height, nruns, ntarg)
    _check_length(buf, 44 + 5 * nruns + 5 * nboids + 16 * nobst + 9 * ntarg)
    off = 44 + 5 * nruns
    if use_np:
        boids = np.frombuffer(buf, dtype=_V1_BOID, count=nboids, offset=off)
        qx, qy, heading = boids["qx"].copy(), boids["qy"].copy(), boids["h"].copy()
    else:
        qx, qy, heading = array("H"), array("H"), array("B")
        for x, y, h in struct.iter_unpack("<HHB", buf[off:off + 5 * nboids]):
            qx.append(x)
            qy.append(y)
            heading.append(h)
    runs, group = _read_runs(buf, 44, nruns, nboids, use_np)
    obstacles, targets, _ = _read_extras(buf, off + 5 * nboids, nobst, ntarg)
    return Frame(version=1, kind="key", tick=tick, server_time_us=time_us, width=width,
                 height=height, epoch=epoch, flags=flags, paused=bool(flags & FLAG_PAUSED),
                 wrap=bool(flags & FLAG_WRAP), runs=runs, group=group, qx=qx, qy=qy,
                 heading=heading, obstacles=obstacles, targets=targets, size=len(buf))


# ---- version 2, boid by boid (no numpy) -------------------------------------------------

class _Exceptions:
    """The exception codes of a delta body, in order (§11.5)."""

    def __init__(self, plain, at):
        self.plain, self.at = plain, at

    def next(self):
        if self.at + 2 > len(self.plain):
            raise SnapshotError("bad_body", "more escapes than exceptions")
        z = self.plain[self.at] | self.plain[self.at + 1] << 8
        self.at += 2
        if z < _ESCAPE:
            raise SnapshotError("bad_body", f"an exception carries code {z}, below 255")
        return z


def _contexts_py(b1, b0, n):
    if b0 is None:
        return bytes(n)
    return bytes(1 if 2 <= (a - b) & 255 <= 254 else 0 for a, b in zip(b1.heading, b0.heading))


def _predict_axis_py(p1, p0, g1, g0):
    if p0 is None:
        return list(p1)
    if g1 == g0:
        return [(a + ((a - b + 0x8000) & 0xFFFF) - 0x8000) & 0xFFFF for a, b in zip(p1, p0)]
    return [(a + (2 * (((a - b + 0x8000) & 0xFFFF) - 0x8000) * g1 + g0) // (2 * g0)) & 0xFFFF
            for a, b in zip(p1, p0)]


def _unpack_delta_py(h, plain, b1, b0):
    n, g1, g0 = h["nboids"], h["gap1"], h["gap0"]
    ctx = _contexts_py(b1, b0, n)
    px = _predict_axis_py(b1.qx, b0.qx if b0 else None, g1, g0)
    py = _predict_axis_py(b1.qy, b0.qy if b0 else None, g1, g0)
    at = [0, n - sum(ctx)]
    exc = _Exceptions(plain, 3 * n)
    ax, ay = aspect_weights(h["width"], h["height"])
    qx, qy, heading = array("H", bytes(2 * n)), array("H", bytes(2 * n)), array("B", bytes(n))
    x1s, y1s, h1s = b1.qx, b1.qy, b1.heading
    for i in range(n):
        c = ctx[i]
        k = at[c]
        at[c] = k + 1
        zx, zy = plain[k], plain[n + k]
        if zx == _ESCAPE:
            zx = exc.next()
        if zy == _ESCAPE:
            zy = exc.next()
        x = (px[i] + ((zx >> 1) ^ -(zx & 1))) & 0xFFFF
        y = (py[i] + ((zy >> 1) ^ -(zy & 1))) & 0xFFFF
        dx = ((x - x1s[i] + 0x8000) & 0xFFFF) - 0x8000
        dy = ((y - y1s[i] + 0x8000) & 0xFFFF) - 0x8000
        ph = heading_of(dx * ax, dy * ay) if dx or dy else h1s[i]
        zh = plain[2 * n + k]
        qx[i], qy[i], heading[i] = x, y, (ph + ((zh >> 1) ^ -(zh & 1))) & 255
    if exc.at != len(plain):
        raise SnapshotError("bad_body", "more exceptions than escapes")
    return qx, qy, heading


def _unpack_key_py(n, plain):
    qx = array("H", (plain[i] | plain[2 * n + i] << 8 for i in range(n)))
    qy = array("H", (plain[n + i] | plain[3 * n + i] << 8 for i in range(n)))
    return qx, qy, array("B", plain[4 * n:5 * n])


# ---- version 2 with numpy -----------------------------------------------------------------

def _heading_table():
    """heading_of for every octant and table index at once (§11.4): row
    o = swap | x_negative << 1 | y_negative << 2, column t; swap when |X| < |Y|."""
    turns = np.array(OCTANT_TURNS, dtype=np.int64)
    rows = []
    for o in range(8):
        a = 16384 - turns if o & 1 else turns
        a = 32768 - a if o & 2 else a
        a = 65536 - a if o & 4 else a
        rows.append(((a + 128) >> 8) & 255)
    return np.concatenate(rows).astype(np.uint8)


_HEADINGS_NP = None if np is None else _heading_table()


def _wrap16(v):
    return ((v + 0x8000) & 0xFFFF) - 0x8000


def _unzig(z):
    return (z >> 1) ^ -(z & 1)


def heading_of_np(x, y):
    """heading_of over int32 arrays (|x|, |y| < 2^23), 0 where both are 0.
    The quotient is taken in binary64, which is exact here: a true quotient
    below an integer k <= 256 lies at least 2^-23 under it, far more than
    the rounding of a division near 256 can cover."""
    a, b = np.abs(x), np.abs(y)
    swap = a < b
    big, small = np.maximum(a, b), np.minimum(a, b)
    t = np.floor((256.0 * small + (big >> 1)) / np.maximum(big, 1)).astype(np.int32)
    octant = swap.astype(np.int32) | ((x < 0) << 1) | ((y < 0) << 2)
    return _HEADINGS_NP[octant * 257 + t]


def _residuals_np(plain, n, ctx):
    """The X, Y and H codes per boid in boid order, exceptions put in (§11.5)."""
    body = np.frombuffer(plain, dtype=np.uint8)
    planes = body[:3 * n].reshape(3, n)
    if ctx is not None and ctx.any():
        order = np.argsort(ctx, kind="stable")  # context 0's boids, then context 1's
        bytes_ = np.empty((3, n), dtype=np.uint8)
        bytes_[:, order] = planes
        planes = bytes_
    codes = planes.astype(np.int32)
    exceptions = np.frombuffer(plain, dtype="<u2", offset=3 * n).astype(np.int32)
    ex = np.flatnonzero(planes[0] == _ESCAPE)
    ey = np.flatnonzero(planes[1] == _ESCAPE)
    if len(ex) + len(ey) != len(exceptions):
        more = "escapes than exceptions" if len(ex) + len(ey) > len(exceptions) else \
            "exceptions than escapes"
        raise SnapshotError("bad_body", f"more {more}")
    if len(exceptions):
        if exceptions.min() < _ESCAPE:
            raise SnapshotError("bad_body", "an exception carries a code below 255")
        # E lists them boid by boid, x before y.
        order = np.argsort(np.concatenate([2 * ex, 2 * ey + 1]), kind="stable")
        values = np.empty(len(exceptions), dtype=np.int32)
        values[order] = exceptions
        codes[0, ex] = values[:len(ex)]
        codes[1, ey] = values[len(ex):]
    return codes


def _predict_np(b1, b0, g1, g0):
    """Context per boid (None: all 0) and predicted qx, qy (§11.4), int32."""
    x1, y1 = b1.qx.astype(np.int32), b1.qy.astype(np.int32)
    if b0 is None:
        return None, x1, y1
    turn = (b1.heading.astype(np.int32) - b0.heading) & 255
    ctx = ((turn >= 2) & (turn <= 254)).view(np.uint8)
    dx, dy = _wrap16(x1 - b0.qx), _wrap16(y1 - b0.qy)
    if g1 == g0:
        return ctx, (x1 + dx) & 0xFFFF, (y1 + dy) & 0xFFFF
    return (ctx, (x1 + (2 * g1 * dx + g0) // (2 * g0)) & 0xFFFF,
            (y1 + (2 * g1 * dy + g0) // (2 * g0)) & 0xFFFF)


def _unpack_delta_np(h, plain, b1, b0):
    ctx, px, py = _predict_np(b1, b0, h["gap1"], h["gap0"])
    codes = _residuals_np(plain, h["nboids"], ctx)
    qx = ((px + _unzig(codes[0])) & 0xFFFF).astype(np.uint16)
    qy = ((py + _unzig(codes[1])) & 0xFFFF).astype(np.uint16)
    mx = _wrap16(qx.astype(np.int32) - b1.qx)
    my = _wrap16(qy.astype(np.int32) - b1.qy)
    ax, ay = aspect_weights(h["width"], h["height"])
    ph = np.where((mx != 0) | (my != 0), heading_of_np(mx * ax, my * ay), b1.heading)
    heading = ((ph + _unzig(codes[2])) & 255).astype(np.uint8)
    return qx, qy, heading


def _unpack_key_np(n, plain):
    b = np.frombuffer(plain, dtype=np.uint8)
    qx = b[:n].astype(np.uint16) | (b[2 * n:3 * n].astype(np.uint16) << 8)
    qy = b[n:2 * n].astype(np.uint16) | (b[3 * n:4 * n].astype(np.uint16) << 8)
    return qx, qy, b[4 * n:5 * n].copy()


# ---- the decoder ----------------------------------------------------------------------

class Decoder:
    """Decodes the snapshots of one connection, any version; keeps the
    bases a version 2 or 3 stream needs. `max_boids` bounds what a frame may
    announce (over_limit beyond it). `numpy`: None uses numpy when it is
    installed, False never, True always. `field_cells`: a version 3
    stream's field size (the welcome's stream.field.cells)."""

    def __init__(self, max_boids=1 << 22, numpy=None, field_cells=4):
        if numpy and np is None:
            raise ImportError("numpy is not installed")
        from .decode_v3 import V3Decoder  # it builds on this module
        self.max_boids = max_boids
        self.numpy = np is not None if numpy is None else bool(numpy)
        self.held = []  # version 2 frames, newest last
        self.v3 = V3Decoder(max_boids, self.numpy, field_cells)

    def forget(self, field_cells=None):
        """Forgets every frame held: a new stream starts (a welcome, another
        room), whose version 3 fields have field_cells cells if given."""
        self.held = []
        self.v3.forget(field_cells)

    def has(self, seq):
        """True if a version 2 frame of sequence number seq is held."""
        return any(s.seq == seq for s in self.held)

    def decode(self, buf):
        """Decodes one binary message into a Frame; raises SnapshotError."""
        buf = bytes(buf)
        if len(buf) >= 3 and buf[2] == 1:
            return decode_v1(buf, self.numpy)
        if len(buf) >= 3 and buf[2] == 3:
            return self.v3.decode(buf)
        return self.decode_v2(buf)

    def decode_v3(self, buf):
        """Decodes one version 3 frame only (another version is bad_version)."""
        return self.v3.decode(buf)

    def _base(self, h, seq):
        for s in reversed(self.held):
            if s.seq == seq:
                if s.epoch != h["epoch"] or len(s.qx) != h["nboids"]:
                    raise SnapshotError("no_base", f"base {seq} is of epoch {s.epoch}")
                return s
        raise SnapshotError("no_base", f"base {seq} is not held")

    def _boids(self, h, plain, b1, b0, group):
        if self.numpy:
            if b1:
                qx, qy, heading = _unpack_delta_np(h, plain, b1, b0)
            else:
                qx, qy, heading = _unpack_key_np(h["nboids"], plain)
            return qx, qy, heading, _state_hash_np(qx, qy, heading, group)
        if b1:
            qx, qy, heading = _unpack_delta_py(h, plain, b1, b0)
        else:
            qx, qy, heading = _unpack_key_py(h["nboids"], plain)
        return qx, qy, heading, state_hash(qx, qy, heading, group)

    def decode_v2(self, buf):
        """Decodes one version 2 frame only (a version 1 one is bad_version)."""
        buf = bytes(buf)
        h = _read_v2_header(buf)
        if h["nboids"] > self.max_boids:
            raise SnapshotError("over_limit", f"{h['nboids']} boids")
        runs, group = _read_runs(buf, 80, h["nruns"], h["nboids"], self.numpy)
        obstacles, targets, body_at = _read_extras(buf, 80 + 5 * h["nruns"], h["nobst"],
                                                   h["ntarg"])
        base1 = base0 = b1 = b0 = None
        if h["kind"] == KIND_DELTA:
            base1 = (h["seq"] - h["gap1"]) & _M32
            b1 = self._base(h, base1)
            if h["gap0"]:
                base0 = (base1 - h["gap0"]) & _M32
                b0 = self._base(h, base0)
        plain = inflate_body(buf[body_at:], h["plain"])
        qx, qy, heading, got = self._boids(h, plain, b1, b0, group)
        if got != h["hash"]:
            raise SnapshotError("hash_mismatch",
                                f"state hash {got:016x}, the frame says {h['hash']:016x}")
        frame = Frame(
            version=2, kind="key" if h["kind"] == KIND_KEY else "delta", seq=h["seq"],
            base1=base1, base0=base0, gap1=h["gap1"], gap0=h["gap0"], tick=h["tick"],
            server_time_us=h["time_us"], width=h["width"], height=h["height"], epoch=h["epoch"],
            flags=h["flags"], paused=bool(h["flags"] & FLAG_PAUSED),
            wrap=bool(h["flags"] & FLAG_WRAP), packed_len=h["packed"], plain_len=h["plain"],
            sim_hash=h["sim_hash"], state_hash=h["hash"], runs=runs, group=group, qx=qx, qy=qy,
            heading=heading, obstacles=obstacles, targets=targets, size=len(buf))
        self.held = (self.held + [frame])[-HISTORY:]
        return frame
