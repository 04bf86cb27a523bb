// The client library's pieces that need no server: typed snapshots
// (velocities within an epoch or by id, the shorter way round a torus, a
// group's boids, version 3's parts), the URL it connects to, the reconnect schedule and the bounded
// snapshot queue of an iterator.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
  Snapshot, socketUrl, backoffDelay, CLIENT_BACKOFF, decodeSnapshot,
} from '../../client/js/src/index.js';
import { SnapshotQueue } from '../../client/js/src/snapshot.js';
import { FrameDecoderV3 } from '../../client/js/src/decode_v3.js';
import { encodeSnapshot, readVector } from './snapshot_fixture.mjs';
import * as v3 from './v3_fixture.mjs';

const frame = (tick, boids, { epoch = 1, wrap = true } = {}) => decodeSnapshot(encodeSnapshot({
  tick, epoch, wrap, timeUs: 1700000000000000 + tick * 1000, boids,
}));

test('a snapshot should carry the header, radians and groups', () => {
  const s = new Snapshot(frame(60, [{ group: 0, x: 10, y: 20, heading: 64 }, { group: 2, x: 30, y: 40, heading: 0 },
    { group: 2, x: 50, y: 60, heading: 128 }]), null, 60);
  assert.equal(s.tick, 60);
  assert.equal(s.time, 1700000000.06);
  assert.equal(s.count, 3);
  assert.deepEqual(Array.from(s.heading), [Math.PI / 2, 0, Math.PI]);
  assert.ok(s.vx.every(Number.isNaN) && s.vy.every(Number.isNaN), 'no velocity without a previous snapshot');
  assert.equal(s.ids, null);
  const g = s.of(2);
  assert.equal(g.start, 1);
  assert.equal(g.count, 2);
  assert.deepEqual(Array.from(g.heading), [0, Math.PI]);
  assert.equal(s.of(1).count, 0);
  assert.equal(s.of(7).count, 0);
});

test('velocities should come from the previous snapshot of the same epoch, the short way round a torus', () => {
  const a = new Snapshot(frame(60, [{ group: 0, x: 100, y: 100, heading: 0 }, { group: 0, x: 1598, y: 500, heading: 0 }]), null, 60);
  const b = new Snapshot(frame(63, [{ group: 0, x: 105, y: 100, heading: 0 }, { group: 0, x: 2, y: 500, heading: 0 }]), a, 60);
  const q = 1600 / 65536; // a quantum of x
  assert.ok(Math.abs(b.vx[0] - 100) < 2 * q * 20, `vx ${b.vx[0]}`); // 5 units in 3 ticks at 60 Hz
  assert.ok(Math.abs(b.vx[1] - 80) < 2 * q * 20, `across the seam: vx ${b.vx[1]}`);
  assert.ok(Math.abs(b.vy[0]) < 1e-9);
  const contained = (tick, x, prev) => new Snapshot(frame(tick, [{ group: 0, x, y: 1, heading: 0 }], { wrap: false }), prev, 60);
  const c = contained(63, 2, contained(60, 1598, null));
  assert.ok(c.vx[0] < -30000, 'a contained world has no seam');
  const paused = new Snapshot(frame(63, [{ group: 0, x: 105, y: 100, heading: 0 }, { group: 0, x: 2, y: 500, heading: 0 }]), b, 60);
  assert.equal(paused.vx[0], b.vx[0], 'the same tick again keeps the velocities');
  const other = new Snapshot(frame(66, [{ group: 0, x: 105, y: 100, heading: 0 }, { group: 0, x: 2, y: 500, heading: 0 }],
    { epoch: 2 }), b, 60);
  assert.ok(other.vx.every(Number.isNaN), 'a new epoch knows no velocity');
});

test('socketUrl should make WebSocket URLs with the path /ws', () => {
  assert.equal(socketUrl('ws://127.0.0.1:8080'), 'ws://127.0.0.1:8080/ws');
  assert.equal(socketUrl('http://h:1/'), 'ws://h:1/ws');
  assert.equal(socketUrl('https://h'), 'wss://h/ws');
  assert.equal(socketUrl('wss://h/ws'), 'wss://h/ws');
  assert.equal(socketUrl('ws://h/other'), 'ws://h/other');
  assert.throws(() => socketUrl('ftp://h'), TypeError);
});

test('a script\'s reconnect schedule should double from 0.1 s up to 1 s', () => {
  const mid = () => 0.5;
  assert.deepEqual([1, 2, 3, 4, 5, 9].map((a) => backoffDelay(a, mid, CLIENT_BACKOFF)), [100, 200, 400, 800, 1000, 1000]);
  assert.equal(backoffDelay(5, () => 0, CLIENT_BACKOFF), 800);
  assert.equal(backoffDelay(5, () => 1, CLIENT_BACKOFF), 1200);
});

