// Frame decoder for protocol version 3 (proto/PROTOCOL.md §12): view
// frames of parts, one per super-tile of the rect, each empty, a key (one
// raw deflate stream, inflate.js) or a delta on the same super-tile one or
// two frames earlier (Rice codes, §12.5). Boids carry their ids. No DOM;
// runs in the browser and in node.
//
// A FrameDecoderV3 keeps the last HISTORY_V3 frames it decoded, the bases
// later deltas name. decode() checks a frame in the order of §12.7 and
// either resolves to the whole frame or rejects with a SnapshotError whose
// `code` is the status name (truncated, bad_magic, bad_version, bad_type,
// bad_value, over_limit, no_base, bad_body, bad_length, hash_mismatch); a
// refused frame changes nothing the decoder holds. It never reads outside
// the message and never accepts more inflated bytes than a part announced.
// Boids live in typed arrays, one set per frame; nothing per boid is an
// object.

import {
  fail, asBytes, checkStart, dequantizeAll, readObstacles, readTargets, OBSTACLE_SIZE, TARGET_SIZE,
  FLAG_PAUSED, FLAG_WRAP,
} from './decoder.js';
import { headingOf, aspectWeights, murmurFinal } from './decoder_v2.js';
import { inflateBody } from './inflate.js';

export const PROTOCOL_VERSION_V3 = 3;
export const SUBPROTOCOL_V3 = 'flock.v3';
export const HEADER_SIZE_V3 = 56;
export const KIND_FRAME = 1;
export const FLAG_FOGGED = 0x04;
export const FLAG_DELAYED = 0x08;
export const HISTORY_V3 = 4;
export const MAX_SHIFT = 7;
export const MAX_SAMPLE = 16;
export const PART_EMPTY = 0;
export const PART_KEY = 1;
export const PART_DELTA = 2;
export const PART_FIELD = 0x04;
const KNOWN_FLAGS = FLAG_PAUSED | FLAG_WRAP | FLAG_FOGGED | FLAG_DELAYED;
const MAX_TARGETS = 256;
const MAX_RATIO = 1032; // deflate's largest expansion
const RICE_ESCAPE = 20; // this many one bits: the value follows in 16 bits
const PART_NAMES = ['empty', 'key', 'delta'];

/** §12.2: the sampling test's hash of a boid id (MurmurHash3's finalizer), a u32. */
export function mix(id) {
  let x = id >>> 0;
  x ^= x >>> 16;
  x = Math.imul(x, 0x85ebca6b);
  x ^= x >>> 13;
  x = Math.imul(x, 0xc2b2ae35);
  x ^= x >>> 16;
  return x >>> 0;
}

/** §12.2: whether the boid with id `id` is in sample `s` (0..16). */
export function inSample(id, s) {
  return s === 0 || (mix(id) & ((1 << s) - 1)) === 0;
}

/** Super-tiles across (down) a grid of n tiles at grid shift k: ceil(n / 2^k). */
export function gridAt(n, shift) {
  return (n + (1 << shift) - 1) >> shift;
}

/**
 * §12.7: the tile hash (a u32) of `count` boids from index `start` of the
 * arrays: MurmurHash3_x86_32, seed 0, over id, qx, qy, heading, group, 0, 0
 * per boid. 0 for none.
 */
export function tileHash(id, qx, qy, heading, group, start, count) {
  let h = 0;
  const end = start + count;
  for (let i = start; i < end; i++) {
    let k = Math.imul(id[i], 0xcc9e2d51);
    k = Math.imul((k << 15) | (k >>> 17), 0x1b873593);
    h ^= k; h = (h << 13) | (h >>> 19); h = (Math.imul(h, 5) + 0xe6546b64) | 0;
    k = Math.imul(qx[i] | (qy[i] << 16), 0xcc9e2d51);
    k = Math.imul((k << 15) | (k >>> 17), 0x1b873593);
    h ^= k; h = (h << 13) | (h >>> 19); h = (Math.imul(h, 5) + 0xe6546b64) | 0;
    k = Math.imul(heading[i] | (group[i] << 8), 0xcc9e2d51);
    k = Math.imul((k << 15) | (k >>> 17), 0x1b873593);
    h ^= k; h = (h << 13) | (h >>> 19); h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  }
  return murmurFinal(h, (count * 12) | 0) >>> 0;
}

