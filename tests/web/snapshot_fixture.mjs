// Test fixtures: a small snapshot encoder (proto/PROTOCOL.md §4) for
// building synthetic snapshots of any size, and the vector file loader.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const VECTORS = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'proto', 'vectors');

export function readVector(name) {
  return readFileSync(join(VECTORS, name));
}

export function readVectorJson(name) {
  return JSON.parse(readFileSync(join(VECTORS, name), 'utf8'));
}

export function hexToBytes(hex) {
  return Uint8Array.from(Buffer.from(hex, 'hex'));
}

/**
 * Encodes a snapshot. `boids` is [{group, x, y, heading}] already sorted by
 * group, with positions in world units and heading quantized (0..255).
 */
export function encodeSnapshot({
  tick = 0, timeUs = 0, width = 1600, height = 1000, epoch = 1,
  paused = false, wrap = true, boids = [], obstacles = [], targets = [],
}) {
  const runs = [];
  for (const b of boids) {
    const last = runs[runs.length - 1];
    if (last && last.group === b.group) last.count++;
    else runs.push({ group: b.group, count: 1 });
  }
  const size = 44 + 5 * runs.length + 5 * boids.length + 16 * obstacles.length + 9 * targets.length;
  const buf = new ArrayBuffer(size);
  const v = new DataView(buf);
  v.setUint8(0, 0x46);
  v.setUint8(1, 0x4b);
  v.setUint8(2, 1);
  v.setUint8(3, 1);
  v.setUint8(4, (paused ? 1 : 0) | (wrap ? 2 : 0));
  v.setUint16(6, runs.length, true);
  v.setBigUint64(8, BigInt(tick), true);
  v.setBigUint64(16, BigInt(timeUs), true);
  v.setFloat32(24, width, true);
  v.setFloat32(28, height, true);
  v.setUint32(32, epoch, true);
  v.setUint32(36, boids.length, true);
  v.setUint16(40, obstacles.length, true);
  v.setUint16(42, targets.length, true);
  let off = 44;
  for (const r of runs) {
    v.setUint8(off, r.group);
    v.setUint32(off + 1, r.count, true);
    off += 5;
  }
  const quant = (val, s) => Math.min(65535, Math.max(0, Math.floor((val * 65536) / s)));
  for (const b of boids) {
    v.setUint16(off, quant(b.x, width), true);
    v.setUint16(off + 2, quant(b.y, height), true);
    v.setUint8(off + 4, b.heading & 255);
    off += 5;
  }
  for (const o of obstacles) {
    v.setUint32(off, o.id, true);
    v.setFloat32(off + 4, o.x, true);
    v.setFloat32(off + 8, o.y, true);
    v.setFloat32(off + 12, o.r, true);
    off += 16;
  }
  for (const t of targets) {
    v.setUint8(off, t.group);
    v.setFloat32(off + 1, t.x, true);
    v.setFloat32(off + 5, t.y, true);
    off += 9;
  }
  return buf;
}

/** n boids spread over the world by a fixed pseudo-random sequence. */
export function randomBoids(n, width = 1600, height = 1000, groups = 1, seed = 1) {
  let s = seed >>> 0;
  const rnd = () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 4294967296;
  };
  const out = [];
  for (let i = 0; i < n; i++) {
    out.push({ group: Math.floor((i * groups) / n), x: rnd() * width, y: rnd() * height, heading: Math.floor(rnd() * 256) });
  }
  return out;
}
