// The typed state a client hands out: one Snapshot per decoded frame of
// any version (proto/PROTOCOL.md §4, §11, §12), with velocities estimated
// from the previous snapshot (the same epoch in versions 1 and 2; the same
// boid id in version 3), and the bounded queues that hand them to
// iterators. Pure: no I/O.

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

// Version 3: velocities of the boids of `s` that `prev` held too, by id.
function velocitiesById(s, prev, tickHz, vx, vy) {
  if (!prev || !prev.ids || !(tickHz > 0)) return [vx, vy];
  const dt = (s.tick - prev.tick) / tickHz;
  if (!(dt >= 0)) return [vx, vy];
  const find = idIndex(prev.ids);
  for (let i = 0; i < s.count; i++) {
    const j = find(s.ids[i]);
    if (j < 0) continue;
    vx[i] = dt ? step(prev.x[j], s.x[i], s.width, s.wrap) / dt : prev.vx[j]; // paused: as they were
    vy[i] = dt ? step(prev.y[j], s.y[i], s.height, s.wrap) / dt : prev.vy[j];
  }
  return [vx, vy];
}

/**
 * Velocities in units per second of boids that moved from `prev` to `s`
 * (same epoch, so boid i is the same boid; by id in version 3): [vx, vy],
 * NaN where unknown.
 */
