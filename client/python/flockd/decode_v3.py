"""The version 3 frame decoder (proto/PROTOCOL.md §12).

A version 3 frame is the part of a room a client looks at: a header, the
obstacles and targets, then one part per super-tile of its rect, each
empty, a key (a raw deflate body: ids, six planes, maybe a field) or a
delta on the same super-tile one or two frames earlier (entered boids,
leavers, and the stayers' residuals as Rice codes, §12.5). V3Decoder keeps
the last HISTORY frames it decoded as bases and refuses a frame at the
first failure of §12.7, in its order, with the C codec's status names
(SnapshotError.code); a refused frame changes nothing it holds.

A decoded frame is a decode.Frame whose per-boid arrays (ids, qx, qy,
heading, group) run part after part, each part's boids by id; `parts` says
which super-tile holds which slice, with its field (§12.6).

Without numpy everything is read boid by boid. With numpy a key part's ids
and planes are read at once; the stayers of every delta part of a frame are
gathered, predicted (§11.4) and reconstructed together, and their Rice
codes are located by a walk over the frame's bits in which each boid is a
single table lookup (the tables, for each context, map a bit position to
where the boid's three codes end), their values then read at once. The tile
hashes are MurmurHash3: Debian's libmurmurhash2 (ctypes) when installed,
else chained in Python.
"""

import itertools
import math
import struct
import zlib
from array import array

from . import decode
from .decode import FLAG_PAUSED, FLAG_WRAP, Frame, np
from .errors import SnapshotError

VERSION = 3
HEADER = struct.Struct("<2sBBBBBBQQffIIBBBBBBHHHI")  # §12.5, 56 bytes
KIND_FRAME = 1
HISTORY = 4
MAX_SHIFT = 7
MAX_SAMPLE = 16
FLAG_FOGGED = 0x04
FLAG_DELAYED = 0x08
KNOWN_FLAGS = FLAG_PAUSED | FLAG_WRAP | FLAG_FOGGED | FLAG_DELAYED
PART_EMPTY, PART_KEY, PART_DELTA, PART_FIELD = 0, 1, 2, 4
PART_KINDS = {PART_EMPTY: "empty", PART_KEY: "key", PART_DELTA: "delta"}
RICE_ESC = 20  # this many one bits: the value follows in 16 bits
_MAX_RATIO = 1032
_M32 = 0xFFFFFFFF


# ---- ids, samples and tiles (§12.2) -------------------------------------------------

def mix(x):
    """The sampling test's hash of a boid id: MurmurHash3's 32-bit finalizer."""
    x ^= x >> 16
    x = (x * 0x85EBCA6B) & _M32
    x ^= x >> 13
    x = (x * 0xC2B2AE35) & _M32
    return x ^ (x >> 16)


def in_sample(boid_id, sample):
    """True if the boid with this id is among those of sample `sample`."""
    return sample == 0 or mix(boid_id) & ((1 << sample) - 1) == 0


def in_sample_np(ids, sample):
    """in_sample over a numpy array of ids: a bool array."""
    if sample == 0:
        return np.ones(len(ids), dtype=bool)
    x = np.asarray(ids, dtype=np.uint32)
    x = x ^ (x >> np.uint32(16))
    x = x * np.uint32(0x85EBCA6B)
    x = x ^ (x >> np.uint32(13))
    x = x * np.uint32(0xC2B2AE35)
    x = x ^ (x >> np.uint32(16))
    return (x & np.uint32((1 << sample) - 1)) == 0


def tile_of(q, n):
    """The tile column (row) of a quantized coordinate on a grid of n tiles."""
    return q * n >> 16


def grid_at(n, shift):
    """Super-tiles across (down) a grid of n tiles at this shift: ceil(n / 2^shift)."""
    return (n + (1 << shift) - 1) >> shift


def super_tile_bounds(width, height, cols, rows, shift, tx, ty):
    """Super-tile (tx, ty)'s (x, y, width, height) in world units: its
    quantized start and span (§12.6) scaled to the world."""
    x0, y0 = (tx << shift) * 65536 // cols, (ty << shift) * 65536 // rows
    sx, sy = (65536 << shift) // cols, (65536 << shift) // rows
    return (x0 * width / 65536, y0 * height / 65536, sx * width / 65536, sy * height / 65536)


def plain_bound(count, cells):
    """The largest inflated body a key of `count` boids may have (§12.5)."""
    return 16 * count + 7 * cells * cells + 16


# ---- what a frame holds ---------------------------------------------------------------

class Field:
    """A part's field (§12.6): `cells` x `cells` cells, row by row, each
    with `count` (boids the audience sees there, every sample) and the
    mean velocity `vx`, `vy` in steps of the welcome's field.vscale units/s
    (-127..127): lists, or numpy arrays of shape (cells, cells). `bounds`
    is the super-tile's (x, y, width, height) in world units; cell (row r,
    column c) covers width / cells of it from x + c * width / cells (the
    quantized split of §12.6, within a quantum)."""

    __slots__ = ("cells", "count", "vx", "vy", "bounds")

    def __init__(self, cells, count, vx, vy, bounds=None):
        self.cells, self.count, self.vx, self.vy = cells, count, vx, vy
        self.bounds = bounds

    def __repr__(self):
        return f"Field({self.cells}x{self.cells}, {sum(map(int, _flat(self.count)))} boids)"


def _flat(values):
    return values.ravel().tolist() if hasattr(values, "ravel") else values


class Part:
    """One super-tile of a frame's rect: `tx`, `ty` (its column and row at
    the frame's shift), `kind` ('empty', 'key' or 'delta'), `gap1`, `gap0`
    (a delta's bases), `start`, `count` (its boids are the frame's arrays
    [start, start + count)), `field` (a Field, or None) and `hash` (its
    tile hash, §12.7)."""

    __slots__ = ("tx", "ty", "kind", "gap1", "gap0", "start", "count", "field", "hash")

    def __init__(self, tx, ty, kind, gap1=0, gap0=0, start=0, count=0, field=None):
        self.tx, self.ty, self.kind, self.gap1, self.gap0 = tx, ty, kind, gap1, gap0
        self.start, self.count, self.field, self.hash = start, count, field, 0

    def __repr__(self):
        return f"Part({self.tx}, {self.ty}, {self.kind}, {self.count} boids)"


