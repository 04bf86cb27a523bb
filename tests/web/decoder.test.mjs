// The version 1 snapshot decoder of the client library
// (client/js/src/decoder.js), which the viewer runs on, against the golden
// vectors in proto/vectors/ (the same files the C codec is tested with).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';

import {
  decodeSnapshot, headingToRadians, dequantize, SnapshotError,
} from '../../client/js/src/decoder.js';
import {
  readVector, readVectorJson, hexToBytes, encodeSnapshot, randomBoids,
} from './snapshot_fixture.mjs';

const index = readVectorJson('index.json');
const invalid = readVectorJson(index.invalid_snapshots);

const HEADER_FIELDS = {
  magic: 'magic', version: 'version', type: 'type', flags: 'flags', paused: 'paused',
  wrap: 'wrap', tick: 'tick', server_time_us: 'serverTimeUs', width: 'width', height: 'height',
  epoch: 'epoch', boid_count: 'boidCount', group_run_count: 'groupRunCount',
  obstacle_count: 'obstacleCount', target_count: 'targetCount', size: 'size',
};

function checkAgainstVector(snap, want) {
  for (const [jsonName, field] of Object.entries(HEADER_FIELDS)) {
    assert.equal(snap[field], want.header[jsonName], `header.${jsonName}`);
  }
  assert.equal(snap.tickBig, BigInt(want.header.tick));
  assert.equal(snap.serverTimeUsBig, BigInt(want.header.server_time_us));
  assert.equal(snap.wrap, want.world.edges === 'wrap');
  assert.deepEqual(snap.runs, want.runs);
  assert.equal(snap.x.length, want.boids.length);
  want.boids.forEach((b, i) => {
    const got = {
      group: snap.group[i], qx: snap.qx[i], qy: snap.qy[i], heading: snap.heading[i],
      x: snap.x[i], y: snap.y[i], heading_rad: headingToRadians(snap.heading[i]),
    };
    const { source, ...exact } = b;
    assert.deepEqual(got, exact, `boid ${i}`);
  });
  assert.deepEqual(snap.obstacles, want.obstacles);
  assert.deepEqual(snap.targets, want.targets);
}

for (const name of index.snapshots) {
  test(`decoding ${name}.bin should reproduce every field of ${name}.json`, () => {
    const want = readVectorJson(`${name}.json`);
    const bin = readVector(want.bin);
    assert.equal(bin.length, want.header.size);
    checkAgainstVector(decodeSnapshot(bin), want);
  });

  test(`decoding ${name}.bin from an ArrayBuffer or an offset view should give the same result`, () => {
    const want = readVectorJson(`${name}.json`);
    const bin = readVector(want.bin);
    const copy = new Uint8Array(bin.length);
    copy.set(bin);
    checkAgainstVector(decodeSnapshot(copy.buffer), want);
    const padded = new Uint8Array(bin.length + 7);
    padded.set(bin, 3);
    checkAgainstVector(decodeSnapshot(padded.subarray(3, 3 + bin.length)), want);
  });

  test(`every strict prefix of ${name}.bin should be refused as truncated`, () => {
    const bin = new Uint8Array(readVector(`${name}.bin`));
    for (let len = 0; len < bin.length; len++) {
      assert.throws(() => decodeSnapshot(bin.subarray(0, len)),
        (e) => e instanceof SnapshotError && e.code === 'truncated', `length ${len}`);
    }
  });
}

for (const c of invalid) {
  test(`the invalid vector ${c.name} (${c.description}) should be refused with ${c.error}`, () => {
    assert.throws(() => decodeSnapshot(hexToBytes(c.hex)),
      (e) => e instanceof SnapshotError && e.code === c.error,
      `expected ${c.error}`);
  });
}

test('dequantize should give the centre of the quantum', () => {
  assert.equal(dequantize(0, 1600), 0.5 * 1600 / 65536);
  assert.equal(dequantize(65535, 1000), 65535.5 * 1000 / 65536);
});

test('headingToRadians should point 0 along +x, 64 along +y, 128 along -x', () => {
  assert.equal(headingToRadians(0), 0);
  assert.equal(headingToRadians(64), Math.PI / 2);
  assert.equal(headingToRadians(128), Math.PI);
});

test('a synthetic snapshot with 10,000 boids should have the size of §4.7 and round-trip', () => {
  const boids = randomBoids(10000, 1600, 1000, 4);
  const obstacles = Array.from({ length: 8 }, (_, i) => ({ id: i + 1, x: 100 * i, y: 50, r: 10 }));
  const targets = Array.from({ length: 4 }, (_, g) => ({ group: g, x: 10 * g, y: 20 }));
  const buf = encodeSnapshot({ boids, obstacles, targets, tick: 5, epoch: 3 });
  assert.equal(buf.byteLength, 50228);
  const s = decodeSnapshot(buf);
  assert.equal(s.boidCount, 10000);
  assert.deepEqual(s.runs.map((r) => r.group), [0, 1, 2, 3]);
  for (let i = 0; i < 10000; i += 997) {
    assert.ok(Math.abs(s.x[i] - boids[i].x) <= 1600 / 65536, `x of boid ${i}`);
    assert.ok(Math.abs(s.y[i] - boids[i].y) <= 1000 / 65536, `y of boid ${i}`);
    assert.equal(s.group[i], boids[i].group);
  }
  assert.equal(encodeSnapshot({ boids: randomBoids(10000) }).byteLength, 50049);
});

test('decoding a 10,000-boid snapshot should take well under a frame', () => {
  const buf = encodeSnapshot({ boids: randomBoids(10000, 1600, 1000, 4) });
  for (let i = 0; i < 20; i++) decodeSnapshot(buf); // warm up the JIT
  const rounds = 200;
  const t0 = performance.now();
  for (let i = 0; i < rounds; i++) decodeSnapshot(buf);
  const ms = (performance.now() - t0) / rounds;
  console.log(`decode: ${ms.toFixed(3)} ms per 10,000-boid snapshot (node ${process.version})`);
  assert.ok(ms < 8, `decode took ${ms} ms`);
});