// ---- header and sections (§12.7 steps 1-3) ------------------------------------

function headerFields(bytes, view) {
  return {
    version: 3,
    type: bytes[3],
    flags: bytes[4],
    shift: bytes[5],
    sample: bytes[6],
    tickBig: view.getBigUint64(8, true),
    serverTimeUsBig: view.getBigUint64(16, true),
    width: view.getFloat32(24, true),
    height: view.getFloat32(28, true),
    seq: view.getUint32(32, true),
    roomBoids: view.getUint32(36, true),
    cols: bytes[40],
    rows: bytes[41],
    rectCols: bytes[42],
    rectRows: bytes[43],
    rectX: bytes[44],
    rectY: bytes[45],
    obstacleCount: view.getUint16(46, true),
    targetCount: view.getUint16(48, true),
    frameHash: view.getUint32(52, true),
  };
}

/** Steps 1-2 of §12.7: the header's fields, checked. Throws SnapshotError. */
export function readHeaderV3(bytes, view) {
  checkStart(bytes, PROTOCOL_VERSION_V3, [KIND_FRAME], HEADER_SIZE_V3);
  const h = headerFields(bytes, view);
  const bad = (why) => fail('bad_value', why);
  if (h.flags & ~KNOWN_FLAGS) bad(`unknown flag bits 0x${h.flags.toString(16)}`);
  if (bytes[7] || bytes[50] || bytes[51]) bad('reserved bytes are not zero');
  if (!(Number.isFinite(h.width) && h.width > 0)) bad(`width ${h.width}`);
  if (!(Number.isFinite(h.height) && h.height > 0)) bad(`height ${h.height}`);
  if (h.shift > MAX_SHIFT || h.sample > MAX_SAMPLE) bad(`shift ${h.shift}, sample ${h.sample}`);
  if (!h.cols || !h.rows) bad(`a grid of ${h.cols} x ${h.rows} tiles`);
  const gc = gridAt(h.cols, h.shift);
  const gr = gridAt(h.rows, h.shift);
  if (!h.rectCols || !h.rectRows || h.rectCols > gc || h.rectRows > gr || h.rectX >= gc || h.rectY >= gr) {
    bad(`rect [${h.rectX}, ${h.rectY}, ${h.rectCols}, ${h.rectRows}] on a grid of ${gc} x ${gr} super-tiles`);
  }
  if (h.targetCount > MAX_TARGETS) bad(`target_count ${h.targetCount}`);
  return h;
}

function readSections(bytes, view, h) {
  let at = HEADER_SIZE_V3;
  const need = OBSTACLE_SIZE * h.obstacleCount + TARGET_SIZE * h.targetCount;
  if (bytes.length - at < need) fail('truncated', `${bytes.length} bytes, the obstacles and targets need ${at + need}`);
  const obstacles = readObstacles(view, h.obstacleCount, at);
  at += OBSTACLE_SIZE * h.obstacleCount;
  const targets = readTargets(bytes, view, h.targetCount, at);
  return { obstacles, targets, partsAt: at + TARGET_SIZE * h.targetCount };
}

// ---- parts: their heads (§12.5) ------------------------------------------------

// A varint at bytes[c.at..end) (at most 5 bytes, below 2^32), or -1 (nothing moved).
function varint(bytes, c, end) {
  let at = c.at;
  let v = 0;
  let scale = 1;
  for (let k = 0; k < 5 && at < end; k++, scale *= 128) {
    const b = bytes[at++];
    v += (b & 0x7f) * scale;
    if (!(b & 0x80)) {
      if (v > 0xffffffff) return -1;
      c.at = at;
      return v;
    }
  }
  return -1;
}