# ---- reading bytes and bits ------------------------------------------------------------

def _varint(buf, at, end):
    """(value, position after it) of the LEB128 varint at buf[at:end], or
    None if it runs past end, is longer than 5 bytes or exceeds 32 bits."""
    value = 0
    for k in range(5):
        if at + k >= end:
            return None
        b = buf[at + k]
        value |= (b & 0x7F) << (7 * k)
        if not b & 0x80:
            return (value, at + k + 1) if value <= _M32 else None
    return None


def _bad_body(why):
    return SnapshotError("bad_body", why)


class _Body:
    """A cursor over a part's body: every failure is a bad body."""

    def __init__(self, data, at=0, end=None):
        self.data, self.at = data, at
        self.end = len(data) if end is None else end

    def varint(self):
        got = _varint(self.data, self.at, self.end)
        if got is None:
            raise _bad_body("a varint runs past the body or exceeds 32 bits")
        self.at = got[1]
        return got[0]

    def take(self, n):
        if self.end - self.at < n:
            raise _bad_body(f"the body ends {n - (self.end - self.at)} bytes early")
        self.at += n
        return self.at - n

    def ids(self, n):
        """n ids as varint differences from 0, ascending, each >= 1 (a list)."""
        out, prev = [], 0
        for _ in range(n):
            step = self.varint()
            if step == 0 or prev + step > _M32:
                raise _bad_body("ids not ascending")
            prev += step
            out.append(prev)
        return out

    def field(self, cells):
        count, vx, vy = [], [], []
        for _ in range(cells * cells):
            count.append(self.varint())
            at = self.take(2)
            vx.append(self.data[at] - 256 * (self.data[at] > 127))
            vy.append(self.data[at + 1] - 256 * (self.data[at + 1] > 127))
        return count, vx, vy


class _Bits:
    """A delta's bit section (§12.5 step 4): bits from the least
    significant of each byte on. Reading past the end reads zeros and
    leaves `pos` past `size`, which the end check refuses."""

    def __init__(self, data):
        self.v, self.size, self.pos = int.from_bytes(data, "little"), 8 * len(data), 0

    def get(self, n):
        x = (self.v >> self.pos) & ((1 << n) - 1)
        self.pos += n
        return x

    def rice(self, k):
        x = self.v >> self.pos
        ones = (x ^ (x + 1)).bit_length() - 1  # trailing one bits
        if ones >= RICE_ESC:
            self.pos += RICE_ESC
            return self.get(16)
        self.pos += ones + 1
        return ones << k | self.get(k)

    def check_end(self):
        """The codes end in the last byte and zero bits pad it."""
        if (self.pos + 7) // 8 != self.size // 8 or self.v >> self.pos:
            raise _bad_body("the bit section does not end in its last byte with zero padding")


def _unzig(z):
    return (z >> 1) ^ -(z & 1)


def _wrap16(v):
    return ((v + 0x8000) & 0xFFFF) - 0x8000


# ---- header and sections ----------------------------------------------------------------

def read_header(buf):
    """§12.7 steps 1-2: the header's fields as a dict; raises SnapshotError."""
    if len(buf) < 4:
        raise SnapshotError("truncated", f"{len(buf)} bytes")
    if buf[0:2] != b"FK":
        raise SnapshotError("bad_magic", "magic is not FK")
    if buf[2] != VERSION:
        raise SnapshotError("bad_version", f"version {buf[2]}")
    if buf[3] != KIND_FRAME:
        raise SnapshotError("bad_type", f"kind {buf[3]}")
    if len(buf) < HEADER.size:
        raise SnapshotError("truncated", f"{len(buf)} bytes, the header has {HEADER.size}")
    (_, _, _, flags, shift, sample, res7, tick, time_us, width, height, seq, room_boids, cols,
     rows, rect_cols, rect_rows, rect_x, rect_y, nobst, ntarg, res50,
     frame_hash) = HEADER.unpack_from(buf, 0)
    if flags & ~KNOWN_FLAGS or res7 or res50:
        raise SnapshotError("bad_value", f"flags 0x{flags:02x} or reserved bytes")
    if not (math.isfinite(width) and width > 0 and math.isfinite(height) and height > 0):
        raise SnapshotError("bad_value", f"world {width} x {height}")
    if shift > MAX_SHIFT or sample > MAX_SAMPLE or not cols or not rows:
        raise SnapshotError("bad_value", f"shift {shift}, sample {sample}, grid {cols} x {rows}")
    gc, gr = grid_at(cols, shift), grid_at(rows, shift)
    if not (1 <= rect_cols <= gc and 1 <= rect_rows <= gr and rect_x < gc and rect_y < gr):
        raise SnapshotError("bad_value", f"rect {rect_x},{rect_y} {rect_cols}x{rect_rows} on a "
                                         f"grid of {gc} x {gr} super-tiles")
    if ntarg > 256:
        raise SnapshotError("bad_value", f"{ntarg} targets")
    return dict(flags=flags, shift=shift, sample=sample, tick=tick, time_us=time_us,
                width=width, height=height, seq=seq, room_boids=room_boids, cols=cols, rows=rows,
                rect=(rect_x, rect_y, rect_cols, rect_rows), nobst=nobst, ntarg=ntarg,
                frame_hash=frame_hash, gc=gc, gr=gr)


def _read_sections(buf, h):
    """§12.7 step 3: obstacles and targets, and where the parts start."""
    need = 16 * h["nobst"] + 9 * h["ntarg"]
    if len(buf) - HEADER.size < need:
        raise SnapshotError("truncated", "the obstacles and targets run past the frame")
    return decode._read_extras(buf, HEADER.size, h["nobst"], h["ntarg"])


