// Test fixtures: a small version 3 frame writer (proto/PROTOCOL.md §12.5)
// for frames the vectors do not have: a header, key parts from boids,
// delta parts from their sections, a bit writer for Rice codes. Not an
// encoder: it predicts nothing, so its deltas keep every stayer where base
// 1 had it (codes 0).
import { deflateRawSync } from 'node:zlib';

import { tileHash } from '../../client/js/src/decode_v3.js';

export function varint(v) {
  const out = [];
  while (v >= 0x80) {
    out.push((v & 0x7f) | 0x80);
    v = Math.floor(v / 128);
  }
  out.push(v);
  return out;
}

/** Bits from the least significant of each byte on (§12.5 step 4). */
export class BitWriter {
  constructor() {
    this.bytes = [];
    this.acc = 0;
    this.fill = 0;
  }

  put(v, n) {
    for (let i = 0; i < n; i++) {
      this.acc |= ((v >> i) & 1) << this.fill;
      if (++this.fill === 8) {
        this.bytes.push(this.acc);
        this.acc = 0;
        this.fill = 0;
      }
    }
  }

  rice(v, k) {
    const q = v >> k;
    if (q >= 20) {
      this.put(0xfffff, 20);
      this.put(v, 16);
      return;
    }
    this.put((1 << q) - 1, q + 1);
    this.put(v, k);
  }

  end() {
    if (this.fill) this.put(0, 8 - this.fill);
    return this.bytes;
  }
}

/** The plain body of a key: ids, six planes, `field` (bytes) after. */
export function keyPlain(boids, field = []) {
  const ids = [];
  let prev = 0;
  for (const b of boids) {
    ids.push(...varint(b.id - prev));
    prev = b.id;
  }
  return [...ids, ...planes(boids), ...field];
}

// Six planes of boids: qx lo, qy lo, qx hi, qy hi, heading, group.
function planes(boids) {
  const plane = (f) => boids.map(f);
  return [...plane((b) => b.qx & 255), ...plane((b) => b.qy & 255), ...plane((b) => b.qx >> 8),
    ...plane((b) => b.qy >> 8), ...plane((b) => b.heading), ...plane((b) => b.group)];
}

/** A key part of `boids` ([{id, qx, qy, heading, group}] by id); `plain` and `plainLen` override. */
export function keyPart(boids, { plain = keyPlain(boids), plainLen = plain.length, count = boids.length, field = false } = {}) {
  const body = [...deflateRawSync(Buffer.from(plain))];
  return [1 | (field ? 4 : 0), ...varint(count), ...varint(body.length), ...varint(plainLen), ...body];
}

/** A delta part from its sections: new boids, leavers, the bit section's bytes. */
export function deltaPart({ gap1 = 1, gap0 = 0, count, entered = [], leavers = 0, bits }) {
  const body = [...varint(entered.length)];
  let prev = 0;
  for (const b of entered) {
    body.push(...varint(b.id - prev));
    prev = b.id;
  }
  body.push(...planes(entered));
  body.push(...varint(leavers), ...bits);
  return [2, gap1 | (gap0 << 4), ...varint(count), ...varint(body.length), ...body];
}

/** The bits of a delta whose stayers stay put: `leaverGaps` coded with kl, six parameters 0, a 0 bit per code. */
export function stayBits(leaverGaps, stayers, kl = 0) {
  const w = new BitWriter();
  if (leaverGaps.length) {
    w.put(kl, 4);
    for (const g of leaverGaps) w.rice(g, kl);
  }
  w.put(0, 24);
  for (let i = 0; i < 3 * stayers; i++) w.put(0, 1);
  return w.end();
}

/** The tile hash of boids as a part holds them. */
export function hashOf(boids) {
  return tileHash(Uint32Array.from(boids, (b) => b.id), Uint16Array.from(boids, (b) => b.qx), Uint16Array.from(boids, (b) => b.qy),
    Uint8Array.from(boids, (b) => b.heading), Uint8Array.from(boids, (b) => b.group), 0, boids.length);
}

/**
 * A frame: a 56-byte header (a 1000 x 1000 torus of cols x rows tiles, no
 * obstacles or targets) and `parts` (byte arrays); `hash` the frame hash.
 */
export function frame({ seq = 1, tick = seq, shift = 0, sample = 0, cols = 1, rows = 1, rect = [0, 0, 1, 1], parts, hash, flags = 2 }) {
  const h = new Uint8Array(56);
  const v = new DataView(h.buffer);
  h.set([0x46, 0x4b, 3, 1, flags, shift, sample]);
  v.setBigUint64(8, BigInt(tick), true);
  v.setBigUint64(16, BigInt(tick) * 50000n, true);
  v.setFloat32(24, 1000, true);
  v.setFloat32(28, 1000, true);
  v.setUint32(32, seq, true);
  h.set([cols, rows, rect[2], rect[3], rect[0], rect[1]], 40);
  v.setUint32(52, hash >>> 0, true);
  return Uint8Array.from([...h, ...parts.flat()]);
}
