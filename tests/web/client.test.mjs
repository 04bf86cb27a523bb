// The client library's pieces that need no server: typed snapshots
// (velocities within an epoch, the shorter way round a torus, a group's
// boids), the URL it connects to, the reconnect schedule and the bounded
// snapshot queue of an iterator.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
  Snapshot, socketUrl, backoffDelay, CLIENT_BACKOFF, decodeSnapshot,
} from '../../client/js/src/index.js';
import { SnapshotQueue } from '../../client/js/src/snapshot.js';
import { encodeSnapshot } from './snapshot_fixture.mjs';

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
