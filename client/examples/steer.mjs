#!/usr/bin/env node
// Steer a flock group around a circle of waypoints on a flockd server, on
// the JavaScript client library (client/js; `npm ci` here and there, or
// `make deps`). It gives one group its own parameters, spawns boids into
// it, and for each lap places an obstacle in the middle of the circle,
// seeks each waypoint in turn until the group's centroid (wrap-aware) is
// within --radius of it, then removes the obstacle. Whatever it changed
// it undoes on the way out, also when it fails or gets SIGINT: its boids
// despawned, its obstacles removed, the target cleared, the group's
// parameters restored. Exit status: 0 done, 1 failed, 2 usage, 3 cannot
// connect.
//
//   node client/examples/steer.mjs --url ws://127.0.0.1:8080/ws --laps 2

import process from 'node:process';
import { parseArgs } from 'node:util';
import { connect } from 'flockd-client';

const OPTIONS = {
  url: ['ws://127.0.0.1:8080/ws'], laps: [1, 1], waypoints: [6, 2], group: [1, 0, 255], boids: [40, 1],
  speed: [160, 1e-9], radius: [60, 1e-9], timeout: [120, 1e-9],
};
const USAGE = `usage: steer.mjs ${Object.keys(OPTIONS).map((k) => `[--${k} ${k === 'url' ? 'URL' : 'N'}]`).join(' ')} [--insecure]
(defaults: ${Object.entries(OPTIONS).map(([k, [v]]) => `${k} ${v}`).join(', ')}; timeout: seconds per waypoint)`;

function options() {
  const spec = Object.fromEntries(Object.keys(OPTIONS).map((k) => [k, { type: 'string' }]));
  const { values } = parseArgs({ options: { ...spec, insecure: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } } });
  if (values.help) throw Object.assign(new Error(USAGE), { status: 0 });
  const opt = { url: values.url ?? OPTIONS.url[0], insecure: Boolean(values.insecure) };
  for (const [k, [def, lo, hi = Infinity]] of Object.entries(OPTIONS).slice(1)) {
    opt[k] = values[k] === undefined ? def : Number(values[k]);
    if (!(opt[k] >= lo && opt[k] <= hi)) throw Object.assign(new Error(`--${k} must be in [${lo}, ${hi}]\n${USAGE}`), { status: 2 });
  }
  return opt;
}

/** The mean of coordinates on an axis of `size`; on a torus the circular mean. */
function mean(v, size, wrap) {
  if (!wrap) return v.reduce((a, b) => a + b, 0) / v.length;
  const a = (2 * Math.PI) / size;
  const m = Math.atan2(v.reduce((s, x) => s + Math.sin(a * x), 0), v.reduce((s, x) => s + Math.cos(a * x), 0)) / a;
  return (m + size) % size;
}

/** Distance of the group's centroid in snapshot `s` from point p (shorter way round on a torus), or null. */
function distance(s, group, p) {
  const g = s.of(group);
  if (!g.count) return null;
  const d = (c, q, size) => Math.min(Math.abs(c - q), s.wrap ? size - Math.abs(c - q) : Infinity);
  return Math.hypot(d(mean(g.x, s.width, s.wrap), p.x, s.width), d(mean(g.y, s.height, s.wrap), p.y, s.height));
}

/** Waits until the group's centroid is within `radius` of p: resolves to the snapshot's tick and the distance. */
async function reach(c, opt, p) {
  const deadline = Date.now() + opt.timeout * 1000;
  let best = Infinity;
  for (let left; (left = deadline - Date.now()) > 0;) {
    const s = await c.nextSnapshot({ timeoutMs: left }).catch((e) => { if (e.code !== 'timeout') throw e; });
    const d = s && distance(s, opt.group, p);
    if (d === null || d === undefined) continue;
    best = Math.min(best, d);
    if (d <= opt.radius) return { tick: s.tick, d };
  }
  throw new Error(`waypoint ${fmt(p)} not reached in ${opt.timeout} s (closest ${best.toFixed(1)} units)`);
}

const fmt = (p) => `(${p.x.toFixed(0)}, ${p.y.toFixed(0)})`;

