#!/usr/bin/env node
// Steer a flock group around a circle of waypoints on a flockd server.
//
// A scripting example for the flockd wire protocol (proto/PROTOCOL.md) on
// Node.js with the `ws` package (npm ci in this folder):
//
//   1. connect to /ws offering the flock.v2 and flock.v1 subprotocols and
//      read the welcome; snapshots of either version are decoded with the
//      viewer's decoders (client/web/js, plain ES modules that run in node
//      too), which check every version 2 frame; a frame they refuse is
//      skipped and a key frame asked for (the `keyframe` command);
//   2. give one group its own parameters and spawn boids into it;
//   3. for each lap, place an obstacle in the middle of the circle, seek each
//      waypoint in turn and move on once the group's centroid (wrap-aware on
//      a torus world) is within --radius of it, then remove the obstacle;
//   4. clean up (clear the target, despawn the boids) and exit 0.
//
// Every command carries an id and waits for its ack; an error reply, a lost
// connection or a waypoint not reached within --timeout seconds ends the
// script with a non-zero status (1 failed, 2 usage, 3 cannot connect).
//
//   node client/examples/steer.mjs --url ws://127.0.0.1:8080/ws --laps 2

import process from "node:process";
import { parseArgs } from "node:util";
import WebSocket from "ws";

import { decodeAnySnapshot, SUBPROTOCOL } from "../web/js/decoder.js";
import { FrameDecoderV2, SUBPROTOCOL_V2 } from "../web/js/decoder_v2.js";

// After a refused frame, ask for a key frame at most this often.
const KEYFRAME_EVERY_MS = 500;

/** Mean of coordinates on one axis; on a torus the circular mean. */
function axisMean(values, size, wrap) {
  if (!wrap) return values.reduce((a, b) => a + b, 0) / values.length;
  let sx = 0, sy = 0;
  for (const v of values) {
    sx += Math.cos((2 * Math.PI * v) / size);
    sy += Math.sin((2 * Math.PI * v) / size);
  }
  const m = (Math.atan2(sy, sx) / (2 * Math.PI)) * size;
  return ((m % size) + size) % size;
}

function axisDistance(a, b, size, wrap) {
  const d = Math.abs(a - b);
  return wrap ? Math.min(d, size - d) : d;
}

function centroid(snap, group) {
  const pts = [];
  for (let i = 0; i < snap.boidCount; i++) {
    if (snap.group[i] === group) pts.push({ x: snap.x[i], y: snap.y[i] });
  }
  if (pts.length === 0) return null;
  return {
    x: axisMean(pts.map((p) => p.x), snap.width, snap.wrap),
    y: axisMean(pts.map((p) => p.y), snap.height, snap.wrap),
  };
}

class Failure extends Error {}

/** One connection: commands with ids and acks, the newest snapshot. */
class Flock {
  constructor(ws, welcome) {
    this.ws = ws;
    this.welcome = welcome;
    this.nextId = 1;
    this.pending = new Map();
    this.snapshotWaiters = [];
    this.closed = false;
    this.decoder = new FrameDecoderV2();
    this.keyframeAt = -Infinity;
    ws.on("message", (data, isBinary) => this.onMessage(data, isBinary));
    ws.on("close", () => this.onClose());
  }

  static connect(url, timeoutS, insecure = false) {
    return new Promise((resolve, reject) => {
      // insecure: a wss:// server's certificate need not verify (self-signed).
      const ws = new WebSocket(url, [SUBPROTOCOL_V2, SUBPROTOCOL],
        { perMessageDeflate: false, rejectUnauthorized: !insecure });
      const timer = setTimeout(() => {
        ws.terminate();
        reject(new Failure(`no welcome within ${timeoutS} s`));
      }, timeoutS * 1000);
      ws.once("error", (e) => {
        clearTimeout(timer);
        reject(e);
      });
      ws.once("message", (data, isBinary) => {
        clearTimeout(timer);
        const welcome = isBinary ? null : JSON.parse(data.toString());
        if (!welcome || welcome.type !== "welcome" || ![1, 2].includes(welcome.protocol)) {
          ws.terminate();
          reject(new Failure("the first message was not a welcome of version 1 or 2"));
          return;
        }
        ws.on("error", () => {}); // reported through "close"
        resolve(new Flock(ws, welcome));
      });
    });
  }

