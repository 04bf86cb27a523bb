#!/usr/bin/env node
// decode_v3_bench.mjs FLOCKD [--boids N] [--frames K] [--view-boids V] —
// how long the client library's version 3 decoder
// (client/js/src/decode_v3.js) takes per frame, in node.
//
// Starts FLOCKD (a room of N boids, 100,000 by default, 30 ticks and 20
// snapshots a second) on a free loopback port, records what a flock.v3
// connection gets: K frames of the whole room (no view: every tile at
// shift and sample 0, the first a key), then K frames of a view of about
// V boids (1,300; its frames, the view and a margin in whole tiles, hold
// 2,000 to 2,500) at a budget that keeps it exact (sample 0). Then decodes
// the recording in order PASSES times, keeping each frame's fastest time
// so that other work on the machine shows less, and prints the medians
// per kind (a key frame: every part a key; a delta frame: the rest), with
// what the library's Client adds to hand a frame out (a Snapshot:
// radians, velocities by id, the parts placed). The last line is JSON.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { performance } from 'node:perf_hooks';

import WebSocket from '../../client/js/node_modules/ws/index.js';
import { FrameDecoderV3 } from '../../client/js/src/decode_v3.js';
import { Snapshot } from '../../client/js/src/snapshot.js';

const PASSES = 5;

function option(name, fallback) {
  const at = process.argv.indexOf(name);
  return at > 0 ? Number(process.argv[at + 1]) : fallback;
}

function startFlockd(bin, boids) {
  const proc = spawn(bin, ['--port', '0', '--host', '127.0.0.1', '--boids', String(boids), '--capacity', String(boids),
    '--tick-hz', '30', '--snapshot-hz', '20'], { stdio: ['ignore', 'pipe', 'inherit'] });
  process.on('exit', () => proc.kill('SIGKILL'));
  return new Promise((resolve, reject) => {
    proc.on('exit', (code) => reject(new Error(`flockd exited with ${code}`)));
    createInterface({ input: proc.stdout }).on('line', (line) => {
      const m = line.match(/listening on http:\/\/[^:]+:(\d+)/);
      if (m) resolve({ proc, port: Number(m[1]) });
    });
  });
}

// K frames of the whole room, then K of a view of about `viewBoids` boids:
// every frame in order (the view's first deltas are on the whole room's
// frames), each labelled 'whole', 'view' or 'between'.
function record(port, k, viewBoids) {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/ws`, ['flock.v3'], { perMessageDeflate: false });
  const out = { welcome: null, frames: [], labels: [], ack: null };
  let whole = 0;
  let view = 0;
  return new Promise((resolve, reject) => {
    ws.on('error', reject);
    ws.on('message', (data, binary) => {
      if (!binary) {
        const m = JSON.parse(data.toString());
        if (m.type === 'welcome') out.welcome = m;
        if (m.type === 'ack' && m.id === 1) out.ack = m;
        return;
      }
      const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength).slice();
      out.frames.push(bytes);
      if (whole < k) {
        out.labels.push('whole');
        if (++whole === k) {
          const { width, height } = out.welcome.world;
          const area = (viewBoids / out.welcome.world.capacity) * width * height;
          const w = Math.sqrt((area * 16) / 9);
          const h = (w * 9) / 16;
          ws.send(JSON.stringify({ cmd: 'view', id: 1, x: width / 3, y: height / 3, w, h, px: Math.round(w), budget: 100000000 }));
        }
      } else if (out.ack && new DataView(bytes.buffer).getBigUint64(8, true) > BigInt(out.ack.tick)) {
        out.labels.push('view');
        if (++view === k) {
          ws.close();
          resolve(out);
        }
      } else {
        out.labels.push('between');
      }
    });
  });
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[s.length >> 1] : 0;
}

// Decodes the whole recording in order PASSES times: each frame's fastest.
async function time(frames, cells, vscale, tickHz) {
  const best = { decode: frames.map(() => Infinity), snapshot: frames.map(() => Infinity) };
  const kinds = [];
  const boids = [];
  for (let pass = 0; pass < PASSES; pass++) {
    const dec = new FrameDecoderV3({ cells });
    let prev = null;
    for (let k = 0; k < frames.length; k++) {
      const t0 = performance.now();
      const f = await dec.decode(frames[k]);
      const t1 = performance.now();
      prev = new Snapshot(f, prev, tickHz, { vscale });
      best.decode[k] = Math.min(best.decode[k], t1 - t0);
      best.snapshot[k] = Math.min(best.snapshot[k], performance.now() - t1);
      kinds[k] = f.parts.every((p) => p.kind !== 'delta') ? 'key' : 'delta';
      boids[k] = f.boidCount;
    }
  }
  return { best, kinds, boids };
}

// The medians of the frames labelled `label`, per kind.
function summary(rec, t, label) {
  const of = (k) => rec.labels[k] === label;
  const pick = (what, kind) => median(t.best[what].filter((_, k) => of(k) && t.kinds[k] === kind));
  const bytes = (kind) => median(rec.frames.filter((_, k) => of(k) && t.kinds[k] === kind).map((f) => f.length));
  const kinds = t.kinds.filter((_, k) => of(k));
  const out = { boids: median(t.boids.filter((_, k) => of(k))) };
  for (const kind of ['key', 'delta']) {
    const n = kinds.filter((x) => x === kind).length;
    if (n) out[kind] = { frames: n, bytes: bytes(kind), ms: pick('decode', kind), snapshot_ms: pick('snapshot', kind) };
  }
  return out;
}

function show(name, r) {
  for (const kind of ['key', 'delta']) {
    const x = r[kind];
    if (!x) continue;
    console.log(`${name}, ${r.boids} boids: ${kind} frames (${x.frames}, median ${x.bytes} bytes): median ${x.ms.toFixed(3)} ms `
      + `to decode; a Client's Snapshot of it ${x.snapshot_ms.toFixed(3)} ms more`);
  }
}

async function main() {
  const bin = process.argv[2];
  if (!bin || bin.startsWith('--')) {
    console.error('usage: decode_v3_bench.mjs FLOCKD [--boids N] [--frames K] [--view-boids V]');
    process.exit(2);
  }
  const boids = option('--boids', 100000);
  const k = option('--frames', 40);
  const { proc, port } = await startFlockd(bin, boids);
  // A view of about 1,300 boids: with the margin around it (§12.4) its frames hold 2,000 to 2,500.
  const rec = await record(port, k, option('--view-boids', 1300));
  proc.kill('SIGTERM');
  const { cells, vscale } = rec.welcome.stream.field;
  const tickHz = rec.welcome.tick_hz;
  const t = await time(rec.frames, cells, vscale, tickHz);
  const whole = summary(rec, t, 'whole');
  const view = summary(rec, t, 'view');
  console.log(`view ack: ${JSON.stringify(rec.ack)}`);
  show('whole room', whole);
  show('a view', view);
  console.log(JSON.stringify({ node: process.version, room_boids: boids, whole, view }));
  process.exit(0);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