async function tour(c, opt, undo) {
  const { world: w, snapshot_hz: hz, values, groups } = c.welcome;
  const g = opt.group;
  console.log(`connected to ${opt.url}: world ${w.width} x ${w.height} ${w.edges}, ${hz} snapshots/s of version ${c.protocol}`);
  const mine = { own_group_only: 1, max_speed: opt.speed, arrive_radius: 40 };
  const before = { ...values, ...(groups && groups[g]) };
  undo.push(async () => {
    await c.params({ group: g, ...Object.fromEntries(Object.keys(mine).map((k) => [k, before[k]])) });
    console.log(`group ${g}: parameters restored`);
  });
  await c.params({ group: g, ...mine });
  console.log(`group ${g}: flocks only with itself, max_speed ${opt.speed}, arrive_radius 40`);
  const r = 0.3 * Math.min(w.width, w.height);
  const points = Array.from({ length: opt.waypoints }, (_, k) => ({
    x: w.width / 2 + r * Math.cos((2 * Math.PI * k) / opt.waypoints), y: w.height / 2 + r * Math.sin((2 * Math.PI * k) / opt.waypoints),
  }));
  const spawned = await track(undo, c.spawn({ n: opt.boids, group: g, ...points[0], spread: 40 }),
    async (a) => console.log(`despawned ${(await c.despawn({ n: a.count, group: g })).count} boids of group ${g}`));
  console.log(`spawned ${spawned.count} boids in group ${g} at ${fmt(points[0])}`);
  undo.push(() => c.seekClear({ group: g }));
  const start = Date.now();
  for (let lap = 1; lap <= opt.laps; lap++) {
    const centre = { x: w.width / 2, y: w.height / 2, r: 0.08 * Math.min(w.width, w.height) };
    const { obstacle } = await track(undo, c.obstacleAdd(centre), (a) => c.obstacleRemove({ obstacle: a.obstacle }));
    console.log(`lap ${lap}/${opt.laps}: placed obstacle ${obstacle} at ${fmt(centre)} r ${centre.r.toFixed(0)}`);
    for (let k = 1; k <= opt.waypoints; k++) {
      const p = points[k % opt.waypoints];
      await c.seek({ group: g, ...p });
      const { tick, d } = await reach(c, opt, p);
      console.log(`lap ${lap}/${opt.laps}: reached waypoint ${k}/${opt.waypoints} ${fmt(p)} at tick ${tick}, centroid ${d.toFixed(1)} units away`);
    }
    await undo.pop()(); // the obstacle's removal
    console.log(`lap ${lap}/${opt.laps}: removed obstacle ${obstacle}`);
  }
  console.log(`${opt.laps} lap(s) of ${opt.waypoints} waypoints in ${((Date.now() - start) / 1000).toFixed(1)} s`);
}

/**
 * Pushes onto `undo` the reversal of what command `sent` does, to run once
 * it is acked (also if it is still in flight when the script ends); returns `sent`.
 */
function track(undo, sent, reverse) {
  undo.push(async () => {
    const ack = await sent.catch(() => null);
    if (ack) await reverse(ack);
  });
  return sent;
}

/** Runs the undo steps, newest first, each once; reports what fails and goes on. */
async function cleanUp(undo) {
  while (undo.length) {
    await undo.pop()().catch((e) => console.error(`steer.mjs: cleaning up: ${e.message}`));
  }
}

async function main() {
  let opt;
  try {
    opt = options();
  } catch (e) {
    (e.status === 0 ? console.log : console.error)(e.status === undefined ? `steer.mjs: ${e.message}\n${USAGE}` : e.message);
    return e.status ?? 2;
  }
  let c;
  try {
    c = await connect(opt.url, { timeoutMs: 10000, tls: opt.insecure ? { rejectUnauthorized: false } : undefined });
  } catch (e) {
    console.error(`steer.mjs: ${e.message}`);
    return 3;
  }
  const undo = [];
  const done = (status) => cleanUp(undo).then(() => c.close()).then(() => status);
  process.once('SIGINT', () => done(130).then((status) => process.exit(status)));
  try {
    await tour(c, opt, undo);
    return await done(0);
  } catch (e) {
    console.error(`steer.mjs: ${e.message}`);
    return done(1);
  }
}

process.exitCode = await main();