# ---- tile hashes (§12.7) ------------------------------------------------------------------

def _murmur32(blocks, nbytes):
    """MurmurHash3_x86_32, seed 0, of 4-byte blocks already mixed."""
    h = 0
    for k in blocks:
        h ^= k
        h = (((h << 13) | (h >> 19)) * 5 + 0xE6546B64) & _M32
    return decode._murmur_final(h, nbytes & _M32)


def tile_hash(ids, qx, qy, heading, group):
    """The tile hash of one (super-)tile's boids, in Python alone."""
    mix_ = decode._murmur_mix

    def blocks():
        for i, x, y, h, g in zip(ids, qx, qy, heading, group):
            yield mix_(i)
            yield mix_(x | y << 16)
            yield mix_(h | g << 8)
    return _murmur32(blocks(), 12 * len(ids))


_RECORD = None if np is None else np.dtype(
    [("id", "<u4"), ("qx", "<u2"), ("qy", "<u2"), ("h", "u1"), ("g", "u1"), ("pad", "<u2")])


def _tile_hashes_np(f, parts, use_lib=True):
    """Every part's tile hash over the frame's numpy arrays: the 12-byte
    records built at once, each part's hashed by libmurmurhash when it is
    there, else mixed by numpy and chained here."""
    rec = np.zeros(len(f.ids), dtype=_RECORD)
    rec["id"], rec["qx"], rec["qy"], rec["h"], rec["g"] = f.ids, f.qx, f.qy, f.heading, f.group
    fn = decode.libmurmur() if use_lib else None
    if fn is not None:
        import ctypes
        out = ctypes.c_uint32()
        for p in parts:
            if p.count:
                fn(rec.ctypes.data + 12 * p.start, 12 * p.count, 0, ctypes.byref(out))
                p.hash = out.value
        return
    k = rec.view("<u4") * np.uint32(0xCC9E2D51)
    k = (k << np.uint32(15)) | (k >> np.uint32(17))
    k = (k * np.uint32(0x1B873593)).tolist()
    for p in parts:
        if p.count:
            p.hash = _murmur32(k[3 * p.start:3 * (p.start + p.count)], 12 * p.count)


# ---- the decoder ----------------------------------------------------------------------------

class _Head:
    """A part's fixed fields (§12.5)."""

    __slots__ = ("kind", "field", "gap1", "gap0", "count", "packed", "plain")


def _read_part_head(buf, at):
    """(_Head, position of its body) of the part at buf[at:]; the body's
    bytes are there."""
    end = len(buf)
    if at >= end:
        raise SnapshotError("truncated", "the frame ends before its last part")
    ph = _Head()
    byte = buf[at]
    at += 1
    ph.kind, ph.field, ph.gap1, ph.gap0, ph.count, ph.packed, ph.plain = \
        byte & 3, bool(byte & PART_FIELD), 0, 0, 0, 0, 0
    if byte & ~7 or ph.kind == 3 or (ph.kind == PART_EMPTY and byte):
        raise SnapshotError("bad_value", f"part kind 0x{byte:02x}")
    if ph.kind == PART_EMPTY:
        return ph, at
    if ph.kind == PART_DELTA:
        if at >= end:
            raise SnapshotError("truncated", "a delta part ends before its gaps")
        ph.gap1, ph.gap0 = buf[at] & 15, buf[at] >> 4
        at += 1
        if ph.gap1 == 0:
            raise SnapshotError("bad_value", "a delta part with gap1 0")
    for name in ("count", "packed") + (("plain",) if ph.kind == PART_KEY else ()):
        got = _varint(buf, at, end)
        if got is None:
            raise SnapshotError("truncated", f"a part's {name} runs past the frame")
        setattr(ph, name, got[0])
        at = got[1]
    if end - at < ph.packed:
        raise SnapshotError("truncated", "a part's body runs past the frame")
    if ph.plain > ph.packed * _MAX_RATIO:
        raise SnapshotError("bad_value", f"plain_len {ph.plain} exceeds 1032 x packed_len")
    return ph, at


def _pred_gaps(tick, tick1, tick0, gap1, gap0):
    """§12.5 step 4.3: the prediction's g1, g0 (tick distances when they can be)."""
    if tick > tick1 > tick0 and tick - tick1 <= 255 and tick1 - tick0 <= 255:
        return tick - tick1, tick1 - tick0
    return gap1, gap0


class _Delta:
    """What a delta part is decoded from: its bases, entered boids,
    leavers and the stayers' codes."""

    __slots__ = ("index", "b1", "b0", "g1", "g0", "eids", "eplanes", "left", "ks", "bits",
                 "section", "stay_at")


