// Snapshot decoder for protocol version 2 (proto/PROTOCOL.md §11): key and
// predictive delta frames with a raw deflate body (inflate.js). No DOM;
// runs in the browser and in node.
//
// A FrameDecoderV2 holds the states of the last HISTORY frames it decoded,
// the bases later deltas name. decode() checks a frame in the order of
// §11.7 and either resolves to the whole snapshot or rejects with a
// SnapshotError whose `code` is the status name (truncated, bad_magic,
// bad_version, bad_type, bad_value, bad_length, over_limit, no_base,
// bad_body, hash_mismatch); a refused frame changes nothing the decoder
// holds. It never reads outside the message, and never accepts more
// inflated bytes than the header announced.

import {
  fail, asBytes, checkStart, readCommonHeader, headerSummary, dequantizeAll,
  readRuns, readObstacles, readTargets, RUN_SIZE, OBSTACLE_SIZE, TARGET_SIZE,
} from './decoder.js';
import { inflateBody } from './inflate.js';

export { inflateBody };

export const PROTOCOL_VERSION_V2 = 2;
export const SUBPROTOCOL_V2 = 'flock.v2';
export const HEADER_SIZE_V2 = 80;
export const KIND_KEY = 1;
export const KIND_DELTA = 2;
export const HISTORY = 4;

const MAX_RATIO = 1032; // deflate's largest expansion
const ESCAPE = 255;

// §11.4: T[t] = floor(atan(t / 256) * 32768 / pi + 0.5). No entry is near
// a rounding tie, so Math.atan gives the table every decoder uses.
export const OCTANT_TURNS = Uint16Array.from({ length: 257 },
  (_, t) => Math.floor((Math.atan(t / 256) * 32768) / Math.PI + 0.5));

/** §11.4: the heading (0..255) of the direction (x, y), integers below 2^23, not both 0. */
export function headingOf(x, y) {
  const a = Math.abs(x);
  const b = Math.abs(y);
  let turn;
  // The quotients are at most 256, their numerators below 2^32 and their
  // divisors below 2^23: a binary64 quotient never rounds across an
  // integer, and truncating it (| 0) is the floor.
  if (a >= b) turn = OCTANT_TURNS[((256 * b + (a >>> 1)) / a) | 0];
  else turn = 16384 - OCTANT_TURNS[((256 * a + (b >>> 1)) / b) | 0];
  if (x < 0) turn = 32768 - turn;
  if (y < 0) turn = 65536 - turn;
  return ((turn + 128) >> 8) & 255;
}

/** §11.4: the aspect weights [ax, ay] of a world, each at least 1. */
export function aspectWeights(width, height) {
  const m = Math.max(width, height);
  return [Math.max(1, Math.floor((256 * width) / m + 0.5)),
    Math.max(1, Math.floor((256 * height) / m + 0.5))];
}

/**
 * §11.6: the state hash of the boids as 16 hex digits: MurmurHash3_x86_32
 * of 8 bytes per boid (qx, qy LE, heading, group, 0, 0), seeds 0 (low
 * half) and 1 (high half), in two 32-bit lanes.
 */
export function stateHashV2(qx, qy, heading, group) {
  const n = qx.length;
  let lo = 0;
  let hi = 1;
  for (let i = 0; i < n; i++) {
    let w = Math.imul(qx[i] | (qy[i] << 16), 0xcc9e2d51);
    w = Math.imul((w << 15) | (w >>> 17), 0x1b873593);
    let v = Math.imul(heading[i] | (group[i] << 8), 0xcc9e2d51);
    v = Math.imul((v << 15) | (v >>> 17), 0x1b873593);
    lo ^= w; lo = (lo << 13) | (lo >>> 19); lo = (Math.imul(lo, 5) + 0xe6546b64) | 0;
    lo ^= v; lo = (lo << 13) | (lo >>> 19); lo = (Math.imul(lo, 5) + 0xe6546b64) | 0;
    hi ^= w; hi = (hi << 13) | (hi >>> 19); hi = (Math.imul(hi, 5) + 0xe6546b64) | 0;
    hi ^= v; hi = (hi << 13) | (hi >>> 19); hi = (Math.imul(hi, 5) + 0xe6546b64) | 0;
  }
  const hex = (h) => (murmurFinal(h, n * 8) >>> 0).toString(16).padStart(8, '0');
  return hex(hi) + hex(lo);
}

