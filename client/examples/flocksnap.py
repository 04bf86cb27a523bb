"""Decode flockd snapshots, version 1 and version 2, in plain Python.

proto/PROTOCOL.md is the reference: section 4 for version 1 (one absolute
snapshot per message) and section 11 for version 2 (key frames and delta
frames predicted from frames decoded before, with a raw deflate body).
A script keeps one Decoder per connection and hands it every binary
message in the order they arrive:

    import flocksnap
    dec = flocksnap.Decoder()
    snap = dec.decode(message)            # a Snapshot, or SnapshotError
    for x, y in snap.positions(): ...
    dec.forget()                          # after a welcome: a new stream

A version 2 decoder keeps the states of the last HISTORY frames it decoded,
the bases of later deltas, and refuses a frame it cannot reconstruct
exactly (a base it does not hold, a body that does not inflate to the size
the header announces, a state whose hash differs) with a SnapshotError
whose `code` is the status name of PROTOCOL.md 11.7; a refused frame
changes nothing the decoder holds. Only the standard library is used (zlib
inflates). CPython decodes a delta frame of 1,000 boids in a few
milliseconds, of 10,000 in about 0.1 s: fine for a script watching a room,
too slow for 20 frames a second of a big one.
"""

import math
import struct
import zlib
from array import array

HISTORY = 4
KIND_KEY = 1
KIND_DELTA = 2
FLAG_PAUSED = 0x01
FLAG_WRAP = 0x02

_V1_HEADER = struct.Struct("<2sBBBBHQQffIIHH")  # PROTOCOL.md 4.2, 44 bytes
_V2_HEADER = struct.Struct("<2sBBBBHQQffIIHHIBBHIIIQQ")  # PROTOCOL.md 11.2, 80 bytes
_RUN = struct.Struct("<BI")
_OBSTACLE = struct.Struct("<Ifff")
_TARGET = struct.Struct("<Bff")
_MAX_RATIO = 1032  # deflate's largest expansion
_ESCAPE = 255
_M32 = 0xFFFFFFFF

# PROTOCOL.md 11.4: T[t] = floor(atan(t / 256) * 32768 / pi + 0.5), no entry
# near a rounding tie, so math.atan gives the table every decoder uses.
OCTANT_TURNS = [math.floor(math.atan(t / 256) * 32768 / math.pi + 0.5) for t in range(257)]


class SnapshotError(ValueError):
    """A refused snapshot: `code` is the status name (PROTOCOL.md 4.6, 11.7)."""

    def __init__(self, code, message):
        super().__init__(f"{code}: {message}")
        self.code = code


class Snapshot:
    """A decoded snapshot. qx, qy (array 'H'), heading and group (array 'B')
    hold one entry per boid; obstacles are dicts (id, x, y, r) and targets
    dicts (group, x, y). Version 2 adds kind ('key' or 'delta'), seq, base1,
    base0 (None when absent), sim_hash and state_hash (ints). The arrays
    of a version 2 snapshot are kept as bases: do not change them."""

    def __init__(self, **fields):
        self.__dict__.update(fields)

    def positions(self):
        """(x, y) of every boid in world units: the centre of its quantum (4.4)."""
        w, h = self.width, self.height
        return [((a + 0.5) * w / 65536, (b + 0.5) * h / 65536) for a, b in zip(self.qx, self.qy)]

    def angles(self):
        """The heading of every boid in radians, [0, 2 pi)."""
        return [h * math.pi / 128 for h in self.heading]


def heading_of(x, y):
    """PROTOCOL.md 11.4: the heading (0..255) of direction (x, y), not both 0."""
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
    """PROTOCOL.md 11.4: (ax, ay), each at least 1."""
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


def state_hash(qx, qy, heading, group):
    """PROTOCOL.md 11.6: MurmurHash3_x86_32 of 8 bytes per boid, seeds 0 and 1."""
    lo, hi = 0, 1
    mix = _murmur_mix
    for x, y, h, g in zip(qx, qy, heading, group):
        # Both lanes hash the same blocks: mix each block once (inlined rounds).
        for k in (mix(x | y << 16), mix(h | g << 8)):
            lo ^= k
            lo = (((lo << 13) | (lo >> 19)) * 5 + 0xE6546B64) & _M32
            hi ^= k
            hi = (((hi << 13) | (hi >> 19)) * 5 + 0xE6546B64) & _M32
    n = 8 * len(qx) & _M32
    return _murmur_final(hi, n) << 32 | _murmur_final(lo, n)


