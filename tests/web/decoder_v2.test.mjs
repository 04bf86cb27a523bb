// The version 2 frame decoder (client/js/src/decoder_v2.js) against the
// golden vectors in proto/vectors/v2/ (the same files the C codec and the
// Python decoder are tested with), with node's DecompressionStream.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { decodeAnySnapshot, SnapshotError } from '../../client/js/src/decoder.js';
import {
  FrameDecoderV2, OCTANT_TURNS, headingOf, aspectWeights, parseFrameV2, inflateBody, stateHashV2,
} from '../../client/js/src/decoder_v2.js';
import { readVector, readVectorJson, hexToBytes } from './snapshot_fixture.mjs';
import { deflateRawSync } from 'node:zlib';

const index = readVectorJson('v2/index.json');
const invalid = readVectorJson(`v2/${index.invalid}`);
const streams = index.streams.map((name) => readVectorJson(`v2/${name}.json`));

const HEADER_FIELDS = {
  kind: 'kind', seq: 'seq', gap1: 'gap1', gap0: 'gap0', base1: 'base1', base0: 'base0',
  flags: 'flags', paused: 'paused', wrap: 'wrap', tick: 'tick', server_time_us: 'serverTimeUs',
  width: 'width', height: 'height', epoch: 'epoch', boid_count: 'boidCount',
  group_run_count: 'groupRunCount', obstacle_count: 'obstacleCount', target_count: 'targetCount',
  packed_len: 'packedLen', plain_len: 'plainLen', sim_hash: 'simHash', state_hash: 'stateHash',
  size: 'size',
};

function checkFrame(snap, want) {
  for (const [jsonName, field] of Object.entries(HEADER_FIELDS)) {
    assert.equal(snap[field], want.header[jsonName], `header.${jsonName}`);
  }
  assert.deepEqual(snap.runs, want.runs);
  assert.equal(snap.qx.length, want.boids.length);
  want.boids.forEach((b, i) => {
    assert.deepEqual({ group: snap.group[i], qx: snap.qx[i], qy: snap.qy[i], heading: snap.heading[i] },
      b, `boid ${i}`);
    assert.equal(snap.x[i], ((b.qx + 0.5) * want.header.width) / 65536);
  });
  assert.deepEqual(snap.obstacles, want.obstacles);
  assert.deepEqual(snap.targets, want.targets);
}

async function decodeFiles(dec, names) {
  for (const name of names) await dec.decode(readVector(`v2/${name}`));
}

for (const s of streams) {
  test(`decoding the ${s.name} stream in order should reproduce every frame of ${s.name}.json`, async () => {
    const dec = new FrameDecoderV2();
    for (const f of s.frames) checkFrame(await dec.decode(readVector(`v2/${f.bin}`)), f);
  });

  test(`every body of the ${s.name} stream should inflate to its plain bytes, both ways`, async () => {
    for (const f of s.frames) {
      const parsed = parseFrameV2(readVector(`v2/${f.bin}`));
      for (const streams of [false, true]) {
        const plain = await inflateBody(parsed.body, parsed.plainLen, { streams });
        assert.equal(Buffer.from(plain).toString('hex'), f.plain, `${f.bin}, streams ${streams}`);
      }
    }
  });
}

test('both ways of inflating should refuse what §11.6 refuses: junk, a cut stream, too many or too few bytes', async () => {
  const plain = Buffer.from('flock '.repeat(40));
  const body = new Uint8Array(deflateRawSync(plain));
  for (const streams of [false, true]) {
    const ok = await inflateBody(body, plain.length, { streams });
    assert.equal(Buffer.from(ok).toString(), plain.toString());
    const refused = async (bytes, len, what) => assert.rejects(inflateBody(bytes, len, { streams }),
      (e) => e instanceof SnapshotError && e.code === 'bad_body', `${what}, streams ${streams}`);
    await refused(Uint8Array.of(...body, 0), plain.length, 'a byte after the end');
    await refused(body.subarray(0, body.length - 1), plain.length, 'a cut stream');
    await refused(body, plain.length - 1, 'more than plain_len');
    await refused(body, plain.length + 1, 'less than plain_len');
    await refused(Uint8Array.of(0xff, 0xff, 0xff), 10, 'not deflate');
  }
});

