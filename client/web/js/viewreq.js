// What a version 3 page asks the server for (PROTOCOL.md §12.4): the view
// of its camera (the world rectangle it shows, clipped to the world, and
// the pixels it draws it at), when to send it (at most every THROTTLE_MS
// while the camera moves, and once more when it settles), and the budget
// in bytes per second it can take, measured from how the page keeps up.
// Pure: no DOM, no clock of its own (times come in as arguments).

export const THROTTLE_MS = 150;
export const START_BUDGET = 40000;
export const MIN_BUDGET = 5000;
export const LATE_MS = 150;

/**
 * The view of `camera` (camera.js) on a world of width x height:
 * {x, y, w, h, px}, world units and CSS pixels across, the visible part
 * of the world (never empty: at least one unit at the nearest edge).
 */
export function viewOfCamera(camera, width, height) {
  const [x0, y0, x1, y1] = camera.visibleWorld();
  const clip = (a, b, size) => {
    const lo = Math.min(Math.max(a, 0), size - 1);
    const hi = Math.max(Math.min(b, size), lo + 1);
    return [lo, hi - lo];
  };
  const [x, w] = clip(x0, x1, width);
  const [y, h] = clip(y0, y1, height);
  const px = Math.max(1, Math.min(16384, Math.round(w * camera.scale)));
  return { x, y, w, h, px };
}

/** Whether views a and b differ by more than `frac` of their size (or in px). */
export function viewMoved(a, b, frac = 0.01) {
  if (!a || !b) return a !== b;
  const tol = frac * Math.max(a.w, a.h);
  return Math.abs(a.x - b.x) > tol || Math.abs(a.y - b.y) > tol || Math.abs(a.w - b.w) > tol
    || Math.abs(a.h - b.h) > tol || Math.abs(a.px - b.px) > Math.max(2, frac * a.px);
}

/**
 * When to send the view: offer(view, budget, now) each frame; it returns
 * the {x, y, w, h, px, budget} to send now, or null. A change goes out at
 * once if none went out in the last THROTTLE_MS, else when that time is
 * up; the last one always goes out (the camera has settled).
 */
export class ViewSender {
  constructor(throttleMs = THROTTLE_MS) {
    this.throttleMs = throttleMs;
    this.sent = null; // the last view sent
    this.sentAt = -Infinity;
    this.times = []; // when the last (up to 32) went out
  }

  /** Forgets what was sent: a new stream (a welcome) starts with the whole room. */
  reset() {
    this.sent = null;
    this.sentAt = -Infinity;
  }

  offer(view, budget, nowMs) {
    const want = { ...view, budget: Math.round(budget) };
    const changed = !this.sent || viewMoved(this.sent, want) || Math.abs(this.sent.budget - want.budget) > 0.05 * this.sent.budget;
    if (!changed || nowMs - this.sentAt < this.throttleMs) return null;
    this.sent = want;
    this.sentAt = nowMs;
    this.times.push(nowMs);
    if (this.times.length > 32) this.times.shift();
    return want;
  }
}

/**
 * The bytes per second the page can take (`limit`) and the budget it asks
 * the server for (`budget`).
 *
 * The limit is START_BUDGET at first, lowered by a quarter (down to
 * MIN_BUDGET) when over the last second frames came late (queued on the
 * way: more than LATE_MS beyond the least-delayed arrival,
 * Playout.lateness()) or were skipped (a socket that drops all but the
 * latest), the page drew below 30 frames a second, or decoding and drawing
 * took more than 20 ms per drawn frame; raised by a quarter again (up to
 * `max`) after 5 s without trouble. A server that sends slowly (its room
 * ticks late) is no trouble of the page's: its frames are not late.
 *
 * The budget is the limit, unless the frames received stay below half of
 * it while the server holds detail back (the view's ack names a sample
 * above 0, or a lower rate): the server sizes frames for snapshot_hz a
 * second and may send fewer. Then the budget grows by a quarter a second
 * (up to 4 x the limit) and falls back by a quarter a second as soon as
 * the bytes received near the limit (90%), so that what comes stays within
 * what the page can take.
 */
export class BudgetMeter {
  constructor({ start = START_BUDGET, max = start, min = MIN_BUDGET } = {}) {
    this.limit = start;
    this.budget = start;
    this.max = max;
    this.min = min;
    this.calmSince = null;
    this.last = null; // the counters at the last update
    this.lastAt = null;
    this.why = null; // what lowered the limit last
  }

  /**
   * `c`: cumulative counters {frames (drawn), skipped (snapshots), workMs
   * (drawing), decodeMs, bytes (received)}, `lateMs` (Playout.lateness()
   * now) and `heldBack` (the server holds detail back: sample > 0 or a
   * rate below its snapshot rate). Call about once a second; returns the
   * budget.
   */
  update(c, nowMs) {
    if (this.last === null) {
      this.last = { ...c };
      this.lastAt = nowMs;
      this.calmSince = nowMs;
      return this.budget;
    }
    const dt = nowMs - this.lastAt;
    if (dt < 900) return this.budget;
    const d = Object.fromEntries(Object.keys(c).map((k) => [k, c[k] - (this.last[k] || 0)]));
    this.last = { ...c };
    this.lastAt = nowMs;
    const trouble = this.trouble(d, dt, c.lateMs);
    if (trouble) {
      this.why = trouble;
      this.limit = Math.max(this.min, this.limit * 0.75);
      this.budget = this.limit;
      this.calmSince = nowMs;
      return this.budget;
    }
    if (nowMs - this.calmSince >= 5000 && this.limit < this.max) {
      this.limit = Math.min(this.max, this.limit * 1.25);
      this.calmSince = nowMs;
    }
    const received = (1000 * (d.bytes || 0)) / dt;
    if (received > 0.9 * this.limit) this.budget = Math.max(this.limit, this.budget * 0.75);
    else if (received < 0.5 * this.limit && c.heldBack) this.budget = Math.min(4 * this.limit, this.budget * 1.25);
    else this.budget = Math.max(this.budget, this.limit);
    return this.budget;
  }

  // What went wrong over the last dt ms, or null.
  trouble(d, dt, lateMs) {
    const fps = (1000 * d.frames) / dt;
    const perFrame = d.frames ? (d.workMs + d.decodeMs) / d.frames : Infinity;
    if (lateMs > LATE_MS) return 'late frames';
    if (d.skipped > 0) return 'skipped frames';
    if (fps < 30) return `${fps.toFixed(0)} fps`;
    return perFrame > 20 ? `${perFrame.toFixed(1)} ms a frame` : null;
  }
}
