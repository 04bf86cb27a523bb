#!/usr/bin/env node
// decode_v2_bench.mjs FILE — how long the client library's version 2 decoder
// (client/js/src/decoder_v2.js) takes per frame, in node.
//
// FILE is a stream written by `snapbench --dump FILE`: each frame as a u32
// little-endian length and the frame, as a client that keeps up receives
// them. Every frame is decoded in order (hash checked); then the bodies
// alone are inflated again, to split the time between inflating (the
// library's way in node, node:zlib, with the check that the stream ends
// where the frame says) and the rest (parsing, prediction, hash, positions).
// Each is done PASSES times and each frame's fastest time kept, so that
// other work on the machine shows less. Also timed: what the library's
// Client adds to a decoded frame to hand it out (a Snapshot: headings in
// radians, velocities from the previous frame). Prints the medians per
// frame kind and, last, one JSON line.
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

import { FrameDecoderV2, parseFrameV2, inflateBody } from '../../client/js/src/decoder_v2.js';
import { Snapshot } from '../../client/js/src/snapshot.js';

const PASSES = 5;

function frames(file) {
  const buf = readFileSync(file);
  const out = [];
  for (let at = 0; at + 4 <= buf.length;) {
    const len = buf.readUInt32LE(at);
    out.push(new Uint8Array(buf.buffer, buf.byteOffset + at + 4, len));
    at += 4 + len;
  }
  return out;
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[s.length >> 1] : 0;
}

async function main() {
  if (process.argv.length !== 3) {
    console.error('usage: decode_v2_bench.mjs FILE   (from snapbench --dump FILE)');
    process.exit(2);
  }
  const all = frames(process.argv[2]);
  const best = { total: all.map(() => Infinity), inflate: all.map(() => Infinity), snapshot: all.map(() => Infinity) };
  const kinds = [];
  let boids = 0;
  for (let pass = 0; pass < PASSES; pass++) {
    const dec = new FrameDecoderV2();
    let prev = null;
    for (let k = 0; k < all.length; k++) {
      const t0 = performance.now();
      const snap = await dec.decode(all[k]);
      const t1 = performance.now();
      prev = new Snapshot(snap, prev, 60);
      best.total[k] = Math.min(best.total[k], t1 - t0);
      best.snapshot[k] = Math.min(best.snapshot[k], performance.now() - t1);
      kinds[k] = snap.kind;
      boids = snap.boidCount;
    }
    for (let k = 0; k < all.length; k++) {
      const p = parseFrameV2(all[k]);
      const t0 = performance.now();
      await inflateBody(p.body, p.plainLen);
      best.inflate[k] = Math.min(best.inflate[k], performance.now() - t0);
    }
  }
  const total = { key: [], delta: [] };
  const inflate = { key: [], delta: [] };
  const snapshot = { key: [], delta: [] };
  kinds.forEach((kind, k) => {
    total[kind].push(best.total[k]);
    inflate[kind].push(best.inflate[k]);
    snapshot[kind].push(best.snapshot[k]);
  });
  const result = { boids, frames: all.length, node: process.version };
  for (const kind of ['key', 'delta']) {
    const t = median(total[kind]);
    const i = median(inflate[kind]);
    const c = median(snapshot[kind]);
    console.log(`${kind}: ${total[kind].length} frames, median ${t.toFixed(3)} ms per frame `
      + `(inflate ${i.toFixed(3)} ms, the rest ${(t - i).toFixed(3)} ms); a Client's Snapshot of it ${c.toFixed(3)} ms more`);
    result[`${kind}_ms`] = Number(t.toFixed(4));
    result[`${kind}_inflate_ms`] = Number(i.toFixed(4));
    result[`${kind}_snapshot_ms`] = Number(c.toFixed(4));
  }
  console.log(JSON.stringify(result));
}

main();