// One part's fixed fields at c.at (moved past them): {kind, field, gap1,
// gap0, count, packed, plain, bodyAt}, or {error: [code, message]}.
function readPartHead(bytes, c) {
  const len = bytes.length;
  if (c.at >= len) return { error: ['truncated', 'the frame ends before a part'] };
  const byte = bytes[c.at++];
  const kind = byte & 3;
  if ((byte & ~7) || kind === 3 || (kind === PART_EMPTY && byte)) return { error: ['bad_value', `part kind 0x${byte.toString(16)}`] };
  const head = { kind, field: (byte & PART_FIELD) !== 0, gap1: 0, gap0: 0, count: 0, packed: 0, plain: 0, bodyAt: c.at };
  if (kind === PART_EMPTY) return head;
  if (kind === PART_DELTA) {
    if (c.at >= len) return { error: ['truncated', 'the frame ends in a part\'s gaps'] };
    head.gap1 = bytes[c.at] & 15;
    head.gap0 = bytes[c.at++] >> 4;
    if (!head.gap1) return { error: ['bad_value', 'a delta part with gap1 0'] };
  }
  head.count = varint(bytes, c, len);
  head.packed = head.count < 0 ? -1 : varint(bytes, c, len);
  if (kind === PART_KEY && head.packed >= 0) head.plain = varint(bytes, c, len);
  if (head.count < 0 || head.packed < 0 || head.plain < 0) return { error: ['truncated', 'a part\'s counts run past the frame'] };
  if (len - c.at < head.packed) return { error: ['truncated', `a part's body of ${head.packed} bytes runs past the frame`] };
  if (head.plain > head.packed * MAX_RATIO) return { error: ['bad_value', `plain_len ${head.plain} exceeds 1032 x packed_len`] };
  head.bodyAt = c.at;
  c.at += head.packed;
  return head;
}

// Every part's head in turn, up to the first that is refused (its error
// is raised when the decoding reaches that part, §12.7's order).
function readPartHeads(bytes, at, parts) {
  const heads = [];
  const c = { at };
  for (let k = 0; k < parts; k++) {
    const head = readPartHead(bytes, c);
    heads.push(head);
    if (head.error) break;
  }
  return { heads, end: c.at };
}

/** §12.5: the largest inflated body a key of n boids with a field of `cells` across may have. */
export function plainBound(n, cells) {
  return 16 * n + 7 * cells * cells + 16;
}

// Inflates every key body of a frame at once (a browser inflates
// asynchronously): per head, the plain bytes or the SnapshotError, which
// the decoding raises in turn. Only bodies the earlier checks would let
// through are inflated.
async function inflateKeys(bytes, heads, cells, maxBoids) {
  let n = 0;
  const jobs = heads.map((h) => {
    if (h.error) return null;
    n += h.count;
    if (h.kind !== PART_KEY || n > maxBoids || h.plain > plainBound(h.count, cells)) return null;
    return inflateBody(bytes.subarray(h.bodyAt, h.bodyAt + h.packed), h.plain).then((plain) => ({ plain }), (error) => ({ error }));
  });
  return Promise.all(jobs);
}

// ---- bodies ------------------------------------------------------------------------

// A cursor over a body: p[at..end).
class Body {
  constructor(p, at, end) {
    this.p = p;
    this.at = at;
    this.end = end;
  }

  varint() {
    const v = varint(this.p, this, this.end);
    if (v < 0) fail('bad_body', 'a varint runs past its body');
    return v;
  }

  take(n) {
    if (this.end - this.at < n) fail('bad_body', `a section of ${n} bytes runs past its body`);
    const at = this.at;
    this.at += n;
    return at;
  }

  // n ids as varint differences from 0, ascending, into id[to..).
  ids(n, id, to) {
    let prev = 0;
    for (let k = 0; k < n; k++) {
      const step = this.varint();
      if (step === 0 || step > 0xffffffff - prev) fail('bad_body', 'ids not ascending from 1');
      prev += step;
      id[to + k] = prev;
    }
  }