  onMessage(data, isBinary) {
    if (isBinary) {
      decodeAnySnapshot(data, this.decoder).then((snap) => {
        for (const w of this.snapshotWaiters.splice(0)) w.resolve(snap);
      }, (e) => this.refused(e));
      return;
    }
    const reply = JSON.parse(data.toString());
    if (reply.type === "welcome") this.decoder.forget(); // a new stream starts on a key frame
    const p = this.pending.get(reply.id);
    if (p && (reply.type === "ack" || reply.type === "error")) {
      this.pending.delete(reply.id);
      p.resolve(reply);
    }
  }

  /** A frame the decoder refused is skipped; a key frame is asked for. */
  refused(e) {
    console.error(`snapshot refused (${e.code ?? e.message}); asking for a key frame`);
    const now = performance.now();
    if (this.closed || now - this.keyframeAt < KEYFRAME_EVERY_MS) return;
    this.keyframeAt = now;
    this.command("keyframe").catch(() => {}); // its reply or a lost connection: nothing to do
  }

  onClose() {
    this.closed = true;
    for (const p of this.pending.values()) p.reject(new Failure("connection closed"));
    for (const w of this.snapshotWaiters.splice(0)) w.reject(new Failure("connection closed"));
    this.pending.clear();
  }

  /** Sends a command and resolves with its ack; rejects on an error reply. */
  async command(cmd, args = {}, timeoutS = 5) {
    if (this.closed) throw new Failure("connection closed");
    const id = this.nextId++;
    const reply = await withTimeout(new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.ws.send(JSON.stringify({ cmd, id, ...args }));
    }), timeoutS, `${cmd}: no reply within ${timeoutS} s`);
    if (reply.type === "error") {
      throw new Failure(`${cmd} refused: ${reply.code}: ${reply.message ?? ""}`);
    }
    return reply;
  }

  nextSnapshot(timeoutS) {
    if (this.closed) return Promise.reject(new Failure("connection closed"));
    return withTimeout(new Promise((resolve, reject) => {
      this.snapshotWaiters.push({ resolve, reject });
    }), timeoutS, `no snapshot within ${timeoutS} s`);
  }

  close() {
    return new Promise((resolve) => {
      if (this.closed) return resolve();
      this.ws.once("close", resolve);
      this.ws.close(1000);
    });
  }
}

function withTimeout(promise, seconds, message) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Failure(message)), seconds * 1000);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** count points on a circle around the world's centre, counter-clockwise. */
function waypoints(width, height, count) {
  const cx = width / 2, cy = height / 2, r = 0.3 * Math.min(width, height);
  return Array.from({ length: count }, (_, k) => ({
    x: cx + r * Math.cos((2 * Math.PI * k) / count),
    y: cy + r * Math.sin((2 * Math.PI * k) / count),
  }));
}

/** Waits until the group's centroid is within radius of point. */
async function reach(flock, group, point, radius, timeoutS) {
  const deadline = Date.now() + timeoutS * 1000;
  let best = Infinity;
  while (Date.now() < deadline) {
    const snap = await flock.nextSnapshot(timeoutS);
    const c = centroid(snap, group);
    if (!c) continue;
    const d = Math.hypot(axisDistance(c.x, point.x, snap.width, snap.wrap),
                         axisDistance(c.y, point.y, snap.height, snap.wrap));
    best = Math.min(best, d);
    if (d <= radius) return { tick: snap.tick, distance: d };
  }
  throw new Failure(`waypoint (${point.x.toFixed(0)}, ${point.y.toFixed(0)}) not reached in ` +
                    `${timeoutS} s (closest ${best.toFixed(1)} units)`);
}

const fmt = (p) => `(${p.x.toFixed(0)}, ${p.y.toFixed(0)})`;

