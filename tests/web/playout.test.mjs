// The viewer's playout buffer: interpolation (wrap-aware, never across an
// epoch or boid-count change; by id in version 3) and server-time-based
// timing under jitter.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { decodeSnapshot } from '../../client/js/src/decoder.js';
import { FrameDecoderV3 } from '../../client/js/src/decode_v3.js';
import {
  Playout, interpolate, sameBoids, interpolateIds,
} from '../../client/web/js/playout.js';
import { encodeSnapshot } from './snapshot_fixture.mjs';
import * as v3 from './v3_fixture.mjs';

const out = () => ({ x: new Float32Array(8), y: new Float32Array(8), angle: new Float32Array(8) });

function snap(boids, opts = {}) {
  return decodeSnapshot(encodeSnapshot({ boids, ...opts }));
}

const near = (a, b, eps = 0.05) => Math.abs(a - b) <= eps;

test('interpolate should move a boid linearly between two snapshots', () => {
  const a = snap([{ group: 0, x: 100, y: 200, heading: 0 }]);
  const b = snap([{ group: 0, x: 200, y: 100, heading: 64 }]);
  const o = out();
  interpolate(a, b, 0.25, o);
  assert.ok(near(o.x[0], 125) && near(o.y[0], 175), `${o.x[0]}, ${o.y[0]}`);
  assert.ok(near(o.angle[0], (16 * Math.PI) / 128, 1e-6));
});

test('interpolate should go the short way round when a boid wraps on a torus', () => {
  const a = snap([{ group: 0, x: 1590, y: 995, heading: 250 }]);
  const b = snap([{ group: 0, x: 10, y: 5, heading: 6 }]);
  const o = out();
  interpolate(a, b, 0.25, o);
  assert.ok(near(o.x[0], 1595) && near(o.y[0], 997.5), `${o.x[0]}, ${o.y[0]}`);
  interpolate(a, b, 0.75, o);
  assert.ok(near(o.x[0], 5) && near(o.y[0], 2.5), `${o.x[0]}, ${o.y[0]}`);
  const turns = o.angle[0] / (2 * Math.PI);
  assert.ok(near(turns - Math.floor(turns), 3 / 256, 1e-6), 'heading turned the short way');
});

test('interpolate should cross the world in a contained world instead of wrapping', () => {
  const a = snap([{ group: 0, x: 1590, y: 500, heading: 0 }], { wrap: false });
  const b = snap([{ group: 0, x: 10, y: 500, heading: 0 }], { wrap: false });
  const o = out();
  interpolate(a, b, 0.5, o);
  assert.ok(near(o.x[0], 800), `${o.x[0]}`);
});

test('sameBoids should tell apart epochs, counts and worlds', () => {
  const one = [{ group: 0, x: 1, y: 1, heading: 0 }];
  const two = [...one, { group: 0, x: 2, y: 2, heading: 0 }];
  assert.ok(sameBoids(snap(one, { epoch: 4 }), snap(one, { epoch: 4 })));
  assert.ok(!sameBoids(snap(one, { epoch: 4 }), snap(one, { epoch: 5 })));
  assert.ok(!sameBoids(snap(one), snap(two)));
  assert.ok(!sameBoids(snap(one, { width: 1600 }), snap(one, { width: 2000 })));
});

// A stream of snapshots 50 ms apart in server time of one boid moving 10
// units per snapshot, arriving with up to `jitterMs` of random delay.
function feed(p, n, { jitterMs = 0, epochAt = -1, t0 = 1e6 } = {}) {
  let seed = 7;
  const rnd = () => ((seed = (seed * 16807) % 2147483647) / 2147483647);
  for (let k = 0; k < n; k++) {
    const epoch = epochAt >= 0 && k >= epochAt ? 2 : 1;
    const s = snap([{ group: 0, x: 100 + 10 * k, y: 500, heading: 0 }],
      { timeUs: (t0 + 50 * k) * 1000, tick: 3 * k, epoch });
    p.push(s, 20 + 50 * k + rnd() * jitterMs);
  }
}

test('playout should render about its delay behind the newest snapshot', () => {
  const p = new Playout({ delayMs: 100 });
  feed(p, 10);
  // The 10th snapshot (x = 190, server time t0 + 450) arrived at local 470.
  const r = p.sample(470);
  assert.ok(near(r.x[0], 170, 0.1), `x ${r.x[0]}`);
  assert.equal(r.held, false);
});

test('playout should advance evenly per frame although arrivals jitter', () => {
  const p = new Playout({ delayMs: 100 });
  let seed = 3;
  const rnd = () => ((seed = (seed * 16807) % 2147483647) / 2147483647);
  const xs = [];
  let k = 0;
  for (let now = 0; now < 4000; now += 1000 / 60) {
    // Deliver every snapshot whose (jittered) arrival time has come.
    while (20 + 50 * k + 40 * ((k * 7919) % 13) / 13 <= now) {
      p.push(snap([{ group: 0, x: 100 + 2 * k, y: 500, heading: 0 }], { timeUs: (1e6 + 50 * k) * 1000 }),
        20 + 50 * k + 40 * ((k * 7919) % 13) / 13);
      k++;
    }
    const r = p.sample(now + rnd() * 0.5);
    if (r && now > 1500) xs.push(r.x[0]);
  }
  const steps = xs.slice(1).map((x, i) => x - xs[i]);
  const expect = 2 * (1000 / 60) / 50; // units per frame at real time
  for (const s of steps) assert.ok(Math.abs(s - expect) < 0.25 * expect + 0.02, `step ${s}, want ${expect}`);
  assert.equal(p.holds, 0);
});

