// What a version 3 page asks for (client/web/js/viewreq.js): the view of
// its camera clipped to the world, the throttle that sends it as the
// camera moves, the budget measured from how the page keeps up; and how it
// blends the level of detail (lod.js).
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { Camera } from '../../client/web/js/camera.js';
import {
  viewOfCamera, viewMoved, ViewSender, BudgetMeter, START_BUDGET, MIN_BUDGET, THROTTLE_MS,
} from '../../client/web/js/viewreq.js';
import { LodBlend, FADE_MS } from '../../client/web/js/lod.js';

function camera(viewW, viewH, worldW, worldH) {
  const c = new Camera();
  c.setWorld(worldW, worldH);
  c.resize(viewW, viewH);
  return c;
}

test('a fitted camera should view the whole world at the width it draws it', () => {
  const c = camera(1000, 600, 2000, 1000);
  const v = viewOfCamera(c, 2000, 1000);
  assert.deepEqual([v.x, v.y, v.w, v.h], [0, 0, 2000, 1000]);
  assert.equal(v.px, Math.round(2000 * c.scale));
});

test('a zoomed or panned camera should view what it shows, clipped to the world, never empty', () => {
  const c = camera(1000, 600, 2000, 1000);
  c.zoomAt(500, 300, 4);
  const v = viewOfCamera(c, 2000, 1000);
  const [x0, y0, x1, y1] = c.visibleWorld();
  assert.deepEqual([v.x, v.y, v.w, v.h], [x0, y0, x1 - x0, y1 - y0]);
  assert.equal(v.px, 1000);
  c.panBy(100000, 0); // far past the left edge
  const off = viewOfCamera(c, 2000, 1000);
  assert.ok(off.x === 0 && off.w >= 1 && off.px >= 1, JSON.stringify(off));
});

test('the sender should send a change at once, then at most every THROTTLE_MS, and the last one when the camera settles', () => {
  const s = new ViewSender();
  const v = (x) => ({ x, y: 0, w: 100, h: 100, px: 500 });
  assert.deepEqual(s.offer(v(0), 40000, 0), { ...v(0), budget: 40000 });
  assert.equal(s.offer(v(0), 40000, 10), null, 'nothing changed');
  assert.equal(s.offer(v(50), 40000, 20), null, 'too soon');
  assert.equal(s.offer(v(60), 40000, THROTTLE_MS - 1), null, 'still too soon');
  assert.equal(s.offer(v(60), 40000, THROTTLE_MS).x, 60, 'the settled view once the time is up');
  assert.equal(s.offer(v(60.5), 40000, 1000), null, 'half a percent is no move');
  assert.equal(s.offer(v(60), 30000, 1000).budget, 30000, 'a new budget is a change');
  s.reset();
  assert.ok(s.offer(v(60), 30000, 1001), 'a new stream gets the view again');
  assert.ok(viewMoved(v(0), { ...v(0), px: 600 }), 'a new width in pixels is a change');
});

test('the budget should start at 40 KB/s, fall when frames come late or the page slows, and come back when it keeps up', () => {
  const b = new BudgetMeter();
  const c = { frames: 0, skipped: 0, workMs: 0, decodeMs: 0, lateMs: 0 };
  let t = 0;
  const second = ({ lateMs = 0, ...d }) => {
    for (const k of Object.keys(d)) c[k] += d[k];
    c.lateMs = lateMs;
    t += 1000;
    return b.update(c, t);
  };
  assert.equal(b.update(c, t), START_BUDGET);
  assert.equal(second({ frames: 60, workMs: 120, decodeMs: 60 }), START_BUDGET, 'keeping up');
  assert.equal(second({ frames: 60, lateMs: 100 }), START_BUDGET, 'frames a little late');
  assert.equal(second({ frames: 60, lateMs: 400 }), START_BUDGET * 0.75, 'late frames');
  assert.equal(b.why, 'late frames');
  assert.equal(second({ frames: 20 }), START_BUDGET * 0.75 ** 2, '20 fps');
  assert.equal(second({ frames: 60, workMs: 1200, decodeMs: 300 }), START_BUDGET * 0.75 ** 3, '25 ms a frame');
  assert.equal(second({ frames: 60, skipped: 2 }), START_BUDGET * 0.75 ** 4, 'skipped frames');
  for (let i = 0; i < 4; i++) second({ frames: 60 });
  assert.equal(second({ frames: 60 }), START_BUDGET * 0.75 ** 4 * 1.25, 'five calm seconds: a quarter more');
  for (let i = 0; i < 30; i++) second({ frames: 60 });
  assert.equal(b.budget, START_BUDGET, 'never above where it started');
  for (let i = 0; i < 40; i++) second({ frames: 10 });
  assert.equal(b.budget, MIN_BUDGET, 'never below the least');
});

test('the level of detail should fade the field in and out over FADE_MS, drawing the last field while it fades', () => {
  const lod = new LodBlend();
  const field = { sample: 3 };
  const exact = { sample: 0 };
  assert.deepEqual(lod.update(exact, 0), { field: null, fieldAlpha: 0, boidAlpha: 1, boidScale: 1 });
  const a = lod.update(field, FADE_MS / 2);
  assert.ok(a.field === field && a.fieldAlpha === 0.5 && a.boidAlpha < 1 && a.boidAlpha > 0.65, JSON.stringify(a));
  assert.equal(lod.update(field, FADE_MS).fieldAlpha, 1);
  const b = lod.update(exact, FADE_MS * 1.25);
  assert.ok(b.field === field && b.fieldAlpha === 0.75, 'the last field, fading out');
  assert.deepEqual(lod.update(exact, FADE_MS * 3), { field: null, fieldAlpha: 0, boidAlpha: 1, boidScale: 1 });
  lod.reset();
  assert.equal(lod.update(field, 0).fieldAlpha, 1, 'a new stream starts where its first frame is');
});

test('the budget asked for should grow past the limit while the server holds detail back and little comes, and fall as bytes near it', () => {
  const b = new BudgetMeter();
  const c = { frames: 0, skipped: 0, workMs: 0, decodeMs: 0, bytes: 0, lateMs: 0, heldBack: false };
  let t = 0;
  const second = (bytes, heldBack) => {
    c.frames += 60;
    c.bytes += bytes;
    c.heldBack = heldBack;
    t += 1000;
    return b.update(c, t);
  };
  b.update(c, t);
  assert.equal(second(5000, false), START_BUDGET, 'little comes, but nothing is held back');
  assert.equal(second(5000, true), START_BUDGET * 1.25, 'held back: a quarter more');
  assert.equal(second(5000, true), START_BUDGET * 1.25 ** 2);
  for (let i = 0; i < 20; i++) second(5000, true);
  assert.equal(b.budget, 4 * START_BUDGET, 'at most four times the limit');
  assert.equal(b.limit, START_BUDGET, 'the limit stays');
  assert.equal(second(0.95 * START_BUDGET, true), 3 * START_BUDGET, 'near the limit: a quarter less');
  for (let i = 0; i < 10; i++) second(START_BUDGET, true);
  assert.equal(b.budget, START_BUDGET, 'never below the limit that way');
  second(5000, true);
  c.lateMs = 500;
  assert.equal(second(5000, true), START_BUDGET * 0.75, 'trouble: the limit falls and the budget with it');
});