test('an iterator\'s queue should keep the newest snapshots and count those it dropped', async () => {
  const client = { queues: new Set() };
  const q = new SnapshotQueue(client, 2);
  client.queues.add(q);
  for (const s of [1, 2, 3, 4]) q.push(s);
  assert.equal(q.dropped, 2);
  assert.deepEqual([(await q.next()).value, (await q.next()).value], [3, 4]);
  const waiting = q.next();
  q.push(5);
  assert.equal((await waiting).value, 5);
  await q.return();
  assert.equal(client.queues.size, 0);
  assert.equal((await q.next()).done, true);
  const failed = new SnapshotQueue(client, 2);
  const pending = failed.next();
  failed.end(new Error('gone'));
  await assert.rejects(pending, /gone/);
});

test('a version 3 snapshot should carry ids, velocities by id, its parts placed in the world and their fields', async () => {
  const dec = new FrameDecoderV3();
  const one = new Snapshot(await dec.decode(readVector('v3/view_1.bin')), null, 30, { vscale: 2 });
  const two = new Snapshot(await dec.decode(readVector('v3/view_2.bin')), one, 30, { vscale: 2 });
  assert.equal(two.version, 3);
  assert.equal(two.epoch, null);
  assert.deepEqual(Array.from(two.ids.slice(0, 3)), [1, 2, 40]);
  // Boid 1 moved from qx 10900 to 11800 on a 1200-unit world in 2 ticks at 30 Hz.
  const i = Array.from(two.ids).indexOf(1);
  assert.ok(Math.abs(two.vx[i] - ((900 * 1200) / 65536) * 15) < 1e-9, `vx ${two.vx[i]}`);
  assert.ok(one.vx.every(Number.isNaN), 'no velocity without a previous snapshot');
  assert.deepEqual(two.rect, { x: 0, y: 0, cols: 3, rows: 2 });
  assert.equal(two.parts.length, 6);
  const p = two.parts[4]; // tile (1, 1) of a 3 x 2 grid on 1200 x 800
  assert.deepEqual([p.tx, p.ty, p.x, p.y], [1, 1, (21845 * 1200) / 65536, 400]);
  assert.ok(Math.abs(p.w - 400) < 0.1 && Math.abs(p.h - 400) < 0.1, `${p.w} x ${p.h}`);
  assert.deepEqual(two.runs.map((r) => r.group), [0, 2, 3].filter((g) => two.group.includes(g)));
  const g = two.of(2);
  assert.equal(g.start, null);
  assert.ok(g.count > 0 && g.ids.every((id) => two.group[Array.from(two.ids).indexOf(id)] === 2));
  // Sample 1 with fields: mean velocities in units per second (steps x vscale).
  for (const name of ['view_3.bin', 'view_5.bin', 'view_6.bin', 'view_7.bin']) await dec.decode(readVector(`v3/${name}`));
  const eight = new Snapshot(await dec.decode(readVector('v3/view_8.bin')), two, 30, { vscale: 2 });
  assert.equal(eight.sample, 1);
  assert.deepEqual([eight.parts[2].field.count[0], eight.parts[2].field.vx[0], eight.parts[2].field.vy[0]], [2, 6, 4]);
  const shared = Array.from(eight.ids).filter((id) => two.ids.includes(id));
  assert.ok(shared.length > 0 && shared.every((id) => Number.isFinite(eight.vx[Array.from(eight.ids).indexOf(id)])), 'velocities of the boids seen before');
});

test('version 3 velocities should match boids by id however far apart their ids are', async () => {
  const boids = (dx) => [{ id: 7, qx: 1000 + dx, qy: 50, heading: 0, group: 0 }, { id: 4000000000, qx: 2000, qy: 60 + dx, heading: 0, group: 1 }];
  const dec = new FrameDecoderV3();
  const at = (tick, dx) => dec.decode(v3.frame({ seq: tick, tick, parts: [v3.keyPart(boids(dx))], hash: v3.hashOf(boids(dx)) }));
  const a = new Snapshot(await at(10, 0), null, 10);
  const b = new Snapshot(await at(11, 65), a, 10); // 65 quanta of a 1000-unit world in 0.1 s
  const unit = ((65 * 1000) / 65536) * 10;
  assert.deepEqual(Array.from(b.ids), [7, 4000000000]);
  assert.ok(Math.abs(b.vx[0] - unit) < 1e-9 && Math.abs(b.vy[0]) < 1e-9, `${b.vx[0]}, ${b.vy[0]}`);
  assert.ok(Math.abs(b.vy[1] - unit) < 1e-9 && Math.abs(b.vx[1]) < 1e-9, `${b.vx[1]}, ${b.vy[1]}`);
});