class V3Decoder:
    """Decodes the version 3 frames of one connection; keeps the bases its
    deltas name. `max_boids` bounds what a frame may hold (over_limit
    beyond it); `field_cells` is the welcome's stream.field.cells;
    `numpy`: None uses numpy when it is installed, False never, True
    always."""

    def __init__(self, max_boids=1 << 22, numpy=None, field_cells=4):
        if numpy and np is None:
            raise ImportError("numpy is not installed")
        self.max_boids = max_boids
        self.numpy = np is not None if numpy is None else bool(numpy)
        self.field_cells = field_cells
        self.held = []  # frames, newest last

    def forget(self, field_cells=None):
        """Forgets every frame held: a new stream starts (a welcome); a
        welcome's stream.field.cells may come with it."""
        self.held = []
        if field_cells is not None:
            self.field_cells = field_cells

    def has(self, seq):
        return any(f.seq == seq for f in self.held)

    def decode(self, buf):
        """Decodes one frame into a Frame; raises SnapshotError (§12.7)."""
        buf = bytes(buf)
        h = read_header(buf)
        obstacles, targets, at = _read_sections(buf, h)
        flags = h["flags"]
        frame = Frame(
            version=VERSION, kind="view", seq=h["seq"], tick=h["tick"],
            server_time_us=h["time_us"], width=h["width"], height=h["height"], epoch=None,
            flags=flags, paused=bool(flags & FLAG_PAUSED), wrap=bool(flags & FLAG_WRAP),
            fogged=bool(flags & FLAG_FOGGED), delayed=bool(flags & FLAG_DELAYED),
            shift=h["shift"], sample=h["sample"], room_boids=h["room_boids"], cols=h["cols"],
            rows=h["rows"], rect=h["rect"], frame_hash=h["frame_hash"], obstacles=obstacles,
            targets=targets, size=len(buf), field_cells=self.field_cells)
        _Walk(self, buf, h, frame).run(at)
        got = sum(p.hash for p in frame.parts) & _M32
        if got != h["frame_hash"]:
            raise SnapshotError("hash_mismatch",
                                f"tile hashes sum to {got:08x}, the frame says "
                                f"{h['frame_hash']:08x}")
        self.held = (self.held + [frame])[-HISTORY:]
        return frame

    def base(self, seq, h, tx, ty, by_seq=None):
        """(frame, part) of super-tile (tx, ty) in the held frame of seq at
        the same grid, shift and sample, or None (§12.7). by_seq: the held
        frames by seq, the newest of a seq, if the caller has them."""
        if by_seq is None:
            by_seq = {f.seq: f for f in self.held}
        f = by_seq.get(seq)
        if f is None or (f.shift, f.sample, f.cols, f.rows) != \
                (h["shift"], h["sample"], h["cols"], h["rows"]):
            return None
        gc, gr = grid_at(f.cols, f.shift), grid_at(f.rows, f.shift)
        rx, ry, rc, rr = f.rect
        cx, cy = (tx - rx) % gc, (ty - ry) % gr
        if cx >= rc or cy >= rr:
            return None
        return f, f.parts[cy * rc + cx]