function velocities(s, prev, tickHz) {
  const n = s.count;
  const vx = new Float64Array(n).fill(NaN);
  const vy = new Float64Array(n).fill(NaN);
  if (s.ids) return velocitiesById(s, prev, tickHz, vx, vy);
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

/** Version 3: [{group, count}] of the boids' groups, ascending. */
export function groupCounts(group) {
  const n = new Uint32Array(256);
  for (let i = 0; i < group.length; i++) n[group[i]]++;
  const runs = [];
  n.forEach((count, g) => { if (count) runs.push({ group: g, count }); });
  return runs;
}

/**
 * Version 3: the place in world units {x, y, w, h} of super-tile (tx, ty)
 * of decoded frame f (its shift, grid and world), as its field's cells
 * divide it (§12.6: the super-tile's quantized start and width; one at the
 * grid's right or bottom edge may reach past the world).
 */
export function superTileRect(tx, ty, f) {
  const span = (n, size) => ((((65536 << f.shift) / n) | 0) * size) / 65536;
  const start = (t, n, size) => ((Math.floor(((t << f.shift) * 65536) / n)) * size) / 65536;
  return { x: start(tx, f.cols, f.width), y: start(ty, f.rows, f.height), w: span(f.cols, f.width), h: span(f.rows, f.height) };
}

/**
 * A lookup of ids -> index, -1 for an id not there. Ids are given from 1
 * up in spawn order, so they are mostly dense: a direct table when their
 * range is at most four times their count, else open addressing. Typed
 * arrays, no object per boid.
 */
export function idIndex(ids) {
  let lo = Infinity;
  let hi = -1;
  for (let i = 0; i < ids.length; i++) {
    if (ids[i] < lo) lo = ids[i];
    if (ids[i] > hi) hi = ids[i];
  }
  if (hi < lo) return () => -1;
  if (hi - lo < 4 * ids.length + 64) {
    const at = new Int32Array(hi - lo + 1).fill(-1);
    for (let i = 0; i < ids.length; i++) at[ids[i] - lo] = i;
    return (id) => (id >= lo && id <= hi ? at[id - lo] : -1);
  }
  let size = 16;
  while (size < 2 * ids.length) size *= 2;
  const keys = new Uint32Array(size); // 0: empty (ids start at 1)
  const at = new Int32Array(size);
  const mask = size - 1;
  for (let i = 0; i < ids.length; i++) {
    let h = Math.imul(ids[i], 0x9e3779b1) & mask;
    while (keys[h]) h = (h + 1) & mask;
    keys[h] = ids[i];
    at[h] = i;
  }
  return (id) => {
    for (let h = Math.imul(id, 0x9e3779b1) & mask; keys[h]; h = (h + 1) & mask) if (keys[h] === id) return at[h];
    return -1;
  };
}

// Version 3: a part with its super-tile's place in the world and its
// field's mean velocities in units per second (§12.6).
function placedPart(p, f, vscale) {
  const field = p.field && {
    cells: p.field.cells,
    count: p.field.count,
    vx: Float32Array.from(p.field.vx, (v) => v * vscale),
    vy: Float32Array.from(p.field.vy, (v) => v * vscale),
  };
  return {
    tx: p.tx, ty: p.ty, kind: p.kind, start: p.start, count: p.count, field, ...superTileRect(p.tx, p.ty, f),
  };
}

/**
 * One snapshot of a room. Fields: version (1, 2 or 3), tick, time (the
 * server's clock when it was encoded, seconds since the Unix epoch),
 * epoch (null in version 3), paused, wrap, width, height, count (boids),
 * and per boid the typed arrays x, y (world units), heading (radians in
 * [0, 2 pi), 0 along +x, a quarter turn toward +y), group (0..255), vx, vy
 * (units per second, estimated from the previous snapshot: of the same
 * epoch, or in version 3 the same boid id; NaN where unknown); ids (a
 * Uint32Array in version 3; null before: index i is the same boid within
 * one epoch); runs [{group, count}], obstacles [{id, x, y, r}], targets
 * [{group, x, y}]; `frame`: the decoder's object (quantized qx, qy,
 * heading, the version's header fields). Version 3 adds fogged, delayed,
 * shift, sample, seq, roomBoids, rect {x, y, cols, rows} (super-tiles)
 * and parts: per super-tile {tx, ty, kind, start, count, x, y, w, h,
 * field}, its boids at [start, start + count), its place in world units,
 * its level-of-detail field null or {cells, count, vx, vy} (cells row by
 * row over [x, x + w) x [y, y + h); mean velocities in units per second).
 * `options.vscale`: the welcome's stream.field.vscale. Treat the arrays as
 * read-only.
 */
export class Snapshot {
  constructor(frame, prev = null, tickHz = 0, { vscale = 1 } = {}) {
    this.version = frame.version;
    this.tick = frame.tick;
    this.time = frame.serverTimeUs / 1e6;
    this.epoch = frame.version === 3 ? null : frame.epoch;
    this.paused = frame.paused;
    this.wrap = frame.wrap;
    this.width = frame.width;
    this.height = frame.height;
    this.count = frame.boidCount;
    this.x = frame.x;
    this.y = frame.y;
    this.heading = radians(frame.heading);
    this.group = frame.group;
    this.ids = frame.version === 3 ? frame.id : null;
    this.runs = frame.version === 3 ? groupCounts(frame.group) : frame.runs;
    this.obstacles = frame.obstacles;
    this.targets = frame.targets;
    this.frame = frame;
    if (frame.version === 3) {
      for (const k of ['fogged', 'delayed', 'shift', 'sample', 'seq', 'roomBoids', 'rect']) this[k] = frame[k];
      this.parts = frame.parts.map((p) => placedPart(p, frame, vscale));
    }
    [this.vx, this.vy] = velocities(this, prev, tickHz);
  }

  /**
   * The boids of `group`: {start, count, x, y, heading, vx, vy, ids}. In
   * versions 1 and 2 a group's boids are listed together (§4.4) and the
   * arrays are views (not copies) of this snapshot's from `start`; in
   * version 3 (boids by part and id) they are copies and `start` is null.
   */
  of(group) {
    if (this.ids) return this.gather(group);
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
      start, count, x: view(this.x), y: view(this.y), heading: view(this.heading), vx: view(this.vx), vy: view(this.vy), ids: null,
    };
  }

  gather(group) {
    const at = [];
    for (let i = 0; i < this.count; i++) if (this.group[i] === group) at.push(i);
    const pick = (a, Type) => Type.from(at, (i) => a[i]);
    return {
      start: null, count: at.length, x: pick(this.x, Float64Array), y: pick(this.y, Float64Array),
      heading: pick(this.heading, Float64Array), vx: pick(this.vx, Float64Array), vy: pick(this.vy, Float64Array),
      ids: pick(this.ids, Uint32Array),
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
