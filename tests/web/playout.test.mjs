// The viewer's playout buffer: interpolation (wrap-aware, never across an
// epoch or boid-count change) and server-time-based timing under jitter.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { decodeSnapshot } from '../../client/js/src/decoder.js';
import { Playout, interpolate, sameBoids } from '../../client/web/js/playout.js';
import { encodeSnapshot } from './snapshot_fixture.mjs';

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