def _read_sections(buf, off, extras, nruns, nboids, nobst, ntarg):
    """Runs at off (one group per boid), obstacles and targets at extras
    (PROTOCOL.md 4.3, 4.5, 4.6 step 9); returns them and where they end."""
    runs, group = [], array("B")
    for k in range(nruns):
        g, count = _RUN.unpack_from(buf, off + 5 * k)
        if count < 1 or (runs and g <= runs[-1]["group"]) or len(group) + count > nboids:
            raise SnapshotError("bad_value", f"run {k}: group {g}, {count} boids")
        runs.append({"group": g, "count": count})
        group.extend([g] * count)
    if len(group) != nboids:
        raise SnapshotError("bad_value", f"runs add up to {len(group)}, boid_count is {nboids}")
    off = extras
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
    return runs, group, obstacles, targets, off + 9 * ntarg


def _check_world(flags, reserved_ok, width, height, nruns, ntarg):
    if flags & ~(FLAG_PAUSED | FLAG_WRAP) or not reserved_ok:
        raise SnapshotError("bad_value", f"flags 0x{flags:02x} or reserved bytes")
    if not (math.isfinite(width) and width > 0 and math.isfinite(height) and height > 0):
        raise SnapshotError("bad_value", f"world {width} x {height}")
    if nruns > 256 or ntarg > 256:
        raise SnapshotError("bad_value", f"{nruns} runs, {ntarg} targets")


def _check_magic(buf, version, kinds):
    if len(buf) < 4:
        raise SnapshotError("truncated", f"{len(buf)} bytes")
    if buf[0:2] != b"FK":
        raise SnapshotError("bad_magic", "magic is not FK")
    if buf[2] != version:
        raise SnapshotError("bad_version", f"version {buf[2]}")
    if buf[3] not in kinds:
        raise SnapshotError("bad_type", f"type {buf[3]}")


def _check_length(buf, want):
    if len(buf) < want:
        raise SnapshotError("truncated", f"{len(buf)} bytes, the header needs {want}")
    if len(buf) > want:
        raise SnapshotError("bad_length", f"{len(buf)} bytes, the header needs {want}")


def decode_v1(buf):
    """Decodes a version 1 snapshot (PROTOCOL.md 4) into a Snapshot."""
    buf = bytes(buf)
    _check_magic(buf, 1, (1,))
    if len(buf) < _V1_HEADER.size:
        raise SnapshotError("truncated", f"{len(buf)} bytes, the header has 44")
    (_, _, _, flags, reserved, nruns, tick, time_us, width, height, epoch, nboids, nobst,
     ntarg) = _V1_HEADER.unpack_from(buf, 0)
    _check_world(flags, reserved == 0, width, height, nruns, ntarg)
    _check_length(buf, 44 + 5 * nruns + 5 * nboids + 16 * nobst + 9 * ntarg)
    off = 44 + 5 * nruns
    qx, qy, heading = array("H"), array("H"), array("B")
    for x, y, h in struct.iter_unpack("<HHB", buf[off:off + 5 * nboids]):
        qx.append(x)
        qy.append(y)
        heading.append(h)
    runs, group, obstacles, targets, _ = _read_sections(
        buf, 44, off + 5 * nboids, nruns, nboids, nobst, ntarg)
    return Snapshot(version=1, kind="key", tick=tick, server_time_us=time_us, width=width,
                    height=height, epoch=epoch, flags=flags, paused=bool(flags & FLAG_PAUSED),
                    wrap=bool(flags & FLAG_WRAP), runs=runs, group=group, qx=qx, qy=qy,
                    heading=heading, obstacles=obstacles, targets=targets)


def _read_v2_header(buf):
    """PROTOCOL.md 11.7 steps 1-7: the header fields as a dict."""
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
    """PROTOCOL.md 11.6: one raw deflate stream, exactly body, to exactly plain_len bytes."""
    d = zlib.decompressobj(-15)
    try:
        plain = d.decompress(body, plain_len + 1)  # never more than one byte past
    except zlib.error as e:
        raise SnapshotError("bad_body", f"not a raw deflate stream: {e}") from None
    if not d.eof or d.unused_data or d.unconsumed_tail or len(plain) != plain_len:
        raise SnapshotError("bad_body", f"the body is not one stream of {plain_len} bytes")
    return plain


class _Exceptions:
    """The exception codes of a delta body, in order (PROTOCOL.md 11.5)."""

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


def _contexts(b1, b0, n):
    """Per boid 1 if it turned 2 or more steps between the bases (PROTOCOL.md 11.4)."""
    if b0 is None:
        return bytes(n)
    return bytes(1 if 2 <= (a - b) & 255 <= 254 else 0 for a, b in zip(b1.heading, b0.heading))


