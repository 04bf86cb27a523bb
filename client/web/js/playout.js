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
// Version 3 snapshots (PROTOCOL.md §12) carry boid ids and need not hold
// the same boids twice (a view moved, a boid flew into or out of it):
// each is matched by id with the one before it when it comes in, and
// drawn in its own boids, those also in the one before moving from where
// they were, the others where they are; its boids are drawn group by
// group (an order sorted by group, its runs).
//
// Pure: no DOM, no clock of its own (times come in as arguments), so it
// runs under node's test runner.

import { idIndex, groupCounts } from '../lib/snapshot.js';

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
  const step = lerper(a, b, t, out);
  for (let i = 0; i < a.boidCount; i++) step(i, i, i);
}

// step(n, j, i): boid j of `a` moved t of the way toward boid i of `b`,
// into out at n. A step longer than half a torus went the other way
// round, and is folded back into the world; the heading turns the shorter
// way. (The arrays in locals: this runs per boid per drawn frame.)
function lerper(a, b, t, out) {
  const { x: ax, y: ay, heading: ah } = a;
  const { x: bx, y: by, heading: bh } = b;
  const { x: ox, y: oy, angle: oa } = out;
  const w = a.width;
  const h = a.height;
  const wrap = a.wrap;
  const k = Math.PI / 128;
  return (n, j, i) => {
    let dx = bx[i] - ax[j];
    let dy = by[i] - ay[j];
    if (wrap) {
      if (dx > w / 2) dx -= w;
      else if (dx < -w / 2) dx += w;
      if (dy > h / 2) dy -= h;
      else if (dy < -h / 2) dy += h;
    }
    let x = ax[j] + dx * t;
    let y = ay[j] + dy * t;
    if (wrap) {
      if (x < 0) x += w;
      else if (x >= w) x -= w;
      if (y < 0) y += h;
      else if (y >= h) y -= h;
    }
    ox[n] = x;
    oy[n] = y;
    const dh = ((bh[i] - ah[j] + 384) & 255) - 128;
    oa[n] = (ah[j] + dh * t) * k;
  };
}

/** Copies the boids of `s` into `out` as they are (version 3: in its group order, with ids). */
export function copyBoids(s, out) {
  const k = Math.PI / 128;
  const order = s.order || null;
  for (let n = 0; n < s.boidCount; n++) {
    const i = order ? order[n] : n;
    out.x[n] = s.x[i];
    out.y[n] = s.y[i];
    out.angle[n] = s.heading[i] * k;
    if (order) out.id[n] = s.id[i];
  }
}

/**
 * Version 3: readies snapshot `s` for drawing after `prev` (the one before
 * it, or null): s.runs (per group), s.order (its boids' indices group by
 * group), s.match (per boid the index of the same id in prev, or -1) and
 * s.matchTo (prev).
 */
export function prepareV3(s, prev) {
  if (!s.runs) s.runs = groupCounts(s.group);
  const start = new Int32Array(257);
  for (const r of s.runs) start[r.group + 1] = r.count;
  for (let g = 0; g < 256; g++) start[g + 1] += start[g];
  const order = new Int32Array(s.boidCount);
  for (let i = 0; i < s.boidCount; i++) order[start[s.group[i]]++] = i;
  s.order = order;
  s.match = new Int32Array(s.boidCount).fill(-1);
  s.matchTo = prev && prev.id ? prev : null;
  if (!s.matchTo) return;
  const find = idIndex(prev.id);
  for (let i = 0; i < s.boidCount; i++) s.match[i] = find(s.id[i]);
}

/**
 * Version 3: the boids of `b` (prepareV3 after `a`) in its group order,
 * those also in `a` moved `t` (0..1) of the way from there, into `out`
 * (x, y, angle, id). A torus as interpolate().
 */