  // A field of cells x cells into out.{count, vx, vy} from cell `at`.
  field(cells, out, at) {
    const { p } = this;
    for (let c = at, end = at + cells * cells; c < end; c++) {
      out.count[c] = this.varint();
      const v = this.take(2);
      out.vx[c] = (p[v] << 24) >> 24;
      out.vy[c] = (p[v + 1] << 24) >> 24;
    }
  }
}

// Six planes of n boids at p[at..) (qx lo, qy lo, qx hi, qy hi, heading,
// group) into the output arrays, boid k at index dst[k] (or to + k).
function placePlanes(p, at, n, o, to, dst) {
  for (let k = 0; k < n; k++) {
    const i = dst ? dst[k] : to + k;
    o.qx[i] = p[at + k] | (p[at + 2 * n + k] << 8);
    o.qy[i] = p[at + n + k] | (p[at + 3 * n + k] << 8);
    o.heading[i] = p[at + 4 * n + k];
    o.group[i] = p[at + 5 * n + k];
  }
}

// The bit section of a delta (§12.5 step 4): bits from the least
// significant of each byte on. Reading past the end sets `bad` and gives 0.
class Bits {
  constructor(p, at, end) {
    this.p = p;
    this.start = at;
    this.pos = at;
    this.end = end;
    this.acc = 0;
    this.fill = 0;
    this.bad = false;
  }

  // n bits, n at most 16.
  get(n) {
    while (this.fill < n) {
      if (this.pos >= this.end) {
        this.bad = true;
        return 0;
      }
      this.acc |= this.p[this.pos++] << this.fill;
      this.fill += 8;
    }
    const v = this.acc & ((1 << n) - 1);
    this.acc >>>= n;
    this.fill -= n;
    return v;
  }

  // A Rice code with parameter k: q one bits and a zero, then k bits; 20
  // one bits and the value in 16 bits instead. Most codes are read from
  // one window of 17 to 24 bits; the rest bit run by bit run (riceSlow).
  rice(k) {
    while (this.fill <= 16 && this.pos < this.end) {
      this.acc |= this.p[this.pos++] << this.fill;
      this.fill += 8;
    }
    const acc = this.acc;
    const ones = 31 - Math.clz32(~acc & (acc + 1)); // the one bits at the bottom
    const used = ones + 1 + k;
    if (ones >= RICE_ESCAPE || used > this.fill) return this.riceSlow(k);
    this.acc = acc >>> used;
    this.fill -= used;
    return (ones << k) | ((acc >>> (ones + 1)) & ((1 << k) - 1));
  }

  riceSlow(k) {
    let q = 0;
    for (;;) {
      if (this.fill === 0) {
        if (this.pos >= this.end) {
          this.bad = true;
          return 0;
        }
        this.acc = this.p[this.pos++];
        this.fill = 8;
      }
      // The one bits at the bottom of acc, up to its fill.
      const ones = Math.min(31 - Math.clz32(~this.acc & (this.acc + 1)), this.fill, RICE_ESCAPE - q);
      q += ones;
      this.acc >>>= ones;
      this.fill -= ones;
      if (q === RICE_ESCAPE) return this.get(16);
      if (this.fill > 0) break;
    }
    this.acc >>>= 1; // the zero
    this.fill -= 1;
    return k ? (q << k) | this.get(k) : q;
  }

  // Bits read so far.
  get read() {
    return (this.pos - this.start) * 8 - this.fill;
  }

  // Whether the bits end in the section's last byte, padded with zeros.
  endsClean() {
    const at = this.read;
    const len = this.end - this.start;
    return !this.bad && ((at + 7) >> 3) === len && (at % 8 === 0 || (this.p[this.end - 1] >> (at % 8)) === 0);
  }
}

// ---- the decoder -------------------------------------------------------------------

