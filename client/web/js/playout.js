// Playout buffer: holds the last few decoded snapshots and answers "where
// is every boid now", rendering a fixed delay behind the newest snapshot
// and interpolating between the two snapshots around the render time.
//
// Timing is server-time based: each snapshot carries server_time_us, the
// server's clock when it was encoded. The offset between the local clock
// and the server's is estimated as the smallest (arrival - server time)
// seen over a sliding window (the least-delayed arrivals), so a late or
// bunched arrival changes nothing and snapshots play out at the spacing the
// server encoded them at. The render time never goes backwards.
//
// Pure: no DOM, no clock of its own (times come in as arguments), so it
// runs under node's test runner.

const OFFSET_WINDOW_MS = 10000; // how far back the offset minimum looks
const OFFSET_SLEW = 0.02; // at most 20 ms of offset change per second of playout
const OFFSET_STEP_MS = 1000; // a larger change is a clock step: jump to it

/** True when boid i of `a` is boid i of `b` (§4.4): same epoch, count and world. */
export function sameBoids(a, b) {
  return a.epoch === b.epoch && a.boidCount === b.boidCount && a.width === b.width &&
    a.height === b.height && a.wrap === b.wrap;
}

/**
 * Writes the boids of `a` moved `t` (0..1) of the way toward `b` into `out`
 * (Float32Arrays x, y, angle of at least a.boidCount entries). On a torus a
 * step longer than half the world went the other way round; the result is
 * folded back into the world. Headings turn the shorter way. `b` must hold
 * the same boids as `a` (sameBoids).
 */
export function interpolate(a, b, t, out) {
  const n = a.boidCount;
  const { x: ax, y: ay, heading: ah } = a;
  const { x: bx, y: by, heading: bh } = b;
  const w = a.width;
  const h = a.height;
  const hw = w / 2;
  const hh = h / 2;
  const wrap = a.wrap;
  const k = Math.PI / 128;
  for (let i = 0; i < n; i++) {
    let dx = bx[i] - ax[i];
    let dy = by[i] - ay[i];
    if (wrap) {
      if (dx > hw) dx -= w;
      else if (dx < -hw) dx += w;
      if (dy > hh) dy -= h;
      else if (dy < -hh) dy += h;
    }
    let x = ax[i] + dx * t;
    let y = ay[i] + dy * t;
    if (wrap) {
      if (x < 0) x += w;
      else if (x >= w) x -= w;
      if (y < 0) y += h;
      else if (y >= h) y -= h;
    }
    out.x[i] = x;
    out.y[i] = y;
    const dh = ((bh[i] - ah[i] + 384) & 255) - 128;
    out.angle[i] = (ah[i] + dh * t) * k;
  }
}

/** Copies the boids of `s` into `out` as they are. */
export function copyBoids(s, out) {
  const k = Math.PI / 128;
  for (let i = 0; i < s.boidCount; i++) {
    out.x[i] = s.x[i];
    out.y[i] = s.y[i];
    out.angle[i] = s.heading[i] * k;
  }
}

export class Playout {
  constructor({ delayMs = 100, maxSnapshots = 64 } = {}) {
    this.delayMs = delayMs;
    this.maxSnapshots = maxSnapshots;
    this.out = { x: new Float32Array(0), y: new Float32Array(0), angle: new Float32Array(0) };
    this.clear();
  }

  /** Forgets every snapshot and the clock estimate (e.g. after a reconnect). */
  clear() {
    this.snaps = []; // ascending server time
    this.samples = []; // [arrivalMs, offsetMs], for the windowed minimum
    this.offset = null; // applied local - server offset, ms
    this.lastRender = -Infinity;
    this.lastNow = null;
    this.holds = 0; // frames that ran past the newest snapshot
  }

  get newest() {
    return this.snaps.length ? this.snaps[this.snaps.length - 1] : null;
  }

  /** Adds a decoded snapshot that arrived at local time `arrivalMs`. */
  push(snap, arrivalMs) {
    const serverMs = snap.serverTimeUs / 1000;
    const newest = this.newest;
    if (newest) {
      const newestMs = newest.serverTimeUs / 1000;
      if (serverMs === newestMs) return; // nothing to interpolate over
      if (serverMs < newestMs) this.clear(); // the server's clock went back: start over
    }
    this.snaps.push(snap);
    if (this.snaps.length > this.maxSnapshots) this.snaps.shift();
    this.samples.push([arrivalMs, arrivalMs - serverMs]);
    while (this.samples.length && this.samples[0][0] < arrivalMs - OFFSET_WINDOW_MS) this.samples.shift();
    if (this.offset === null) this.offset = arrivalMs - serverMs;
  }

  // Moves the applied offset toward the window's minimum, slowly, so the
  // playout rate stays within 2% of real time.
  updateOffset(nowMs) {
    let target = Infinity;
    for (const s of this.samples) target = Math.min(target, s[1]);
    if (!Number.isFinite(target)) return;
    const dt = this.lastNow === null ? 0 : Math.max(0, nowMs - this.lastNow);
    this.lastNow = nowMs;
    const diff = target - this.offset;
    if (Math.abs(diff) > OFFSET_STEP_MS) this.offset = target;
    else this.offset += Math.max(-dt * OFFSET_SLEW, Math.min(dt * OFFSET_SLEW, diff));
  }

  /** The server time (ms) to show at local time nowMs, or null before any snapshot. */
  renderTime(nowMs) {
    if (!this.snaps.length) return null;
    this.updateOffset(nowMs);
    const t = Math.max(this.lastRender, nowMs - this.offset - this.delayMs);
    this.lastRender = t;
    return t;
  }

  // Drops snapshots older than the one the render time is in, keeping it.
  trim(renderMs) {
    while (this.snaps.length > 1 && this.snaps[1].serverTimeUs / 1000 <= renderMs) this.snaps.shift();
  }

  /**
   * The boids to draw at local time nowMs. Returns null before any snapshot,
   * else {snap, count, x, y, angle, from, to, t, held}: `snap` is the
   * snapshot whose obstacles, targets and groups to show; x, y, angle hold
   * `count` boids (valid until the next call). Interpolates only between
   * snapshots with the same boids (sameBoids); otherwise shows the earlier
   * one unchanged until the render time reaches the later one.
   */
  sample(nowMs) {
    const render = this.renderTime(nowMs);
    if (render === null) return null;
    this.trim(render);
    const a = this.snaps[0];
    const b = this.snaps.length > 1 ? this.snaps[1] : null;
    const ta = a.serverTimeUs / 1000;
    this.ensure(a.boidCount);
    const res = { snap: a, count: a.boidCount, x: this.out.x, y: this.out.y, angle: this.out.angle,
      from: a, to: b, t: 0, held: false };
    if (!b) {
      res.held = render > ta;
      if (res.held) this.holds++;
      copyBoids(a, this.out);
      return res;
    }
    const tb = b.serverTimeUs / 1000;
    const t = Math.min(1, Math.max(0, (render - ta) / (tb - ta)));
    if (sameBoids(a, b)) {
      interpolate(a, b, t, this.out);
      res.t = t;
    } else {
      copyBoids(a, this.out);
    }
    return res;
  }

  /** How far (ms) the render time is behind the newest snapshot. */
  lagMs(nowMs) {
    const n = this.newest;
    return n ? nowMs - this.offset - n.serverTimeUs / 1000 : 0;
  }

  ensure(n) {
    if (this.out.x.length >= n) return;
    const cap = Math.max(n, this.out.x.length * 2, 1024);
    this.out = { x: new Float32Array(cap), y: new Float32Array(cap), angle: new Float32Array(cap) };
  }
}