class _Walk:
    """One frame's parts decoded in turn (§12.7 steps 4-5) into `frame`:
    its arrays, parts and tile hashes. The numpy decoder reads the keys'
    boids and the deltas' stayers after the walk, for every part at once
    (_Keys, _Stayers); a failure of the walk at a part is raised after
    theirs, which are of the parts before it."""

    def __init__(self, dec, buf, h, frame):
        self.dec, self.buf, self.h, self.frame = dec, buf, h, frame
        self.cells = dec.field_cells
        self.np = dec.numpy
        self.ax, self.ay = decode.aspect_weights(h["width"], h["height"])
        self.parts, self.boids, self.n = [], [], 0
        self.keys, self.deltas, self.bulk = [], [], []  # numpy: read after the walk
        self.by_seq = {f.seq: f for f in dec.held}

    def run(self, at):
        h = self.h
        rx, ry, rc, rr = h["rect"]
        failure = None
        try:
            for k in range(rc * rr):
                tx, ty = (rx + k % rc) % h["gc"], (ry + k // rc) % h["gr"]
                at = self._part(at, tx, ty)
        except SnapshotError as e:
            failure = e
        for parts, stage in ((self.keys, _Keys), (self.deltas, _Stayers)):
            if parts:
                self.bulk.append(stage(self))
                self.bulk[-1].run()
        if failure is not None:
            raise failure
        if at != len(self.buf):
            raise SnapshotError("bad_length", f"{len(self.buf) - at} bytes after the last part")
        self._assemble()

    def _part(self, at, tx, ty):
        ph, at = _read_part_head(self.buf, at)
        part = Part(tx, ty, PART_KINDS[ph.kind], ph.gap1, ph.gap0, self.n, ph.count)
        if ph.kind == PART_EMPTY:
            self._add(part, None)
            return at
        if ph.count > self.dec.max_boids - self.n:
            raise SnapshotError("over_limit", f"more than {self.dec.max_boids} boids")
        bases = self._bases(ph, tx, ty)
        body = self.buf[at:at + ph.packed]
        if ph.kind == PART_KEY:
            if ph.plain > plain_bound(ph.count, self.cells):
                raise SnapshotError("bad_value", f"plain_len {ph.plain} for {ph.count} boids")
            plain = decode.inflate_body(body, ph.plain)
            self._add(part, self._key(plain, ph, part))
        else:
            self._add(part, self._delta(body, ph, part, bases))
        return at + ph.packed

    def _add(self, part, boids):
        self.parts.append(part)
        self.boids.append(boids)
        self.n += part.count

    def _bases(self, ph, tx, ty):
        """A delta's (base 1, base 0 or None, g1, g0); no_base unless held."""
        if ph.kind != PART_DELTA:
            return None
        seq1 = (self.h["seq"] - ph.gap1) & _M32
        b1 = self.dec.base(seq1, self.h, tx, ty, self.by_seq)
        b0 = self.dec.base((seq1 - ph.gap0) & _M32, self.h, tx, ty, self.by_seq) \
            if ph.gap0 else None
        if b1 is None or (ph.gap0 and b0 is None):
            raise SnapshotError("no_base", f"super-tile {tx},{ty} of frame {seq1} is not held")
        g1, g0 = _pred_gaps(self.h["tick"], b1[0].tick, b0[0].tick if b0 else 0, ph.gap1,
                            ph.gap0)
        return b1, b0, g1, g0 if ph.gap0 else 0

    def _field(self, body, part):
        count, vx, vy = body.field(self.cells)
        c = self.cells
        if self.np:
            shape = (c, c)
            count = np.array(count, dtype=np.uint32).reshape(shape)
            vx = np.array(vx, dtype=np.int8).reshape(shape)
            vy = np.array(vy, dtype=np.int8).reshape(shape)
        h = self.h
        part.field = Field(c, count, vx, vy, super_tile_bounds(
            h["width"], h["height"], h["cols"], h["rows"], h["shift"], part.tx, part.ty))

    # ---- a key part --------------------------------------------------------------------

    def _key(self, plain, ph, part):
        """A key's boids (ids, qx, qy, heading, group) from its inflated
        body; with numpy None: they are read after the walk (_Keys)."""
        if self.np:
            self.keys.append((len(self.parts), plain, ph.count, ph.field))
            return None
        n = ph.count
        body = _Body(plain)
        ids = array("I", body.ids(n))
        boids = (ids,) + _planes(plain, body.take(6 * n), n)
        if ph.field:
            self._field(body, part)
        if body.at != len(plain):
            raise _bad_body(f"{len(plain) - body.at} bytes after a key's boids")
        return boids

    # ---- a delta part ------------------------------------------------------------------

    def _delta(self, data, ph, part, bases):
        """A delta's boids (or, with numpy, None: its stayers are read after
        the walk). The entered boids, L and the field are bytes; the leavers,
        the parameters and the stayers' codes bits (§12.5)."""
        (f1, p1), b0, g1, g0 = bases
        d = _Delta()
        d.index, d.b1, d.b0, d.g1, d.g0 = len(self.parts), (f1, p1), b0, g1, g0
        body = _Body(data)
        e = body.varint()
        if e > ph.count:
            raise _bad_body(f"{e} boids entered a part of {ph.count}")
        d.eids = body.ids(e)
        at = body.take(6 * e)
        if self.np:  # read with every part's (_Stayers._merge())
            d.eplanes = data[at:at + 6 * e]
        else:
            d.eplanes = _planes(data, at, e)
        nleft = body.varint()
        if ph.field:
            self._field(body, part)
        if nleft > p1.count:
            raise _bad_body(f"{nleft} leavers of a base of {p1.count}")
        d.section = data[body.at:]
        bits = _Bits(d.section)
        d.left = _leavers(bits, nleft, p1.count)
        d.ks = [[bits.get(4) for _ in range(2)] for _ in range(3)]  # x, y, h by context
        if p1.count - nleft + e != ph.count:
            raise _bad_body(f"{p1.count - nleft} stayers and {e} entered are not {ph.count}")
        d.bits, d.stay_at = bits, bits.pos
        if self.np:
            self.deltas.append(d)
            return None
        return _delta_py(d, self.ax, self.ay)

    # ---- the frame's arrays ------------------------------------------------------------

    def _assemble(self):
        f, n = self.frame, self.n
        if self.np:
            f.ids = np.empty(n, dtype=np.uint32)
            f.qx, f.qy = np.empty(n, dtype=np.uint16), np.empty(n, dtype=np.uint16)
            f.heading, f.group = np.empty(n, dtype=np.uint8), np.empty(n, dtype=np.uint8)
        else:
            f.ids, f.qx, f.qy = array("I"), array("H"), array("H")
            f.heading, f.group = array("B"), array("B")
        out = (f.ids, f.qx, f.qy, f.heading, f.group)
        for part, boids in zip(self.parts, self.boids):
            if part.count and boids is not None:
                for dst, src in zip(out, boids):
                    dst.extend(src)
        for stage in self.bulk:
            stage.scatter(out)
        f.parts = self.parts
        if self.np:
            _tile_hashes_np(f, self.parts)
        else:
            for p in self.parts:
                s = slice(p.start, p.start + p.count)
                p.hash = tile_hash(f.ids[s], f.qx[s], f.qy[s], f.heading[s], f.group[s]) \
                    if p.count else 0


def _planes(data, at, n):
    """Six planes of n boids at data[at:] (§12.5): qx, qy, heading, group."""
    p = data[at:at + 6 * n]
    return (array("H", (p[i] | p[2 * n + i] << 8 for i in range(n))),
            array("H", (p[n + i] | p[3 * n + i] << 8 for i in range(n))),
            array("B", p[4 * n:5 * n]), array("B", p[5 * n:6 * n]))


def _ids_np(cat, start, lens, counts):
    """The ids of several key bodies end to end in `cat` (body j at
    start[j], lens[j] bytes, counts[j] ids as varint differences, §12.5),
    read at once: all their ids (uint32) and where each body's planes start."""
    term = np.flatnonzero(cat < 0x80)  # the last byte of every varint
    first = np.searchsorted(term, start)
    heads = np.cumsum(counts) - counts  # each body's first id among them all
    has = counts > 0
    last = first + counts - 1
    if has.any() and (len(term) == 0 or (has & ((last >= len(term)) | (
            term[np.minimum(last, len(term) - 1)] >= start + lens))).any()):
        raise _bad_body("the ids run past the body")
    ends = term[_ranges(first, counts)]
    begins = np.empty(len(ends), dtype=np.int64)
    begins[1:] = ends[:-1] + 1
    begins[heads[has]] = start[has]
    size = ends - begins + 1
    if len(size) and size.max() > 5:
        raise _bad_body("an id's varint is longer than 5 bytes")
    at = _ranges(begins, size)
    shift = (7 * (at - np.repeat(begins, size))).astype(np.uint64)
    steps = np.add.reduceat((cat[at] & 0x7F).astype(np.uint64) << shift, np.cumsum(size) - size) \
        if len(at) else np.empty(0, dtype=np.uint64)
    if len(steps) and (steps.min() < 1 or steps.max() > _M32):
        raise _bad_body("ids not ascending")
    total = np.concatenate(([0], np.cumsum(steps, dtype=np.uint64)))
    ids = total[1:] - np.repeat(total[heads], counts)
    if len(ids) and ids.max() > _M32:
        raise _bad_body("ids past 2^32 - 1")
    planes = np.where(has, ends[np.maximum(heads + counts - 1, 0)] + 1 if len(ends) else 0,
                      start)
    return ids.astype(np.uint32), planes


def _plane_values(cat, at, counts, part):
    """The qx, qy, heading, group of boids whose six planes (§12.5) start
    at[part] in cat, counts[part] boids each: one entry per boid, part by part."""
    n = counts[part]
    i = at[part] + np.arange(len(part)) - (np.cumsum(counts) - counts)[part]
    qx = cat[i].astype(np.uint16) | cat[i + 2 * n].astype(np.uint16) << 8
    qy = cat[i + n].astype(np.uint16) | cat[i + 3 * n].astype(np.uint16) << 8
    return qx, qy, cat[i + 4 * n], cat[i + 5 * n]


class _Keys:
    """Every key part's boids of a frame at once, with numpy: the inflated
    bodies end to end, their ids read together, then their planes; a
    field, and that nothing follows, part by part."""

    def __init__(self, walk):
        self.walk = walk

    def run(self):
        walk = self.walk
        lens = np.array([len(k[1]) for k in walk.keys], dtype=np.int64)
        counts = np.array([k[2] for k in walk.keys], dtype=np.int64)
        start = np.cumsum(lens) - lens
        cat = np.frombuffer(b"".join(k[1] for k in walk.keys), dtype=np.uint8)
        ids, planes = _ids_np(cat, start, lens, counts)
        after = planes + 6 * counts - start
        if (after > lens).any():
            raise _bad_body("a key's planes run past its body")
        for (index, plain, _, field), at in zip(walk.keys, after.tolist()):
            body = _Body(plain, at)
            if field:
                walk._field(body, walk.parts[index])
            if body.at != len(plain):
                raise _bad_body(f"{len(plain) - body.at} bytes after a key's boids")
        part = np.repeat(np.arange(len(counts)), counts)
        self.values = (ids,) + _plane_values(cat, planes, counts, part)
        slots = np.array([walk.parts[k[0]].start for k in walk.keys], dtype=np.int64)
        self.at = _ranges(slots, counts)

    def scatter(self, out):
        """Puts the keys' boids into the frame's arrays."""
        for dst, src in zip(out, self.values):
            dst[self.at] = src


def _leavers(bits, nleft, nbase):
    """The indices in base 1 of the boids that left (§12.5 step 4.1), ascending."""
    left = []
    if nleft:
        k, at = bits.get(4), 0
        for _ in range(nleft):
            at += bits.rice(k)
            if at >= nbase:
                raise _bad_body(f"a leaver's index {at} past a base of {nbase}")
            left.append(at)
            at += 1
    return left


def _delta_py(d, ax, ay):
    """A delta's boids boid by boid: the stayers predicted and their codes
    read, merged with the entered ones by id."""
    f1, p1 = d.b1
    s1 = slice(p1.start, p1.start + p1.count)
    ids1, x1s, y1s, h1s, g1s = f1.ids[s1], f1.qx[s1], f1.qy[s1], f1.heading[s1], f1.group[s1]
    base0 = {}
    if d.b0:
        f0, p0 = d.b0
        for i in range(p0.start, p0.start + p0.count):
            base0[f0.ids[i]] = (f0.qx[i], f0.qy[i], f0.heading[i])
    bits, ks, g1, g0 = d.bits, d.ks, d.g1, d.g0
    left, stay = set(d.left), []
    for k in range(len(ids1)):
        if k in left:
            continue
        i, x1, y1, h1 = ids1[k], x1s[k], y1s[k], h1s[k]
        px, py, ctx = x1, y1, 0
        if i in base0:
            x0, y0, h0 = base0[i]
            ctx = 1 if 2 <= (h1 - h0) & 255 <= 254 else 0
            px = (x1 + (2 * _wrap16(x1 - x0) * g1 + g0) // (2 * g0)) & 0xFFFF
            py = (y1 + (2 * _wrap16(y1 - y0) * g1 + g0) // (2 * g0)) & 0xFFFF
        zx, zy, zh = bits.rice(ks[0][ctx]), bits.rice(ks[1][ctx]), bits.rice(ks[2][ctx])
        if zx > 0xFFFF or zy > 0xFFFF or zh > 0xFF:
            raise _bad_body("a code wider than its field")
        qx, qy = (px + _unzig(zx)) & 0xFFFF, (py + _unzig(zy)) & 0xFFFF
        dx, dy = _wrap16(qx - x1), _wrap16(qy - y1)
        ph = decode.heading_of(dx * ax, dy * ay) if dx or dy else h1
        stay.append((i, qx, qy, (ph + _unzig(zh)) & 255, g1s[k]))
    bits.check_end()
    entered = list(zip(d.eids, *d.eplanes))
    merged = sorted(stay + entered)
    if any(a[0] == b[0] for a, b in zip(merged, merged[1:])):
        raise _bad_body("an id both stayed and entered")
    return (array("I", [m[0] for m in merged]), array("H", [m[1] for m in merged]),
            array("H", [m[2] for m in merged]), array("B", [m[3] for m in merged]),
            array("B", [m[4] for m in merged]))


def _columns(bases):
    """The columns (ids, qx, qy, heading, group) the (frame, part) pairs
    lie in, one frame's or several frames' end to end, and where each
    part starts in them."""
    frames = []
    for f, _ in bases:
        if not any(f is g for g in frames):
            frames.append(f)
    names = ("ids", "qx", "qy", "heading", "group")
    if len(frames) == 1:
        cols, first = [getattr(frames[0], a) for a in names], [0]
    else:
        cols = [np.concatenate([getattr(f, a) for f in frames]) for a in names]
        first = np.cumsum([0] + [len(f.ids) for f in frames[:-1]]).tolist()
    at = [first[next(k for k, g in enumerate(frames) if g is f)] + p.start for f, p in bases]
    return cols, np.array(at, dtype=np.int64)


def _ranges(starts, counts):
    """The indices start .. start + count - 1 of every range, end to end."""
    total = int(counts.sum())
    before = np.cumsum(counts) - counts
    return np.arange(total, dtype=np.int64) + np.repeat(starts - before, counts)


class _Stayers:
    """Every delta part's stayers of a frame at once, with numpy: gathered
    from their bases, their codes located by a walk over the frame's bits
    (one table lookup per boid) and read at once, predicted, and placed by
    id among each part's entered boids in the frame's arrays."""

    def __init__(self, walk):
        self.walk, self.ds = walk, walk.deltas

    def run(self):
        self._gather()
        self._bits()
        if self._by_lanes():
            at = self._locate_by_lanes()
        else:
            at = self._locate_by_tables()
        zx, zy, zh = self._codes(at)
        self._predict(zx, zy, zh)
        self._merge()

    def _gather(self):
        """Base 1's stayers of every part (in part, then id order) with
        their copies in base 0; per stayer its part (0..len(ds)) and
        context."""
        ds = self.ds
        cols, at = _columns([d.b1 for d in ds])
        counts1 = np.array([d.b1[1].count for d in ds], dtype=np.int64)
        idx = _ranges(at, counts1)
        part = np.repeat(np.arange(len(ds)), counts1)
        first = np.cumsum(counts1) - counts1
        left = [int(first[j]) + i for j, d in enumerate(ds) for i in d.left]
        if left:
            keep = np.ones(len(idx), dtype=bool)
            keep[left] = False
            idx, part = idx[keep], part[keep]
        self.counts = counts1 - np.array([len(d.left) for d in ds], dtype=np.int64)
        self.part = part
        self.id1, self.x1, self.y1, self.h1, self.g1 = (c[idx] for c in cols)
        self.keys = self.id1.astype(np.uint64) | part.astype(np.uint64) << np.uint64(32)
        n = len(idx)
        self.two = np.zeros(n, dtype=bool)
        self.x0, self.y0 = np.zeros(n, dtype=np.uint16), np.zeros(n, dtype=np.uint16)
        self.h0 = np.zeros(n, dtype=np.uint8)
        with0 = [j for j, d in enumerate(ds) if d.b0]
        if with0 and n:
            cols0, at0 = _columns([ds[j].b0 for j in with0])
            counts0 = np.array([ds[j].b0[1].count for j in with0], dtype=np.int64)
            idx0 = _ranges(at0, counts0)
            k0 = cols0[0][idx0].astype(np.uint64) | \
                np.repeat(np.array(with0, dtype=np.uint64), counts0) << np.uint64(32)
            if len(k0):
                hit = np.searchsorted(k0, self.keys)
                hitc = np.minimum(hit, len(k0) - 1)
                self.two = (hit < len(k0)) & (k0[hitc] == self.keys)
                src = idx0[hitc[self.two]]
                self.x0[self.two], self.y0[self.two] = cols0[1][src], cols0[2][src]
                self.h0[self.two] = cols0[3][src]
        turn = (self.h1.astype(np.int32) - self.h0) & 255
        self.ctx = (self.two & (turn >= 2) & (turn <= 254)).astype(np.int64)

    def _bits(self):
        """The delta parts' bit sections end to end as one bit array (16
        zero bytes after them), where each starts (`offset`), each part's
        parameters (`ks`: part, field, context) and, per bit position, the
        next zero bit at or after it (`nz`)."""
        sections = [d.section for d in self.ds]
        self.sizes = np.array([8 * len(s) for s in sections], dtype=np.int64)
        cat = np.frombuffer(b"".join(sections) + bytes(16), dtype=np.uint8)
        self.cat = cat.astype(np.int64)
        bits = np.unpackbits(cat, bitorder="little")
        self.nb = len(bits)
        self.offset = np.cumsum(self.sizes) - self.sizes
        zero = bits == 0  # the last bit is one of them
        before = np.cumsum(zero, dtype=np.int32)
        before -= zero  # zero bits before each position
        self.nz = np.flatnonzero(zero).astype(np.int32)[before]
        self.ks = np.array([d.ks for d in self.ds], dtype=np.int64)
        self.k = [self.ks[:, f, :][self.part, self.ctx] for f in range(3)]  # per stayer
        self.first = (self.offset + [d.stay_at for d in self.ds]).astype(np.int64)

    def _by_lanes(self):
        """Whether stepping every part's walk side by side (one step per
        boid of the longest part) is cheaper than tables over every bit
        (a pass per bit and a lookup per boid): estimates in microseconds."""
        lanes = int(self.counts.max()) * (60 + 0.05 * len(self.ds))
        tables = 0.06 * self.nb + 0.12 * len(self.ctx)
        return lanes < tables

    def _locate_by_lanes(self):
        """Where each stayer's three codes start, stepping every part's walk
        together: step i reads the codes of each part's i-th stayer. Per
        bit position p, a code starting there ends at after[p] + k *
        plain[p] (plain: not an escape)."""
        pos = np.arange(self.nb, dtype=np.int32)
        plain = (self.nz - pos) < RICE_ESC
        after = np.where(plain, self.nz + np.int32(1), pos + np.int32(RICE_ESC + 16))
        plain = plain.astype(np.int32)
        order = np.argsort(-self.counts, kind="stable")  # the longest parts first
        counts = self.counts[order]
        starts = (np.cumsum(self.counts) - self.counts)[order]
        p = self.first[order].copy()
        at = [np.empty(len(self.ctx), dtype=np.int64) for _ in range(3)]
        cap, m = self.nb - 1, len(order)
        for i in range(int(counts[0]) if m else 0):
            while counts[m - 1] <= i:
                m -= 1
            sid = starts[:m] + i
            q = p[:m]
            for f in range(3):
                at[f][sid] = q
                q = np.minimum(after[q] + self.k[f][sid] * plain[q], cap)
            p[:m] = q
        ends = np.empty_like(p)
        ends[order] = p
        self._check_ends(ends)
        return at

    def _locate_by_tables(self):
        """Where each stayer's three codes start, from tables of, per bit
        position, where a code of field f and context c starting there ends
        (`nxt[f][c]`) and where a boid's three codes end: a walk, part by
        part, one lookup per boid. The tables run 64 entries past the bits,
        the last one a sink, so that a walk over bad bits stays in them."""
        nb, nz = self.nb, self.nz
        pos = np.arange(nb, dtype=np.int32)
        escape = (nz - pos) >= RICE_ESC
        escaped, after = pos + np.int32(RICE_ESC + 16), nz + np.int32(1)
        sink = np.full(64, nb + 63, dtype=np.int32)
        starts = np.zeros(nb, dtype=np.int32)  # the part each bit belongs to
        starts[self.offset[1:]] = 1
        owner = np.cumsum(starts, dtype=np.int32)
        ks = self.ks.astype(np.int32)
        nxt = [[None, None], [None, None], [None, None]]
        for f in range(3):
            for c in range(2):
                k = ks[:, f, c][owner]
                nxt[f][c] = np.concatenate((np.where(escape, escaped, after + k), sink))
        ends0, ends1 = (memoryview(nxt[2][c][nxt[1][c][nxt[0][c]]]) for c in range(2))
        ctx = self.ctx.tolist()
        starts, ends, at = [], [], 0
        push = starts.append
        for j in range(len(self.ds)):
            p = int(self.first[j])
            for c in ctx[at:at + int(self.counts[j])]:
                push(p)
                p = ends1[p] if c else ends0[p]
            at += int(self.counts[j])
            ends.append(p)
        self._check_ends(np.array(ends, dtype=np.int64))
        xs = np.array(starts, dtype=np.int64)
        one = self.ctx == 1
        ys = np.where(one, nxt[0][1][xs], nxt[0][0][xs]).astype(np.int64)
        return xs, ys, np.where(one, nxt[1][1][ys], nxt[1][0][ys]).astype(np.int64)

    def _check_ends(self, ends):
        """Each part's codes end in its section's last byte, zero bits after."""
        end = ends - self.offset
        last = self.cat[(self.offset + self.sizes) // 8 - 1]
        if ((end + 7) // 8 != self.sizes // 8).any() or \
                np.where(end % 8 > 0, last >> (end % 8), 0).any():
            raise _bad_body("the bit section does not end in its last byte with zero padding")

    def _code(self, at, f):
        """The values of the codes of field f starting at `at` (one per stayer)."""
        z = self.nz[at]
        ones = z - at
        escape = ones >= RICE_ESC
        raw = self._window(np.where(escape, at + RICE_ESC, z + 1))
        k = self.k[f]
        return np.where(escape, raw, ones << k | (raw & ((1 << k) - 1)))

    def _window(self, at):
        """16 bits from each bit position `at`."""
        b, o, c = at >> 3, at & 7, self.cat
        return ((c[b] | c[b + 1] << 8 | c[b + 2] << 16) >> o) & 0xFFFF

    def _codes(self, at):
        zx, zy, zh = (self._code(at[f], f) for f in range(3))
        if len(zx) and (zx.max() > 0xFFFF or zy.max() > 0xFFFF or zh.max() > 0xFF):
            raise _bad_body("a code wider than its field")
        return zx, zy, zh

    def _predict(self, zx, zy, zh):
        """§11.4 and §12.5: the stayers' qx, qy, heading."""
        g1 = np.array([d.g1 for d in self.ds], dtype=np.int64)[self.part]
        g0 = np.array([max(d.g0, 1) for d in self.ds], dtype=np.int64)[self.part]
        x1, y1 = self.x1.astype(np.int64), self.y1.astype(np.int64)
        px, py = x1.copy(), y1.copy()
        two = self.two
        for p, b1, b0 in ((px, x1, self.x0), (py, y1, self.y0)):
            d = decode._wrap16(b1[two] - b0[two].astype(np.int64))
            p[two] = (b1[two] + (2 * d * g1[two] + g0[two]) // (2 * g0[two])) & 0xFFFF
        self.qx = ((px + decode._unzig(zx)) & 0xFFFF).astype(np.uint16)
        self.qy = ((py + decode._unzig(zy)) & 0xFFFF).astype(np.uint16)
        mx = decode._wrap16(self.qx.astype(np.int32) - self.x1)
        my = decode._wrap16(self.qy.astype(np.int32) - self.y1)
        ax, ay = self.walk.ax, self.walk.ay
        ph = np.where((mx != 0) | (my != 0), decode.heading_of_np(mx * ax, my * ay), self.h1)
        self.heading = ((ph + decode._unzig(zh)) & 255).astype(np.uint8)

    def _merge(self):
        """Where each part's stayers and entered boids go in the frame (its
        slot, by id): `self.at` for the stayers, `self.e_at` for the
        entered, whose values are `self.entered`."""
        ds = self.ds
        ecounts = np.array([len(d.eids) for d in ds], dtype=np.int64)
        e_part = np.repeat(np.arange(len(ds)), ecounts)
        eids = np.array([i for d in ds for i in d.eids], dtype=np.uint32)
        ek = eids.astype(np.uint64) | e_part.astype(np.uint64) << np.uint64(32)
        if len(ek) and len(self.keys):
            hit = np.minimum(np.searchsorted(self.keys, ek), len(self.keys) - 1)
            if (self.keys[hit] == ek).any():
                raise _bad_body("an id both stayed and entered")
        s_first = np.concatenate(([0], np.cumsum(self.counts)))
        e_first = np.concatenate(([0], np.cumsum(ecounts)))
        slot = np.array([self.walk.parts[d.index].start for d in ds], dtype=np.int64)
        self.at = slot[self.part] + np.arange(len(self.keys)) - s_first[self.part] + \
            np.searchsorted(ek, self.keys) - e_first[self.part]
        self.e_at = slot[e_part] + np.arange(len(ek)) - e_first[e_part] + \
            np.searchsorted(self.keys, ek) - s_first[e_part]
        raw = np.frombuffer(b"".join(d.eplanes for d in ds), dtype=np.uint8)
        self.entered = (eids,) + _plane_values(raw, 6 * e_first[:-1], ecounts, e_part)

    def scatter(self, out):
        """Puts the stayers and the entered boids into the frame's arrays."""
        for dst, stay, entered in zip(out, (self.id1, self.qx, self.qy, self.heading, self.g1),
                                      self.entered):
            dst[self.at] = stay
            dst[self.e_at] = entered