test('playout should never interpolate across an epoch change', () => {
  const p = new Playout({ delayMs: 100 });
  feed(p, 6, { epochAt: 3 });
  // Between snapshot 2 (x 120, epoch 1) and 3 (x 130, epoch 2): show 2 as it is.
  const r = p.sample(20 + 50 * 2 + 100 + 25);
  assert.equal(r.snap.epoch, 1);
  assert.equal(r.x[0], r.snap.x[0]);
  assert.ok(near(r.x[0], 120), `x ${r.x[0]}`);
  const later = p.sample(20 + 50 * 3 + 100 + 1);
  assert.equal(later.snap.epoch, 2);
});

test('playout should hold the newest snapshot when no newer one comes', () => {
  const p = new Playout({ delayMs: 100 });
  feed(p, 3);
  const r = p.sample(5000);
  assert.equal(r.held, true);
  assert.ok(near(r.x[0], 120));
});

test('playout render time should never go backwards', () => {
  const p = new Playout({ delayMs: 100 });
  feed(p, 20, { jitterMs: 45 });
  let last = -Infinity;
  for (let now = 0; now < 1200; now += 7) {
    const t = p.renderTime(now);
    assert.ok(t >= last);
    last = t;
  }
});

test('playout should start over when the server clock goes back (a restarted server)', () => {
  const p = new Playout({ delayMs: 100 });
  feed(p, 5);
  p.push(snap([{ group: 0, x: 7, y: 7, heading: 0 }], { timeUs: 5e8 }), 400);
  assert.equal(p.snaps.length, 1);
  assert.ok(near(p.sample(401).x[0], 7));
});

// ---- version 3: boids by id ---------------------------------------------------------

/** A decoded version 3 frame of `boids` [{id, qx, qy, heading, group}] (a 1000 x 1000 torus), at server time tick * 50 ms. */
async function frame3(dec, tick, boids) {
  return dec.decode(v3.frame({ seq: tick, tick, parts: [v3.keyPart(boids)], hash: v3.hashOf(boids) }));
}

const q = (units) => Math.round((units * 65536) / 1000); // a coordinate of the 1000-unit world, quantized

test('version 3: boids should be matched by id, drawn group by group, new ones where they are', async () => {
  const dec = new FrameDecoderV3();
  const a = await frame3(dec, 1, [
    { id: 1, qx: q(100), qy: q(100), heading: 0, group: 2 },
    { id: 5, qx: q(500), qy: q(500), heading: 64, group: 0 },
    { id: 9, qx: q(990), qy: q(10), heading: 0, group: 2 },
  ]);
  const b = await frame3(dec, 2, [
    { id: 5, qx: q(520), qy: q(500), heading: 64, group: 0 },
    { id: 7, qx: q(300), qy: q(300), heading: 0, group: 1 }, // came into view
    { id: 9, qx: q(10), qy: q(10), heading: 0, group: 2 }, // crossed the seam
  ]); // 1 left
  const p = new Playout({ delayMs: 0 });
  p.push(a, 0);
  p.push(b, 50);
  assert.deepEqual(Array.from(b.match), [1, -1, 2]);
  assert.deepEqual(b.runs, [{ group: 0, count: 1 }, { group: 1, count: 1 }, { group: 2, count: 1 }]);
  const o = { x: new Float32Array(3), y: new Float32Array(3), angle: new Float32Array(3), id: new Uint32Array(3) };
  interpolateIds(a, b, 0.5, o);
  assert.deepEqual(Array.from(o.id), [5, 7, 9], 'group 0, 1, 2');
  assert.ok(near(o.x[0], 510, 0.1) && near(o.x[1], 300, 0.1), `${o.x[0]}, ${o.x[1]}`);
  assert.ok(near(o.x[2], 0, 0.1) || near(o.x[2], 1000, 0.1), `the short way round the seam: ${o.x[2]}`);
});

test('version 3: the playout should draw the later frame\'s boids, moving from where the earlier had them', async () => {
  const dec = new FrameDecoderV3();
  const boid = (id, x) => ({ id, qx: q(x), qy: q(500), heading: 0, group: 0 });
  const a = await frame3(dec, 1, [boid(3, 100), boid(4, 800)]);
  const b = await frame3(dec, 2, [boid(3, 200)]);
  const p = new Playout({ delayMs: 0 });
  const ta = a.serverTimeUs / 1000;
  p.push(a, ta);
  p.push(b, ta + 50);
  const f = p.sample(ta + 25);
  assert.equal(f.shown, b);
  assert.equal(f.count, 1);
  assert.equal(f.id[0], 3);
  assert.ok(near(f.x[0], 150, 0.1), `half way: ${f.x[0]}`);
  const later = p.sample(ta + 100);
  assert.ok(later.shown === b && near(later.x[0], 200, 0.1) && later.held, 'past the newest: held there');
});

test('lateness should be how much later than the least-delayed arrival even the last second\'s least late snapshot came', () => {
  const p = new Playout();
  const s = (ms) => snap([{ group: 0, x: 1, y: 1, heading: 0 }], { timeUs: ms * 1000 });
  p.push(s(1000), 1010); // 10 ms on the way: the least
  p.push(s(1050), 1060);
  p.push(s(1100), 1310); // 210 ms: 200 late
  p.push(s(1150), 1360);
  p.push(s(1200), 1500); // 290 ms: 290 late
  assert.equal(p.lateness(1500, 250), 200, 'the last 250 ms: 200 and 290 ms late, a queue');
  assert.equal(p.lateness(1500), 0, 'the last second: some came at once, no queue');
  assert.equal(new Playout().lateness(0), 0);
});
