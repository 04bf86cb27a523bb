// Pointer gestures on the canvas: a drag pans the camera, the wheel and a
// two-finger pinch zoom about the cursor (the pinch's middle), a press that
// did not move is a click handed to onClick(sx, sy, {shift, alt,
// secondary}) in canvas CSS pixels, and a touch held still for
// LONG_PRESS_MS (a touch screen has no alt key) goes to onLongPress(sx,
// sy) instead.
// Hover positions go to onHover(sx, sy, shiftKey), leaving to onLeave().
// While boxSelect() says so (an rts player's page), a left mouse drag
// draws a box instead of panning: onBoxMove([sx0, sy0, sx1, sy1]) as it
// grows, onBoxMove(null) and onBox(sx0, sy0, sx1, sy1, {shift}) when it is
// let go; a right drag pans then. Decides nothing about what a click means.

const CLICK_SLOP_PX = 4; // a press that moves further is a drag
const WHEEL_ZOOM = 0.0015; // zoom factor exp(-deltaY * WHEEL_ZOOM) per pixel of wheel
const LONG_PRESS_MS = 550;

export function bindPointer(canvas, camera, {
  onClick, onHover, onLeave, onLongPress = null, boxSelect = () => false, onBox = () => {}, onBoxMove = () => {},
}) {
  let press = null;
  const touches = new Map(); // pointerId -> [sx, sy], while two fingers pinch
  let pinch = null; // {dist}

  const canvasPoint = (e) => {
    const r = canvas.getBoundingClientRect();
    return [e.clientX - r.left, e.clientY - r.top];
  };

  const endPress = () => {
    if (press) clearTimeout(press.timer);
    press = null;
    canvas.classList.remove('panning');
  };

  const pinchSpan = () => {
    const [a, b] = [...touches.values()];
    return { dist: Math.hypot(a[0] - b[0], a[1] - b[1]), mx: (a[0] + b[0]) / 2, my: (a[1] + b[1]) / 2 };
  };

  canvas.addEventListener('pointerdown', (e) => {
    if (e.button !== 0 && e.button !== 2) return;
    canvas.setPointerCapture(e.pointerId);
    const [sx, sy] = canvasPoint(e);
    if (e.pointerType === 'touch') touches.set(e.pointerId, [sx, sy]);
    if (touches.size === 2) { // a second finger: a pinch, not a click or a drag
      endPress();
      pinch = pinchSpan();
      return;
    }
    const box = e.button === 0 && e.pointerType === 'mouse' && boxSelect();
    press = { id: e.pointerId, sx, sy, lastX: sx, lastY: sy, moved: false, button: e.button, long: false, timer: null, box };
    if (onLongPress && e.button === 0 && e.pointerType !== 'mouse') {
      const p = press;
      p.timer = setTimeout(() => {
        if (press !== p || p.moved) return;
        p.long = true;
        onLongPress(p.sx, p.sy);
      }, LONG_PRESS_MS);
    }
  });

  canvas.addEventListener('pointermove', (e) => {
    const [sx, sy] = canvasPoint(e);
    onHover(sx, sy, e.shiftKey);
    if (touches.has(e.pointerId)) touches.set(e.pointerId, [sx, sy]);
    if (pinch && touches.size === 2) {
      const now = pinchSpan();
      if (pinch.dist > 0 && now.dist > 0) camera.zoomAt(now.mx, now.my, now.dist / pinch.dist);
      pinch = now;
      return;
    }
    if (!press || press.id !== e.pointerId) return;
    if (!press.moved && Math.hypot(sx - press.sx, sy - press.sy) > CLICK_SLOP_PX) {
      press.moved = true;
      if (!press.box) canvas.classList.add('panning');
    }
    if (press.moved && press.box) onBoxMove([press.sx, press.sy, sx, sy]);
    else if (press.moved) camera.panBy(sx - press.lastX, sy - press.lastY);
    press.lastX = sx;
    press.lastY = sy;
  });

  const lift = (e) => {
    touches.delete(e.pointerId);
    if (touches.size < 2) pinch = null;
  };

  canvas.addEventListener('pointerup', (e) => {
    lift(e);
    if (!press || press.id !== e.pointerId) return;
    const p = press;
    endPress();
    if (p.moved && p.box) {
      const [sx, sy] = canvasPoint(e);
      onBoxMove(null);
      onBox(p.sx, p.sy, sx, sy, { shift: e.shiftKey });
    }
    if (!p.moved && !p.long) onClick(p.sx, p.sy, { shift: e.shiftKey, alt: e.altKey, secondary: p.button === 2 });
  });

  canvas.addEventListener('pointercancel', (e) => {
    lift(e);
    if (press && press.box) onBoxMove(null);
    endPress();
  });
  canvas.addEventListener('pointerleave', onLeave);
  canvas.addEventListener('contextmenu', (e) => e.preventDefault());

  canvas.addEventListener('wheel', (e) => {
    e.preventDefault();
    const [sx, sy] = canvasPoint(e);
    const pixels = e.deltaMode === 1 ? 40 : e.deltaMode === 2 ? 800 : 1; // lines, pages
    camera.zoomAt(sx, sy, Math.exp(-e.deltaY * pixels * WHEEL_ZOOM));
  }, { passive: false });
}
