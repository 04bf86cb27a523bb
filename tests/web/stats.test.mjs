// The viewer's measurements: rates, skipped frames, series; and the
// reconnect backoff schedule.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
  RateMeter, SkipCounter, Series,
} from '../../client/web/js/stats.js';
import { backoffDelay } from '../../client/js/src/connection.js';

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

test('SkipCounter should count gaps in the snapshots\' numbers, not a shedding room\'s ticks', () => {
  const c = new SkipCounter();
  c.setRates(30, 20);
  // A room that sheds load sends every other snapshot's worth of ticks
  // apart, numbered one by one: nothing was skipped.
  [[0, 1], [3, 2], [6, 3], [9, 4]].forEach(([t, seq]) => c.add(t, seq));
  assert.equal(c.skipped, 0);
  assert.equal(c.add(12, 6), 1);
  assert.equal(c.add(13, 6), 0); // the number stands still
  c.add(0, 4294967295);
  assert.equal(c.add(2, 0), 0, 'the numbers wrap at 2^32');
  assert.equal(c.skipped, 1);
  c.setRates(30, 20, 10); // a view's ack: every other snapshot
  [[0, 10], [3, 12], [6, 14]].forEach(([t, seq]) => c.add(t, seq));
  assert.equal(c.skipped, 1);
  assert.equal(c.add(12, 18), 1);
  assert.equal(c.add(15, undefined), 0, 'version 1: the ticks say');
  assert.equal(c.add(24, undefined), 2);
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