// Scratch arrays for one delta part, grown as needed.
class Scratch {
  constructor() {
    this.size = 0;
    this.grow(1024);
  }

  grow(n) {
    if (n <= this.size) return;
    const s = Math.max(n, this.size * 2);
    this.size = s;
    this.left = new Uint8Array(s);
    this.two = new Uint8Array(s);
    this.id1 = new Uint32Array(s);
    this.x1 = new Uint16Array(s);
    this.y1 = new Uint16Array(s);
    this.x0 = new Uint16Array(s);
    this.y0 = new Uint16Array(s);
    this.h1 = new Uint8Array(s);
    this.h0 = new Uint8Array(s);
    this.g1 = new Uint8Array(s);
    this.eid = new Uint32Array(s);
    this.stayAt = new Uint32Array(s);
    this.enterAt = new Uint32Array(s);
  }
}

// §12.5 step 4.3: the gaps the prediction scales by.
function predictionGaps(tick, tick1, tick0, gap1, gap0) {
  const ticks = tick > tick1 && tick1 > tick0 && tick - tick1 <= 255n && tick1 - tick0 <= 255n;
  return ticks ? [Number(tick - tick1), Number(tick1 - tick0)] : [gap1, gap0];
}

export class FrameDecoderV3 {
  /**
   * `cells`: the fields' cells across a super-tile (the welcome's
   * stream.field.cells, 1..8; 4 by default); `maxBoids` bounds the boids of
   * a frame (over_limit beyond it).
   */
  constructor({ cells = 4, maxBoids = 1 << 22 } = {}) {
    if (!(Number.isInteger(cells) && cells >= 1 && cells <= 8)) throw new RangeError(`field cells ${cells}, not 1..8`);
    this.cells = cells;
    this.maxBoids = maxBoids;
    this.held = []; // the frames kept as bases, newest last
    this.queue = Promise.resolve();
    this.scratch = new Scratch();
  }

  /** Forgets every frame held: a new stream starts (a welcome, another room). */
  forget() {
    this.held = [];
  }

  /**
   * Decodes one frame (ArrayBuffer or typed array); frames are decoded in
   * the order of the calls. Resolves to a new frame object: the header
   * (version 3, flags and paused, wrap, fogged, delayed; shift, sample,
   * tick and serverTimeUs as Numbers with tickBig, serverTimeUsBig; width,
   * height, seq, roomBoids, cols, rows, rect {x, y, cols, rows} of
   * super-tiles, frameHash, size), obstacles, targets, boidCount and per
   * boid the typed arrays id, qx, qy, heading (0..255), group, x, y (world
   * units), part by part; `parts`: per super-tile of the rect, in rect
   * order, {tx, ty, kind ('empty', 'key', 'delta'), gap1, gap0, start,
   * count, hash, field}, its boids at [start, start + count) of the
   * arrays, `field` null or {cells, count (Uint32Array), vx, vy (Int8Array:
   * steps of the welcome's field.vscale units/s)} row by row. The arrays
   * are kept as bases: treat them as read-only. Rejects with SnapshotError.
   */
  decode(buf) {
    const run = this.queue.then(() => this.decodeNow(buf));
    this.queue = run.catch(() => {});
    return run;
  }

  async decodeNow(buf) {
    const bytes = asBytes(buf);
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const h = readHeaderV3(bytes, view);
    const sections = readSections(bytes, view, h);
    const { heads, end } = readPartHeads(bytes, sections.partsAt, h.rectCols * h.rectRows);
    const plains = await inflateKeys(bytes, heads, this.cells, this.maxBoids);
    const frame = this.decodeParts(bytes, h, heads, plains);
    if (end !== bytes.length) fail('bad_length', `${bytes.length} bytes, the parts end at ${end}`);
    let hash = 0;
    for (const part of frame.parts) hash = (hash + part.hash) >>> 0;
    if (hash !== h.frameHash) fail('hash_mismatch', `the parts' hashes sum to ${hash}, the frame says ${h.frameHash}`);
    const out = this.finish(h, sections, frame, bytes.length);
    this.held.push(out);
    if (this.held.length > HISTORY_V3) this.held.shift();
    return out;
  }