test('the octant table and the integer heading should match the vectors', () => {
  assert.deepEqual(Array.from(OCTANT_TURNS), index.octant_turns);
  for (const c of index.heading_of) assert.equal(headingOf(c.x, c.y), c.heading, `${c.x}, ${c.y}`);
  assert.deepEqual(aspectWeights(1600, 1000), [256, 160]);
  assert.deepEqual(aspectWeights(16, 1e6), [1, 256]);
});

test('the state hash should be the one every frame carries', () => {
  const f = streams[0].frames[0];
  const boids = f.boids;
  const hash = stateHashV2(Uint16Array.from(boids, (b) => b.qx), Uint16Array.from(boids, (b) => b.qy),
    Uint8Array.from(boids, (b) => b.heading), Uint8Array.from(boids, (b) => b.group));
  assert.equal(hash, f.header.state_hash);
});

for (const c of invalid) {
  test(`the invalid frame ${c.name} (${c.description}) should be refused with ${c.error}`, async () => {
    const dec = new FrameDecoderV2();
    await decodeFiles(dec, c.before);
    await assert.rejects(dec.decode(hexToBytes(c.hex)),
      (e) => e instanceof SnapshotError && e.code === c.error, `expected ${c.error}`);
  });
}

test('a refused frame should leave the bases as they were', async () => {
  const dec = new FrameDecoderV2();
  await decodeFiles(dec, ['basic_1.bin', 'basic_2.bin']);
  const bin = new Uint8Array(readVector('v2/basic_3.bin'));
  const bodyAt = bin.length - parseFrameV2(bin).packedLen;
  for (let at = bodyAt; at < bin.length; at++) {
    bin[at] ^= 0x55;
    await assert.rejects(dec.decode(bin), SnapshotError, `byte ${at}`);
    bin[at] ^= 0x55;
  }
  assert.ok(dec.has(1) && dec.has(2) && !dec.has(3));
  assert.equal((await dec.decode(bin)).seq, 3);
});

test('every strict prefix of a delta frame should be refused as truncated', async () => {
  const bin = readVector('v2/basic_3.bin');
  for (let len = 0; len < bin.length; len++) {
    assert.throws(() => parseFrameV2(bin.subarray(0, len)),
      (e) => e instanceof SnapshotError && e.code === 'truncated', `length ${len}`);
  }
});

test('frames handed over without waiting should still decode in order', async () => {
  const dec = new FrameDecoderV2();
  const frames = streams[0].frames;
  const all = await Promise.all(frames.map((f) => dec.decode(readVector(`v2/${f.bin}`))));
  all.forEach((snap, k) => checkFrame(snap, frames[k]));
});

test('the decoder should keep four bases and forget them on request', async () => {
  const dec = new FrameDecoderV2();
  await decodeFiles(dec, streams[1].frames.map((f) => f.bin));
  assert.deepEqual([1, 2, 3, 4, 5, 6, 7].map((s) => dec.has(s)), [false, false, false, true, true, true, true]);
  dec.forget();
  await assert.rejects(dec.decode(readVector('v2/epoch_7.bin')), (e) => e.code === 'no_base');
  const small = new FrameDecoderV2({ maxBoids: 5 });
  await assert.rejects(small.decode(readVector('v2/basic_1.bin')), (e) => e.code === 'over_limit');
});

test('decodeAnySnapshot should pick the decoder by the version byte', async () => {
  const v1 = await decodeAnySnapshot(readVector('two_groups.bin'), new FrameDecoderV2());
  assert.equal(v1.version, 1);
  const v2 = await decodeAnySnapshot(readVector('v2/basic_1.bin'), new FrameDecoderV2());
  assert.equal(v2.version, 2);
  assert.equal(v2.kind, 'key');
});
