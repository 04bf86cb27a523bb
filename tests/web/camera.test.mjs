// The viewer's camera: fit, zoom about a point, pan, and the round trip
// between world and screen coordinates.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { Camera } from '../../client/web/js/camera.js';

const near = (a, b, eps = 1e-9) => Math.abs(a - b) <= eps;

function fitted(viewW = 1000, viewH = 800, w = 1600, h = 1000) {
  const c = new Camera();
  c.resize(viewW, viewH);
  c.setWorld(w, h);
  return c;
}

test('fit should centre the whole world in the view', () => {
  const c = fitted();
  const [x0, y0] = c.worldToScreen(0, 0);
  const [x1, y1] = c.worldToScreen(1600, 1000);
  assert.ok(x0 >= 0 && y0 >= 0 && x1 <= 1000 && y1 <= 800);
  assert.ok(near((x0 + x1) / 2, 500) && near((y0 + y1) / 2, 400));
});

test('screenToWorld should undo worldToScreen', () => {
  const c = fitted();
  c.zoomAt(123, 456, 2.5);
  c.panBy(-40, 17);
  const [sx, sy] = c.worldToScreen(321.5, 654.25);
  const [x, y] = c.screenToWorld(sx, sy);
  assert.ok(near(x, 321.5, 1e-9) && near(y, 654.25, 1e-9));
});

test('zoomAt should keep the world point under the cursor in place', () => {
  const c = fitted();
  const before = c.screenToWorld(300, 200);
  const s0 = c.scale;
  c.zoomAt(300, 200, 3);
  const after = c.screenToWorld(300, 200);
  assert.ok(near(before[0], after[0], 1e-9) && near(before[1], after[1], 1e-9));
  assert.ok(near(c.scale, 3 * s0));
  assert.equal(c.fitted, false);
});

test('zoom should stay within its limits', () => {
  const c = fitted();
  const fit = c.scale;
  c.zoomAt(0, 0, 1e9);
  assert.ok(c.scale <= fit * 60 + 1e-9);
  c.zoomAt(0, 0, 1e-9);
  assert.ok(c.scale >= fit * 0.2 - 1e-9);
});

test('panBy should move the world with the drag', () => {
  const c = fitted();
  const [x0, y0] = c.worldToScreen(800, 500);
  c.panBy(60, -30);
  const [x1, y1] = c.worldToScreen(800, 500);
  assert.ok(near(x1 - x0, 60) && near(y1 - y0, -30));
});

test('a fitted camera should refit on resize, a zoomed one should not', () => {
  const c = fitted();
  c.resize(2000, 1600);
  assert.ok(near(c.scale, c.fitScale()));
  c.zoomAt(10, 10, 2);
  const s = c.scale;
  c.resize(500, 400);
  assert.equal(c.scale, s);
});