  // Step 4: every part in turn into one set of arrays.
  decodeParts(bytes, h, heads, plains) {
    let total = 0;
    for (const head of heads) if (!head.error) total += head.count;
    const n = Math.min(total, this.maxBoids);
    const cells2 = this.cells * this.cells;
    const o = {
      id: new Uint32Array(n), qx: new Uint16Array(n), qy: new Uint16Array(n), heading: new Uint8Array(n), group: new Uint8Array(n),
      fields: { count: new Uint32Array(heads.length * cells2), vx: new Int8Array(heads.length * cells2), vy: new Int8Array(heads.length * cells2) },
    };
    const gc = gridAt(h.cols, h.shift);
    const gr = gridAt(h.rows, h.shift);
    const parts = [];
    let at = 0;
    heads.forEach((head, k) => {
      if (head.error) fail(...head.error);
      const tx = (h.rectX + (k % h.rectCols)) % gc;
      const ty = (h.rectY + Math.floor(k / h.rectCols)) % gr;
      const part = { tx, ty, kind: PART_NAMES[head.kind], gap1: head.gap1, gap0: head.gap0, start: at, count: head.count, hash: 0, field: null };
      parts.push(part);
      if (head.kind === PART_EMPTY) return;
      if (head.count > this.maxBoids - at) fail('over_limit', `more than ${this.maxBoids} boids`);
      this.decodePart(bytes, h, head, plains[k], part, o, k * cells2);
      part.hash = tileHash(o.id, o.qx, o.qy, o.heading, o.group, at, head.count);
      at += head.count;
    });
    return { o, parts, count: at };
  }

  decodePart(bytes, h, head, inflated, part, o, cellAt) {
    const bases = head.kind === PART_DELTA ? this.bases(h, head, part.tx, part.ty) : null;
    if (head.field) {
      const f = o.fields;
      const end = cellAt + this.cells * this.cells;
      part.field = { cells: this.cells, count: f.count.subarray(cellAt, end), vx: f.vx.subarray(cellAt, end), vy: f.vy.subarray(cellAt, end) };
    }
    if (bases) {
      this.unpackDelta(new Body(bytes, head.bodyAt, head.bodyAt + head.packed), h, head, bases, part, o, cellAt);
      return;
    }
    if (head.plain > plainBound(head.count, this.cells)) fail('bad_value', `key plain_len ${head.plain} for ${head.count} boids`);
    if (inflated.error) throw inflated.error;
    const b = new Body(inflated.plain, 0, inflated.plain.length);
    b.ids(head.count, o.id, part.start);
    placePlanes(b.p, b.take(6 * head.count), head.count, o, part.start, null);
    if (head.field) b.field(this.cells, o.fields, cellAt);
    if (b.at !== b.end) fail('bad_body', 'bytes left over in a key');
  }

  // The part at super-tile (tx, ty) of the held frame `seq`, at the same
  // shift, sample and grid as h, or null.
  basePart(seq, h, tx, ty) {
    let f = null;
    for (let k = this.held.length - 1; k >= 0 && !f; k--) if (this.held[k].seq === seq) f = this.held[k];
    if (!f || f.shift !== h.shift || f.sample !== h.sample || f.cols !== h.cols || f.rows !== h.rows) return null;
    const gc = gridAt(f.cols, f.shift);
    const gr = gridAt(f.rows, f.shift);
    const cx = (tx + gc - f.rect.x) % gc;
    const cy = (ty + gr - f.rect.y) % gr;
    if (cx >= f.rect.cols || cy >= f.rect.rows) return null;
    return { f, part: f.parts[cy * f.rect.cols + cx] };
  }

