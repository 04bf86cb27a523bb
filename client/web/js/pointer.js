// Pointer gestures on the canvas: a drag pans the camera, the wheel zooms
// about the cursor, and a press that did not move is a click handed to
// onClick(sx, sy, {shift, alt, secondary}) in canvas CSS pixels. Hover
// positions go to onHover(sx, sy, shiftKey), leaving to onLeave(). Decides
// nothing about what a click means.

const CLICK_SLOP_PX = 4; // a press that moves further is a drag
const WHEEL_ZOOM = 0.0015; // zoom factor exp(-deltaY * WHEEL_ZOOM) per pixel of wheel

export function bindPointer(canvas, camera, { onClick, onHover, onLeave }) {
  let press = null;

  const canvasPoint = (e) => {
    const r = canvas.getBoundingClientRect();
    return [e.clientX - r.left, e.clientY - r.top];
  };

  const endPress = () => {
    press = null;
    canvas.classList.remove('panning');
  };

  canvas.addEventListener('pointerdown', (e) => {
    if (e.button !== 0 && e.button !== 2) return;
    canvas.setPointerCapture(e.pointerId);
    const [sx, sy] = canvasPoint(e);
    press = { id: e.pointerId, sx, sy, lastX: sx, lastY: sy, moved: false, button: e.button };
  });

  canvas.addEventListener('pointermove', (e) => {
    const [sx, sy] = canvasPoint(e);
    onHover(sx, sy, e.shiftKey);
    if (!press || press.id !== e.pointerId) return;
    if (!press.moved && Math.hypot(sx - press.sx, sy - press.sy) > CLICK_SLOP_PX) {
      press.moved = true;
      canvas.classList.add('panning');
    }
    if (press.moved) camera.panBy(sx - press.lastX, sy - press.lastY);
    press.lastX = sx;
    press.lastY = sy;
  });

  canvas.addEventListener('pointerup', (e) => {
    if (!press || press.id !== e.pointerId) return;
    const p = press;
    endPress();
    if (!p.moved) onClick(p.sx, p.sy, { shift: e.shiftKey, alt: e.altKey, secondary: p.button === 2 });
  });

  canvas.addEventListener('pointercancel', endPress);
  canvas.addEventListener('pointerleave', onLeave);
  canvas.addEventListener('contextmenu', (e) => e.preventDefault());

  canvas.addEventListener('wheel', (e) => {
    e.preventDefault();
    const [sx, sy] = canvasPoint(e);
    const pixels = e.deltaMode === 1 ? 40 : e.deltaMode === 2 ? 800 : 1; // lines, pages
    camera.zoomAt(sx, sy, Math.exp(-e.deltaY * pixels * WHEEL_ZOOM));
  }, { passive: false });
}