export function interpolateIds(a, b, t, out) {
  const k = Math.PI / 128;
  const step = lerper(a, b, t, out);
  const { order, match } = b;
  for (let n = 0; n < b.boidCount; n++) {
    const i = order[n];
    const j = match[i];
    out.id[n] = b.id[i];
    if (j >= 0) {
      step(n, j, i);
    } else {
      out.x[n] = b.x[i];
      out.y[n] = b.y[i];
      out.angle[n] = b.heading[i] * k;
    }
  }
}

export class Playout {
  constructor({ delayMs = 100, maxSnapshots = 64 } = {}) {
    this.delayMs = delayMs;
    this.maxSnapshots = maxSnapshots;
    this.out = { x: new Float32Array(0), y: new Float32Array(0), angle: new Float32Array(0), id: new Uint32Array(0) };
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
    if (snap.version === 3) prepareV3(snap, newest);
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
   * else {snap, runs, count, x, y, angle, id, from, to, shown, t, held}:
   * `snap` is the snapshot whose obstacles and targets to show; x, y, angle
   * (and in version 3 id) hold `count` boids group by group as `runs` says
   * (valid until the next call); `shown` (version 3) the snapshot whose
   * boids they are. Interpolates only between snapshots with the same
   * boids (sameBoids), or in version 3 by id; otherwise shows the earlier
   * one unchanged until the render time reaches the later one.
   */
  sample(nowMs) {
    const render = this.renderTime(nowMs);
    if (render === null) return null;
    this.trim(render);
    const a = this.snaps[0];
    const b = this.snaps.length > 1 ? this.snaps[1] : null;
    const ta = a.serverTimeUs / 1000;
    if (a.version === 3) return this.sampleV3(a, b, render);
    this.ensure(a.boidCount);
    const res = { snap: a, runs: a.runs, count: a.boidCount, x: this.out.x, y: this.out.y, angle: this.out.angle,
      id: null, from: a, to: b, t: 0, held: false };
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

  // Version 3: b's boids, moving from a's where a had them.
  sampleV3(a, b, render) {
    const ta = a.serverTimeUs / 1000;
    const joined = b && b.matchTo === a;
    const s = joined ? b : a;
    this.ensure(s.boidCount);
    const { out } = this;
    const res = { snap: a, runs: s.runs, count: s.boidCount, x: out.x, y: out.y, angle: out.angle, id: out.id,
      from: a, to: b, shown: s, t: 0, held: false };
    if (!joined) {
      res.held = !b && render > ta;
      if (res.held) this.holds++;
      copyBoids(a, out);
      return res;
    }
    const tb = b.serverTimeUs / 1000;
    res.t = Math.min(1, Math.max(0, (render - ta) / (tb - ta)));
    interpolateIds(a, b, res.t, out);
    return res;
  }

  /**
   * How late (ms) even the least late snapshot of the last second came,
   * beyond the least-delayed arrival of the window: a queue that stands on
   * the way (a link that cannot carry the stream). A server that sends
   * unevenly (its room ticks late) delays some frames, not all: its frames
   * are not late by this measure.
   */
  lateness(nowMs, spanMs = 1000) {
    let least = Infinity;
    for (const s of this.samples) least = Math.min(least, s[1]);
    let recent = Infinity;
    for (let k = this.samples.length - 1; k >= 0 && this.samples[k][0] >= nowMs - spanMs; k--) {
      recent = Math.min(recent, this.samples[k][1] - least);
    }
    return Number.isFinite(recent) ? recent : 0;
  }

  /** How far (ms) the render time is behind the newest snapshot. */
  lagMs(nowMs) {
    const n = this.newest;
    return n ? nowMs - this.offset - n.serverTimeUs / 1000 : 0;
  }

  ensure(n) {
    if (this.out.x.length >= n) return;
    const cap = Math.max(n, this.out.x.length * 2, 1024);
    this.out = { x: new Float32Array(cap), y: new Float32Array(cap), angle: new Float32Array(cap), id: new Uint32Array(cap) };
  }
}