/** MurmurHash3_x86_32's finalizer of lane h over `len` bytes hashed (§11.6, §12.7). */
export function murmurFinal(h, len) {
  h ^= len;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

function hex64(view, off) {
  return view.getUint32(off + 4, true).toString(16).padStart(8, '0')
    + view.getUint32(off, true).toString(16).padStart(8, '0');
}

// §11.7 step 6: the sizes a frame's kind allows its body.
function checkBodySizes(h) {
  const n = h.boidCount;
  if (h.plainLen > h.packedLen * MAX_RATIO) fail('bad_value', `plain_len ${h.plainLen} exceeds 1032 x packed_len`);
  if (h.kind === KIND_KEY) {
    if (h.gap1 !== 0 || h.gap0 !== 0) fail('bad_value', 'a key frame names a base');
    if (h.plainLen !== 5 * n) fail('bad_value', `key frame plain_len ${h.plainLen}, not 5 x ${n}`);
  } else {
    if (h.gap1 === 0) fail('bad_value', 'a delta frame without a base');
    const extra = h.plainLen - 3 * n;
    if (extra < 0 || extra > 4 * n || extra % 2) fail('bad_value', `delta plain_len ${h.plainLen} for ${n} boids`);
  }
}

// Steps 1-6 of §11.7; returns the header fields.
function readHeader(bytes, view) {
  checkStart(bytes, PROTOCOL_VERSION_V2, [KIND_KEY, KIND_DELTA], HEADER_SIZE_V2);
  const reservedZero = !(bytes[5] || bytes[50] || bytes[51] || view.getUint32(60, true));
  const h = {
    ...readCommonHeader(bytes, view, reservedZero),
    version: 2,
    kind: bytes[3],
    seq: view.getUint32(44, true),
    gap1: bytes[48],
    gap0: bytes[49],
    packedLen: view.getUint32(52, true),
    plainLen: view.getUint32(56, true),
    simHash: hex64(view, 64),
    stateHash: hex64(view, 72),
  };
  checkBodySizes(h);
  return h;
}

// Step 9: runs into one group per boid, then obstacles and targets.
function readSections(bytes, view, h, off) {
  const group = new Uint8Array(h.boidCount);
  const runs = readRuns(bytes, view, h, off, group);
  off += RUN_SIZE * h.groupRunCount;
  const obstacles = readObstacles(view, h.obstacleCount, off);
  off += OBSTACLE_SIZE * h.obstacleCount;
  const targets = readTargets(bytes, view, h.targetCount, off);
  return { runs, group, obstacles, targets, bodyAt: off + TARGET_SIZE * h.targetCount };
}

/**
 * Parses and checks everything of a frame but its body (§11.7 steps 1-7
 * and 9): the header fields, runs, group per boid, obstacles, targets and
 * `body` (a view of the packed body). Throws SnapshotError.
 */
export function parseFrameV2(buf) {
  const bytes = asBytes(buf);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const h = readHeader(bytes, view);
  const sectionsEnd = HEADER_SIZE_V2 + RUN_SIZE * h.groupRunCount
    + OBSTACLE_SIZE * h.obstacleCount + TARGET_SIZE * h.targetCount;
  const size = sectionsEnd + h.packedLen; // < 2^33: exact in a double
  if (bytes.length < size) fail('truncated', `${bytes.length} bytes, the header needs ${size}`);
  if (bytes.length > size) fail('bad_length', `${bytes.length} bytes, the header needs ${size}`);
  const s = readSections(bytes, view, h, HEADER_SIZE_V2);
  return { ...h, ...s, size, body: bytes.subarray(sectionsEnd, size) };
}

// The bases of a delta and what §11.4 predicts from them.
function makePredictor(f, b1, b0) {
  const [ax, ay] = aspectWeights(f.width, f.height);
  return { x1: b1.qx, y1: b1.qy, h1: b1.heading, x0: b0 && b0.qx, y0: b0 && b0.qy,
    h0: b0 && b0.heading, g1: f.gap1, g0: b0 ? f.gap0 : 0, ax, ay };
}

// §11.4: per boid 1 if it turned 2 or more steps between the bases.
function contexts(p, n) {
  const ctx = new Uint8Array(n);
  let n0 = n;
  if (p.h0) {
    for (let i = 0; i < n; i++) {
      const turn = (p.h1[i] - p.h0[i]) & 255;
      if (turn >= 2 && turn <= 254) {
        ctx[i] = 1;
        n0--;
      }
    }
  }
  return { ctx, n0 };
}

// §11.4: the predicted coordinates of every boid, into px and py
// (Uint16Arrays: stored modulo 2^16).
function predictPositions(p, n, px, py) {
  if (!p.g0) {
    px.set(p.x1);
    py.set(p.y1);
    return;
  }
  const even = p.g1 === p.g0;
  for (let i = 0; i < n; i++) {
    const dx = (((p.x1[i] - p.x0[i]) & 0xffff) ^ 0x8000) - 0x8000;
    const dy = (((p.y1[i] - p.y0[i]) & 0xffff) ^ 0x8000) - 0x8000;
    if (even) {
      px[i] = p.x1[i] + dx;
      py[i] = p.y1[i] + dy;
    } else {
      px[i] = p.x1[i] + Math.floor((2 * dx * p.g1 + p.g0) / (2 * p.g0));
      py[i] = p.y1[i] + Math.floor((2 * dy * p.g1 + p.g0) / (2 * p.g0));
    }
  }
}

// An escaped position code: the next exception, which must need escaping.
function exception(exc) {
  if (exc.at + 2 > exc.end) fail('bad_body', 'more escapes than exceptions');
  const z = exc.plain[exc.at] | (exc.plain[exc.at + 1] << 8);
  exc.at += 2;
  if (z < ESCAPE) fail('bad_body', `an exception carries code ${z}, below 255`);
  return z;
}

// §11.5: residuals onto the prediction, boid by boid, into out. The
// bases' arrays are read into locals: this loop is most of a delta's time.
function unpackDelta(f, plain, p, out) {
  const n = f.boidCount;
  const { ctx, n0 } = contexts(p, n);
  const { qx, qy, heading } = out;
  predictPositions(p, n, qx, qy);
  const { x1, y1, h1, ax, ay } = p;
  const exc = { plain, at: 3 * n, end: plain.length };
  let k0 = 0;
  let k1 = n0;
  for (let i = 0; i < n; i++) {
    const k = ctx[i] ? k1++ : k0++;
    let zx = plain[k];
    let zy = plain[n + k];
    if (zx === ESCAPE) zx = exception(exc);
    if (zy === ESCAPE) zy = exception(exc);
    const x = (qx[i] + ((zx >>> 1) ^ -(zx & 1))) & 0xffff;
    const y = (qy[i] + ((zy >>> 1) ^ -(zy & 1))) & 0xffff;
    const dx = (((x - x1[i]) & 0xffff) ^ 0x8000) - 0x8000;
    const dy = (((y - y1[i]) & 0xffff) ^ 0x8000) - 0x8000;
    const ph = dx || dy ? headingOf(dx * ax, dy * ay) : h1[i];
    const zh = plain[2 * n + k];
    qx[i] = x;
    qy[i] = y;
    heading[i] = ph + ((zh >>> 1) ^ -(zh & 1)); // a Uint8Array: modulo 256
  }
  if (exc.at !== exc.end) fail('bad_body', 'more exceptions than escapes');
}

function unpackKey(n, plain, out) {
  for (let i = 0; i < n; i++) {
    out.qx[i] = plain[i] | (plain[2 * n + i] << 8);
    out.qy[i] = plain[n + i] | (plain[3 * n + i] << 8);
  }
  out.heading.set(plain.subarray(4 * n, 5 * n));
}

/** A stream's decoder: keeps the last HISTORY decoded states as bases. */
export class FrameDecoderV2 {
  /** `maxBoids` bounds what a frame may announce (over_limit beyond it). */
  constructor({ maxBoids = 1 << 22 } = {}) {
    this.maxBoids = maxBoids;
    this.held = []; // newest last
    this.queue = Promise.resolve();
  }

  /** Forgets every state: a new stream starts (a welcome, another room). */
  forget() {
    this.held = [];
  }

  /** True if a state of sequence number seq is held. */
  has(seq) {
    return this.held.some((s) => s.seq === seq);
  }

  findBase(f, seq) {
    for (let k = this.held.length - 1; k >= 0; k--) {
      const s = this.held[k];
      if (s.seq !== seq) continue;
      if (s.epoch !== f.epoch || s.boidCount !== f.boidCount) {
        fail('no_base', `base ${seq} is of epoch ${s.epoch} with ${s.boidCount} boids`);
      }
      return s;
    }
    return fail('no_base', `base ${seq} is not held`);
  }

  /**
   * Decodes one frame (ArrayBuffer or typed array); frames are decoded in
   * the order of the calls. Resolves to a new snapshot object: the fields
   * of decodeSnapshot() (header fields, tick and serverTimeUs as Numbers,
   * paused, wrap, runs, group, qx, qy, heading, x, y, obstacles, targets)
   * and kind, seq, gap1, gap0, base1, base0, packedLen, plainLen, simHash
   * and stateHash (16 hex digits). Its typed arrays are kept as bases:
   * treat them as read-only. Rejects with SnapshotError.
   */
  decode(buf) {
    const run = this.queue.then(() => this.decodeNow(buf));
    this.queue = run.catch(() => {});
    return run;
  }

  async decodeNow(buf) {
    const f = parseFrameV2(buf);
    const n = f.boidCount;
    if (n > this.maxBoids) fail('over_limit', `${n} boids, this decoder takes ${this.maxBoids}`);
    const base1 = f.kind === KIND_DELTA ? (f.seq - f.gap1) >>> 0 : null;
    const base0 = f.kind === KIND_DELTA && f.gap0 ? (base1 - f.gap0) >>> 0 : null;
    const b1 = base1 === null ? null : this.findBase(f, base1);
    const b0 = base0 === null ? null : this.findBase(f, base0);
    const plain = await inflateBody(f.body, f.plainLen);
    const out = { qx: new Uint16Array(n), qy: new Uint16Array(n), heading: new Uint8Array(n) };
    if (b1) unpackDelta(f, plain, makePredictor(f, b1, b0), out);
    else unpackKey(n, plain, out);
    const hash = stateHashV2(out.qx, out.qy, out.heading, f.group);
    if (hash !== f.stateHash) fail('hash_mismatch', `state hash ${hash}, the frame says ${f.stateHash}`);
    const snap = this.finish(f, out, base1, base0);
    this.held.push(snap);
    if (this.held.length > HISTORY) this.held.shift();
    return snap;
  }

  finish(f, out, base1, base0) {
    const { body, bodyAt, ...fields } = f;
    return {
      ...fields,
      type: f.kind,
      kind: f.kind === KIND_KEY ? 'key' : 'delta',
      base1,
      base0,
      ...headerSummary(f),
      ...out,
      ...dequantizeAll(out.qx, out.qy, f.width, f.height),
    };
  }
}
