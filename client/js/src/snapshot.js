// The typed state a client hands out: one Snapshot per decoded frame of
// either version (proto/PROTOCOL.md §4, §11), with velocities estimated
// from the previous snapshot of the same epoch, and the bounded queues
// that hand them to iterators. Pure: no I/O.

// The shorter way from a to b on an axis of `size`, when the world wraps (§4.4).
function step(a, b, size, wrap) {
  const d = b - a;
  if (!wrap) return d;
  if (d > size / 2) return d - size;
  if (d < -size / 2) return d + size;
  return d;
}

// §4.4: quantized headings as radians.
function radians(q) {
  const out = new Float64Array(q.length);
  for (let i = 0; i < q.length; i++) out[i] = (q[i] * Math.PI) / 128;
  return out;
}

/**
 * Velocities in units per second of boids that moved from `prev` to `s`
 * (same epoch, so boid i is the same boid): [vx, vy], NaN where unknown.
 */
function velocities(s, prev, tickHz) {
  const n = s.count;
  const vx = new Float64Array(n).fill(NaN);
  const vy = new Float64Array(n).fill(NaN);
  if (!prev || prev.epoch !== s.epoch || prev.count !== n || !(tickHz > 0)) return [vx, vy];
  if (s.tick === prev.tick) return [prev.vx, prev.vy]; // paused: the same state again
  const dt = (s.tick - prev.tick) / tickHz;
  if (!(dt > 0)) return [vx, vy];
  for (let i = 0; i < n; i++) {
    vx[i] = step(prev.x[i], s.x[i], s.width, s.wrap) / dt;
    vy[i] = step(prev.y[i], s.y[i], s.height, s.wrap) / dt;
  }
  return [vx, vy];
}

/**
 * One snapshot of a room. Fields: tick, time (the server's clock when it
 * was encoded, seconds since the Unix epoch), epoch, paused, wrap, width,
 * height, count (boids), and per boid the typed arrays x, y (world units),
 * heading (radians in [0, 2 pi), 0 along +x, a quarter turn toward +y),
 * group (0..255), vx, vy (units per second, estimated from the previous
 * snapshot of the same epoch; NaN where unknown); ids (null: the protocol
 * carries no boid ids yet; index i is the same boid within one epoch);
 * runs [{group, count}], obstacles [{id, x, y, r}], targets [{group, x,
 * y}]; `frame`: the decoder's object (quantized qx, qy, heading, the
 * version 2 header fields). Treat the arrays as read-only.
 */
export class Snapshot {
  constructor(frame, prev = null, tickHz = 0) {
    this.tick = frame.tick;
    this.time = frame.serverTimeUs / 1e6;
    this.epoch = frame.epoch;
    this.paused = frame.paused;
    this.wrap = frame.wrap;
    this.width = frame.width;
    this.height = frame.height;
    this.count = frame.boidCount;
    this.x = frame.x;
    this.y = frame.y;
    this.heading = radians(frame.heading);
    this.group = frame.group;
    this.ids = null;
    this.runs = frame.runs;
    this.obstacles = frame.obstacles;
    this.targets = frame.targets;
    this.frame = frame;
    [this.vx, this.vy] = velocities(this, prev, tickHz);
  }

  /**
   * The boids of `group` (a group's boids are listed together, §4.4):
   * {start, count, x, y, heading, vx, vy}, the arrays views (not copies)
   * of this snapshot's.
   */
  of(group) {
    let start = 0;
    let count = 0;
    for (const r of this.runs) {
      if (r.group === group) {
        count = r.count;
        break;
      }
      if (r.group > group) break;
      start += r.count;
    }
    const end = start + count;
    const view = (a) => a.subarray(start, end);
    return {
      start, count, x: view(this.x), y: view(this.y), heading: view(this.heading), vx: view(this.vx), vy: view(this.vy),
    };
  }
}

// A settled-later promise with its resolve and reject.
export function deferred() {
  let resolve;
  let reject;
  const promise = new Promise((res, rej) => { resolve = res; reject = rej; });
  return { promise, resolve, reject };
}

/**
 * A bounded queue of snapshots for one iterator of `client` (its `queues`
 * hold it until it returns); the oldest go when it is full.
 */
export class SnapshotQueue {
  constructor(client, buffer) {
    this.client = client;
    this.buffer = buffer;
    this.items = [];
    this.waiter = null;
    this.dropped = 0;
    this.done = false;
    this.error = null;
  }

  push(s) {
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = null;
      w.resolve({ value: s, done: false });
      return;
    }
    this.items.push(s);
    if (this.items.length > this.buffer) {
      this.items.shift();
      this.dropped++;
    }
  }

  end(error) {
    this.done = true;
    this.error = error;
    if (!this.waiter) return;
    const w = this.waiter;
    this.waiter = null;
    if (error) w.reject(error);
    else w.resolve({ value: undefined, done: true });
  }

  next() {
    if (this.items.length) return Promise.resolve({ value: this.items.shift(), done: false });
    if (this.done) return this.error ? Promise.reject(this.error) : Promise.resolve({ value: undefined, done: true });
    this.waiter = deferred();
    return this.waiter.promise;
  }

  return() {
    this.client.queues.delete(this);
    this.end(null);
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator]() {
    return this;
  }
}