def _predict_axis(p1, p0, g1, g0):
    """Predicted coordinates of one axis for every boid (PROTOCOL.md 11.4)."""
    if p0 is None:
        return list(p1)
    if g1 == g0:
        return [(a + ((a - b + 0x8000) & 0xFFFF) - 0x8000) & 0xFFFF for a, b in zip(p1, p0)]
    return [(a + (2 * (((a - b + 0x8000) & 0xFFFF) - 0x8000) * g1 + g0) // (2 * g0)) & 0xFFFF
            for a, b in zip(p1, p0)]


def _unpack_delta(h, plain, b1, b0):
    n, g1, g0 = h["nboids"], h["gap1"], h["gap0"]
    ctx = _contexts(b1, b0, n)
    px = _predict_axis(b1.qx, b0.qx if b0 else None, g1, g0)
    py = _predict_axis(b1.qy, b0.qy if b0 else None, g1, g0)
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


def _unpack_key(n, plain):
    qx = array("H", (plain[i] | plain[2 * n + i] << 8 for i in range(n)))
    qy = array("H", (plain[n + i] | plain[3 * n + i] << 8 for i in range(n)))
    return qx, qy, array("B", plain[4 * n:5 * n])


class Decoder:
    """Decodes the snapshots of one connection, either version; keeps the
    bases a version 2 stream needs. `max_boids` bounds what a frame may
    announce (over_limit beyond it)."""

    def __init__(self, max_boids=1 << 22):
        self.max_boids = max_boids
        self.held = []  # version 2 states, newest last

    def forget(self):
        """Forgets every state held: a new stream starts (a welcome, another room)."""
        self.held = []

    def has(self, seq):
        """True if a version 2 state of sequence number seq is held."""
        return any(s.seq == seq for s in self.held)

    def decode(self, buf):
        """Decodes one binary message into a Snapshot; raises SnapshotError."""
        buf = bytes(buf)
        if len(buf) >= 3 and buf[2] == 1:
            return decode_v1(buf)
        return self.decode_v2(buf)

    def _base(self, h, seq):
        for s in reversed(self.held):
            if s.seq == seq:
                if s.epoch != h["epoch"] or len(s.qx) != h["nboids"]:
                    raise SnapshotError("no_base", f"base {seq} is of epoch {s.epoch}")
                return s
        raise SnapshotError("no_base", f"base {seq} is not held")

    def decode_v2(self, buf):
        """Decodes one version 2 frame only (a version 1 one is bad_version)."""
        buf = bytes(buf)
        h = _read_v2_header(buf)
        if h["nboids"] > self.max_boids:
            raise SnapshotError("over_limit", f"{h['nboids']} boids")
        runs, group, obstacles, targets, body_at = _read_sections(
            buf, 80, 80 + 5 * h["nruns"], h["nruns"], h["nboids"], h["nobst"], h["ntarg"])
        base1 = base0 = b1 = b0 = None
        if h["kind"] == KIND_DELTA:
            base1 = (h["seq"] - h["gap1"]) & _M32
            b1 = self._base(h, base1)
            if h["gap0"]:
                base0 = (base1 - h["gap0"]) & _M32
                b0 = self._base(h, base0)
        plain = inflate_body(buf[body_at:], h["plain"])
        if b1:
            qx, qy, heading = _unpack_delta(h, plain, b1, b0)
        else:
            qx, qy, heading = _unpack_key(h["nboids"], plain)
        got = state_hash(qx, qy, heading, group)
        if got != h["hash"]:
            raise SnapshotError("hash_mismatch", f"state hash {got:016x}, the frame says {h['hash']:016x}")
        snap = Snapshot(
            version=2, kind="key" if h["kind"] == KIND_KEY else "delta", seq=h["seq"],
            base1=base1, base0=base0, gap1=h["gap1"], gap0=h["gap0"], tick=h["tick"],
            server_time_us=h["time_us"], width=h["width"], height=h["height"], epoch=h["epoch"],
            flags=h["flags"], paused=bool(h["flags"] & FLAG_PAUSED),
            wrap=bool(h["flags"] & FLAG_WRAP), packed_len=h["packed"], plain_len=h["plain"],
            sim_hash=h["sim_hash"], state_hash=h["hash"], runs=runs, group=group, qx=qx, qy=qy,
            heading=heading, obstacles=obstacles, targets=targets, size=len(buf))
        self.held = (self.held + [snap])[-HISTORY:]
        return snap