async function tour(flock, opt) {
  const w = flock.welcome.world;
  const g = opt.group;
  console.log(`connected to ${opt.url}: world ${w.width} x ${w.height} ${w.edges}, ` +
              `${flock.welcome.snapshot_hz} snapshots/s of version ${flock.welcome.protocol}`);
  await flock.command("params", { group: g, own_group_only: 1, max_speed: opt.speed,
                                  arrive_radius: 40 });
  console.log(`group ${g}: flocks only with itself, max_speed ${opt.speed}, arrive_radius 40`);
  const points = waypoints(w.width, w.height, opt.waypoints);
  let ack = await flock.command("spawn", { n: opt.boids, group: g, x: points[0].x,
                                           y: points[0].y, spread: 40 });
  console.log(`spawned ${ack.count} boids in group ${g} at ${fmt(points[0])}`);
  const start = Date.now();
  for (let lap = 1; lap <= opt.laps; lap++) {
    const centre = { x: w.width / 2, y: w.height / 2 };
    const r = 0.08 * Math.min(w.width, w.height);
    ack = await flock.command("obstacle_add", { x: centre.x, y: centre.y, r });
    const obstacle = ack.obstacle;
    console.log(`lap ${lap}/${opt.laps}: placed obstacle ${obstacle} at ${fmt(centre)} ` +
                `r ${r.toFixed(0)}`);
    for (let k = 0; k < opt.waypoints; k++) {
      const p = points[(k + 1) % opt.waypoints];
      await flock.command("seek", { group: g, x: p.x, y: p.y });
      const { tick, distance } = await reach(flock, g, p, opt.radius, opt.timeout);
      console.log(`lap ${lap}/${opt.laps}: reached waypoint ${k + 1}/${opt.waypoints} ` +
                  `${fmt(p)} at tick ${tick}, centroid ${distance.toFixed(1)} units away`);
    }
    await flock.command("obstacle_remove", { obstacle });
    console.log(`lap ${lap}/${opt.laps}: removed obstacle ${obstacle}`);
  }
  await flock.command("seek_clear", { group: g });
  ack = await flock.command("despawn", { n: opt.boids, group: g });
  console.log(`despawned ${ack.count} boids; ${opt.laps} lap(s) of ${opt.waypoints} waypoints ` +
              `in ${((Date.now() - start) / 1000).toFixed(1)} s`);
}

function parseOptions() {
  const usage = "usage: steer.mjs [--url URL] [--laps N] [--waypoints N] [--group G] " +
                "[--boids N] [--speed V] [--radius R] [--timeout S] [--insecure]";
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        url: { type: "string", default: "ws://127.0.0.1:8080/ws" },
        laps: { type: "string", default: "1" },
        waypoints: { type: "string", default: "6" },
        group: { type: "string", default: "1" },
        boids: { type: "string", default: "40" },
        speed: { type: "string", default: "160" },
        radius: { type: "string", default: "60" },
        timeout: { type: "string", default: "30" },
        insecure: { type: "boolean", default: false },
        help: { type: "boolean", short: "h", default: false },
      },
    }));
  } catch (e) {
    console.error(`steer.mjs: ${e.message}\n${usage}`);
    process.exit(2);
  }
  if (values.help) {
    console.log(`${usage}\nSteers a flockd group around a circle of waypoints ` +
                "(defaults: 1 lap, 6 waypoints, group 1, 40 boids, radius 60, timeout 30 s).");
    process.exit(0);
  }
  const opt = { url: values.url, insecure: values.insecure };
  for (const k of ["laps", "waypoints", "group", "boids", "speed", "radius", "timeout"]) {
    opt[k] = Number(values[k]);
  }
  if (!(opt.laps >= 1 && opt.waypoints >= 2 && opt.group >= 0 && opt.group <= 255 &&
        opt.boids >= 1 && opt.speed > 0 && opt.radius > 0 && opt.timeout > 0)) {
    console.error(`steer.mjs: bad option value\n${usage}`);
    process.exit(2);
  }
  return opt;
}

async function main() {
  const opt = parseOptions();
  let flock;
  try {
    flock = await Flock.connect(opt.url, opt.timeout, opt.insecure);
  } catch (e) {
    console.error(`steer.mjs: cannot connect to ${opt.url}: ${e.message}`);
    return 3;
  }
  try {
    await tour(flock, opt);
    return 0;
  } catch (e) {
    console.error(`steer.mjs: ${e.message}`);
    return 1;
  } finally {
    await flock.close();
  }
}

process.exitCode = await main();