  // A delta's bases (no_base unless both are held) and its prediction gaps.
  bases(h, head, tx, ty) {
    const seq1 = (h.seq - head.gap1) >>> 0;
    const b1 = this.basePart(seq1, h, tx, ty);
    const b0 = head.gap0 ? this.basePart((seq1 - head.gap0) >>> 0, h, tx, ty) : null;
    if (!b1 || (head.gap0 && !b0)) fail('no_base', `the base of super-tile (${tx}, ${ty}) in frame ${seq1}${head.gap0 ? ` or ${seq1 - head.gap0}` : ''} is not held`);
    const [g1, g0] = predictionGaps(h.tickBig, b1.f.tickBig, b0 ? b0.f.tickBig : 0n, head.gap1, head.gap0);
    return { b1, b0, g1, g0: head.gap0 ? g0 : 0 };
  }

  // §12.5's delta body: new boids, L, the field, then the bit section.
  unpackDelta(b, h, head, bases, part, o, cellAt) {
    const s = this.scratch;
    const base1 = bases.b1.part;
    const nb = base1.count;
    const e = b.varint();
    if (e > head.count) fail('bad_body', `${e} new boids in a part of ${head.count}`);
    s.grow(Math.max(e, nb));
    b.ids(e, s.eid, 0);
    const planes = b.take(6 * e);
    const l = b.varint();
    if (head.field) b.field(this.cells, o.fields, cellAt);
    if (l > nb) fail('bad_body', `${l} leavers of ${nb}`);
    const r = new Bits(b.p, b.at, b.end);
    this.takeLeavers(r, l, nb);
    const k = [r.get(4), r.get(4), r.get(4), r.get(4), r.get(4), r.get(4)];
    const stay = nb - l;
    if (r.bad || stay + e !== head.count) fail('bad_body', `${stay} stayers and ${e} new boids in a part of ${head.count}`);
    this.gatherStayers(bases.b1, bases.b0);
    this.mergeIds(o.id, part.start, stay, e);
    placePlanes(b.p, planes, e, o, 0, s.enterAt);
    this.takeStayers(r, stay, k, bases, h, o);
    if (!r.endsClean()) fail('bad_body', 'a delta\'s bits do not end in its last byte, padded with zeros');
  }

  // The leavers' indices in base 1 (gaps, Rice coded) into scratch.left.
  takeLeavers(r, l, nb) {
    const { left } = this.scratch;
    left.fill(0, 0, nb);
    if (!l) return;
    const k = r.get(4);
    let at = 0;
    for (let j = 0; j < l && !r.bad; j++) {
      at += r.rice(k);
      if (at >= nb) fail('bad_body', `a leaver's index ${at} in a base of ${nb}`);
      left[at++] = 1;
    }
    if (r.bad) fail('bad_body', 'the leavers run past the body');
  }

  // Base 1's stayers, in id order, with base 0's copy of each where it
  // has one. (Arrays into locals: this loop and takeStayers are most of a
  // delta's time.)
  gatherStayers(b1, b0) {
    const {
      left, id1, x1, y1, h1, g1, two, x0, y0, h0,
    } = this.scratch;
    const { start, count } = b1.part;
    const { id: bid, qx: bx, qy: by, heading: bh, group: bg } = b1.f;
    let n = 0;
    for (let k = 0; k < count; k++) {
      if (left[k]) continue;
      const i = start + k;
      id1[n] = bid[i];
      x1[n] = bx[i];
      y1[n] = by[i];
      h1[n] = bh[i];
      g1[n] = bg[i];
      n++;
    }
    two.fill(0, 0, n);
    if (!b0) return;
    const { id: zid, qx: zx, qy: zy, heading: zh } = b0.f;
    const end0 = b0.part.start + b0.part.count;
    let j = b0.part.start;
    for (let k = 0; k < n; k++) {
      const id = id1[k];
      while (j < end0 && zid[j] < id) j++;
      if (j < end0 && zid[j] === id) {
        two[k] = 1;
        x0[k] = zx[j];
        y0[k] = zy[j];
        h0[k] = zh[j];
      }
    }
  }

