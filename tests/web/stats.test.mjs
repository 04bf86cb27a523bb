// The viewer's measurements: rates, skipped frames, polarization, /metrics
// parsing; and the reconnect backoff schedule.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { decodeSnapshot } from '../../client/web/js/decoder.js';
import {
  RateMeter, SkipCounter, polarization, parseTickMetrics, meanTickMs, Series,
} from '../../client/web/js/stats.js';
import { backoffDelay } from '../../client/web/js/connection.js';
import { encodeSnapshot } from './snapshot_fixture.mjs';

test('RateMeter should report events and bytes per second over its window', () => {
  const m = new RateMeter(2000);
  for (let t = 0; t <= 4000; t += 50) m.add(t, 1000);
  const r = m.read(4000);
  assert.ok(Math.abs(r.rate - 20) <= 0.6, `rate ${r.rate}`);
  assert.ok(Math.abs(r.bytesPerSec - 20000) <= 600, `bytes ${r.bytesPerSec}`);
  assert.equal(m.read(10000).rate, 0);
});

test('SkipCounter should count the frames missing from tick gaps', () => {
  const c = new SkipCounter();
  c.setRates(60, 20);
  for (const t of [0, 3, 6, 9]) c.add(t);
  assert.equal(c.skipped, 0);
  assert.equal(c.add(15), 1);
  assert.equal(c.add(27), 3);
  c.add(27); // paused: the tick stands still
  c.add(0); // reset: the tick goes back
  c.add(3);
  assert.equal(c.skipped, 4);
});

test('SkipCounter should accept uneven gaps when the rates do not divide', () => {
  const c = new SkipCounter();
  c.setRates(60, 25); // 2.4 ticks per snapshot: gaps of 2 and 3
  for (const t of [0, 2, 5, 7, 10, 12, 14, 17]) c.add(t);
  assert.equal(c.skipped, 0);
});

test('polarization should be 1 for aligned boids and 0 for opposed ones', () => {
  const b = (heading) => ({ group: 0, x: 1, y: 1, heading });
  assert.ok(Math.abs(polarization(decodeSnapshot(encodeSnapshot({ boids: [b(10), b(10), b(10)] }))) - 1) < 1e-12);
  assert.ok(polarization(decodeSnapshot(encodeSnapshot({ boids: [b(0), b(128), b(64), b(192)] }))) < 1e-12);
  assert.equal(polarization(decodeSnapshot(encodeSnapshot({ boids: [] }))), null);
});

test('parseTickMetrics should read the tick histogram sum and count', () => {
  const text = [
    '# TYPE flockd_tick_duration_seconds histogram',
    'flockd_tick_duration_seconds_bucket{le="0.001"} 10',
    'flockd_tick_duration_seconds_sum 0.0123',
    'flockd_tick_duration_seconds_count 62',
  ].join('\n');
  assert.deepEqual(parseTickMetrics(text), { sum: 0.0123, count: 62 });
  assert.equal(parseTickMetrics('flockd_clients 1\n'), null);
  const ms = meanTickMs({ sum: 1, count: 100 }, { sum: 1.03, count: 160 });
  assert.ok(Math.abs(ms - 0.5) < 1e-9);
  assert.equal(meanTickMs({ sum: 1, count: 100 }, { sum: 1, count: 100 }), null);
});

test('Series should keep the last samples and skip gaps for last', () => {
  const s = new Series(3);
  [1, 2, 3, 4, null].forEach((v) => s.push(v));
  assert.deepEqual(s.values, [3, 4, null]);
  assert.equal(s.last, 4);
});

test('backoffDelay should double from half a second up to eight seconds', () => {
  const mid = () => 0.5;
  assert.deepEqual([1, 2, 3, 4, 5, 6, 9].map((a) => backoffDelay(a, mid)), [500, 1000, 2000, 4000, 8000, 8000, 8000]);
  assert.equal(backoffDelay(1, () => 0), 400);
  assert.equal(backoffDelay(1, () => 1), 600);
});
