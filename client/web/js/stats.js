// Measurements for the stats panel: sliding-window rates, skipped-frame
// counting from tick gaps, and small sparkline charts of the series the
// room's stats (PROTOCOL.md §6.5) feed. Everything but drawSparkline is
// pure and takes time as an argument.

/** Events and bytes per second over the last `windowMs`. */
export class RateMeter {
  constructor(windowMs = 2000) {
    this.windowMs = windowMs;
    this.events = []; // [timeMs, bytes]
    this.start = null;
  }

  add(nowMs, bytes = 0) {
    if (this.start === null) this.start = nowMs;
    this.events.push([nowMs, bytes]);
    this.expire(nowMs);
  }

  expire(nowMs) {
    const cut = nowMs - this.windowMs;
    let i = 0;
    while (i < this.events.length && this.events[i][0] < cut) i++;
    if (i) this.events.splice(0, i);
  }

  /** {rate, bytesPerSec} over the window (or the time since the first event). */
  read(nowMs) {
    this.expire(nowMs);
    if (this.start === null) return { rate: 0, bytesPerSec: 0 };
    const span = Math.max(250, Math.min(this.windowMs, nowMs - this.start)) / 1000;
    let bytes = 0;
    for (const e of this.events) bytes += e[1];
    return { rate: this.events.length / span, bytesPerSec: bytes / span };
  }

  reset() {
    this.events = [];
    this.start = null;
  }
}

/**
 * Counts snapshots the client never saw (a slow socket, §1 "latest frame
 * wins"). Versions 2 and 3 number the room's snapshots one by one
 * (`seq`): a gap in the numbers is a skip, and a room that sends fewer
 * snapshots than its rate while it sheds load (§6.7) is not the client's
 * doing. Version 1 has no number: consecutive snapshots should be
 * tick_hz / rate ticks apart, and a larger gap counts. Numbers or ticks
 * that stand still (paused) or go back (reset) are not gaps.
 */
export class SkipCounter {
  constructor() {
    this.skipped = 0;
    this.setRates(60, 20);
  }

  /** The room's tick and snapshot rates, and the rate this client is
   * sent snapshots at (a view's ack may say fewer; default: all). */
  setRates(tickHz, snapshotHz, rate = snapshotHz) {
    this.step = tickHz / rate;
    this.seqStep = snapshotHz / rate;
    this.last = null;
    this.lastSeq = null;
  }

  /** Feeds the next snapshot's tick and number (undefined in version 1);
   * returns how many frames it says were skipped. */
  add(tick, seq) {
    const numbered = Number.isInteger(seq);
    const [gap, step] = numbered && this.lastSeq !== null
      ? [((seq - this.lastSeq) | 0), this.seqStep]
      : [this.last === null ? 0 : tick - this.last, this.step];
    this.last = tick;
    this.lastSeq = numbered ? seq : null;
    if (gap <= Math.ceil(step - 1e-9)) return 0;
    const n = Math.max(1, Math.round(gap / step) - 1);
    this.skipped += n;
    return n;
  }

  /** Forgets the last snapshot (a new connection), keeping the total. */
  restart() {
    this.last = null;
    this.lastSeq = null;
  }
}

/** The last `capacity` samples; null marks a gap. */
export class Series {
  constructor(capacity = 60) {
    this.capacity = capacity;
    this.values = [];
  }

  push(v) {
    this.values.push(v);
    if (this.values.length > this.capacity) this.values.shift();
  }

  get last() {
    for (let i = this.values.length - 1; i >= 0; i--) if (this.values[i] !== null) return this.values[i];
    return null;
  }

  clear() {
    this.values = [];
  }
}

/**
 * Draws `series` into a small canvas: a line scaled from `min` (or the data
 * minimum) to `max` (or the data maximum), gaps left open.
 */
export function drawSparkline(canvas, series, { color = '#4cc9f0', min = null, max = null } = {}) {
  const dpr = window.devicePixelRatio || 1;
  const w = canvas.clientWidth || 160;
  const h = canvas.clientHeight || 32;
  if (canvas.width !== Math.round(w * dpr)) canvas.width = Math.round(w * dpr);
  if (canvas.height !== Math.round(h * dpr)) canvas.height = Math.round(h * dpr);
  const ctx = canvas.getContext('2d');
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, w, h);
  const vals = series.values;
  const real = vals.filter((v) => v !== null);
  if (!real.length) return;
  let lo = min !== null ? min : Math.min(...real);
  let hi = max !== null ? max : Math.max(...real);
  if (hi - lo < 1e-9) {
    hi += 0.5;
    lo -= 0.5;
  }
  const dx = w / Math.max(1, series.capacity - 1);
  const x0 = w - (vals.length - 1) * dx;
  ctx.strokeStyle = color;
  ctx.lineWidth = 1.5;
  ctx.beginPath();
  let pen = false;
  vals.forEach((v, i) => {
    if (v === null) {
      pen = false;
      return;
    }
    const x = x0 + i * dx;
    const y = h - 2 - ((v - lo) / (hi - lo)) * (h - 4);
    if (pen) ctx.lineTo(x, y);
    else ctx.moveTo(x, y);
    pen = true;
  });
  ctx.stroke();
}