  // The stayers' ids and the new boids' merged into id order at id[to..):
  // where each went into stayAt and enterAt. An id twice is a bad body.
  mergeIds(id, to, stay, e) {
    const { id1, eid, stayAt, enterAt } = this.scratch;
    let i = 0;
    let j = 0;
    for (let at = to, end = to + stay + e; at < end; at++) {
      const a = i < stay ? id1[i] : Infinity;
      const b = j < e ? eid[j] : Infinity;
      if (a === b) fail('bad_body', `id ${a} twice in a part`);
      if (a < b) {
        id[at] = a;
        stayAt[i++] = at;
      } else {
        id[at] = b;
        enterAt[j++] = at;
      }
    }
  }

  // §11.4's prediction and §12.5's codes, stayer by stayer.
  takeStayers(r, stay, k, bases, h, o) {
    const { x1, y1, h1, x0, y0, h0, two, g1: grp, stayAt } = this.scratch;
    const [ax, ay] = aspectWeights(h.width, h.height);
    const { g1, g0 } = bases;
    const even = g0 > 0 && g1 === g0;
    const { qx: oqx, qy: oqy, heading: oh, group: og } = o;
    for (let i = 0; i < stay; i++) {
      let gx = x1[i];
      let gy = y1[i];
      let ctx = 0;
      if (g0 && two[i]) {
        const turn = (h1[i] - h0[i]) & 255;
        ctx = turn >= 2 && turn <= 254 ? 1 : 0;
        const dx = (((gx - x0[i]) & 0xffff) ^ 0x8000) - 0x8000;
        const dy = (((gy - y0[i]) & 0xffff) ^ 0x8000) - 0x8000;
        if (even) {
          gx += dx;
          gy += dy;
        } else {
          gx += Math.floor((2 * dx * g1 + g0) / (2 * g0));
          gy += Math.floor((2 * dy * g1 + g0) / (2 * g0));
        }
      }
      const zx = r.rice(k[ctx]);
      const zy = r.rice(k[2 + ctx]);
      const zh = r.rice(k[4 + ctx]);
      if (r.bad || zx > 0xffff || zy > 0xffff || zh > 0xff) fail('bad_body', 'a stayer\'s code runs past the body or its range');
      const x = (gx + ((zx >>> 1) ^ -(zx & 1))) & 0xffff;
      const y = (gy + ((zy >>> 1) ^ -(zy & 1))) & 0xffff;
      const dx = (((x - x1[i]) & 0xffff) ^ 0x8000) - 0x8000;
      const dy = (((y - y1[i]) & 0xffff) ^ 0x8000) - 0x8000;
      const ph = dx || dy ? headingOf(dx * ax, dy * ay) : h1[i];
      const at = stayAt[i];
      oqx[at] = x;
      oqy[at] = y;
      oh[at] = ph + ((zh >>> 1) ^ -(zh & 1)); // a Uint8Array: modulo 256
      og[at] = grp[i];
    }
  }

  finish(h, sections, frame, size) {
    const { o, parts, count } = frame;
    return {
      ...h,
      tick: Number(h.tickBig),
      serverTimeUs: Number(h.serverTimeUsBig),
      paused: (h.flags & FLAG_PAUSED) !== 0,
      wrap: (h.flags & FLAG_WRAP) !== 0,
      fogged: (h.flags & FLAG_FOGGED) !== 0,
      delayed: (h.flags & FLAG_DELAYED) !== 0,
      rect: { x: h.rectX, y: h.rectY, cols: h.rectCols, rows: h.rectRows },
      size,
      obstacles: sections.obstacles,
      targets: sections.targets,
      boidCount: count,
      parts,
      id: o.id,
      qx: o.qx,
      qy: o.qy,
      heading: o.heading,
      group: o.group,
      ...dequantizeAll(o.qx, o.qy, h.width, h.height),
    };
  }
}
