// The version 3 frame decoder (client/js/src/decode_v3.js) against the
// golden vectors in proto/vectors/v3/ (the same files the C codec is
// tested with): every good frame decodes to what view.json says, every
// frame of invalid.json is refused with its code after the good frames
// named with it, and frames broken here (a body, the length, a base) are
// refused as §12.7 says.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { SnapshotError } from '../../client/js/src/decoder.js';
import {
  FrameDecoderV3, mix, inSample, gridAt, tileHash, plainBound,
} from '../../client/js/src/decode_v3.js';
import { readVector, readVectorJson, hexToBytes } from './snapshot_fixture.mjs';
import {
  frame, keyPart, keyPlain, deltaPart, stayBits, hashOf, varint, BitWriter,
} from './v3_fixture.mjs';

const view = readVectorJson('v3/view.json');
const invalid = readVectorJson('v3/invalid.json');
const file = (name) => new Uint8Array(readVector(`v3/${name}`));

const HEADER = {
  seq: 'seq', tick: 'tick', server_time_us: 'serverTimeUs', flags: 'flags', shift: 'shift', sample: 'sample',
  width: 'width', height: 'height', room_boids: 'roomBoids', cols: 'cols', rows: 'rows', frame_hash: 'frameHash', size: 'size',
};

function checkFrame(f, want) {
  for (const [jsonName, field] of Object.entries(HEADER)) assert.equal(f[field], want[jsonName], `${want.file}: ${jsonName}`);
  assert.deepEqual([f.rect.x, f.rect.y, f.rect.cols, f.rect.rows], want.rect, `${want.file}: rect`);
  assert.equal(f.wrap, (want.flags & 2) !== 0);
  assert.equal(f.paused, (want.flags & 1) !== 0);
  assert.equal(f.fogged, (want.flags & 4) !== 0);
  assert.equal(f.delayed, (want.flags & 8) !== 0);
  assert.deepEqual(f.obstacles, want.obstacles);
  assert.deepEqual(f.targets, want.targets);
  assert.equal(f.parts.length, want.parts.length);
  let n = 0;
  want.parts.forEach((wp, k) => {
    const p = f.parts[k];
    const what = `${want.file} part ${k}`;
    assert.deepEqual([p.tx, p.ty, p.kind, p.start, p.count], [wp.tx, wp.ty, wp.kind, n, wp.id.length], what);
    if (wp.kind === 'delta') assert.deepEqual([p.gap1, p.gap0], [wp.gap1, wp.gap0], what);
    const slice = (a) => Array.from(a.subarray(p.start, p.start + p.count));
    assert.deepEqual(slice(f.id), wp.id, `${what}: id`);
    assert.deepEqual(slice(f.qx), wp.qx, `${what}: qx`);
    assert.deepEqual(slice(f.qy), wp.qy, `${what}: qy`);
    assert.deepEqual(slice(f.heading), wp.heading, `${what}: heading`);
    assert.deepEqual(slice(f.group), wp.group, `${what}: group`);
    assert.equal(p.hash, wp.tile_hash, `${what}: tile hash`);
    if (wp.field) {
      assert.deepEqual({ cells: p.field.cells, count: Array.from(p.field.count), vx: Array.from(p.field.vx), vy: Array.from(p.field.vy) },
        wp.field, `${what}: field`);
    } else {
      assert.equal(p.field, null, `${what}: no field`);
    }
    for (let i = p.start; i < p.start + p.count; i++) {
      assert.equal(f.x[i], ((f.qx[i] + 0.5) * want.width) / 65536);
      assert.equal(f.y[i], ((f.qy[i] + 0.5) * want.height) / 65536);
    }
    n += wp.id.length;
  });
  assert.equal(f.boidCount, n);
  assert.equal(f.id.length, n);
}

const refusedWith = (code) => (e) => e instanceof SnapshotError && e.code === code;

async function decoderAfter(names) {
  const dec = new FrameDecoderV3({ cells: view.field_cells });
  for (const name of names) await dec.decode(file(name));
  return dec;
}

test('decoding view.json\'s frames in order should give every header, part, boid and field it lists', async () => {
  const dec = new FrameDecoderV3({ cells: view.field_cells });
  for (const want of view.frames) checkFrame(await dec.decode(file(want.file)), want);
});

test('a frame of keys only should decode the same on a fresh decoder', async () => {
  const keys = view.frames.filter((f) => f.parts.every((p) => p.kind !== 'delta'));
  for (const want of keys) checkFrame(await new FrameDecoderV3({ cells: view.field_cells }).decode(file(want.file)), want);
});

for (const v of invalid) {
  test(`invalid.json "${v.name}" should be refused with ${v.error}, and the decoder should go on as before`, async () => {
    const dec = await decoderAfter(v.after);
    await assert.rejects(dec.decode(hexToBytes(v.hex)), refusedWith(v.error));
    // A refused frame changes nothing held: the next good frame still decodes.
    const next = view.frames.find((f) => f.seq === 2);
    if (v.after.length === 1 && v.after[0] === 'view_1.bin') checkFrame(await dec.decode(file(next.file)), next);
  });
}

test('a delta whose bases are not held should be refused with no_base', async () => {
  const dec = new FrameDecoderV3();
  await assert.rejects(dec.decode(file('view_2.bin')), refusedWith('no_base'));
  // view_3 names two bases: with only one of them held it is refused too.
  await dec.decode(file('view_1.bin'));
  await assert.rejects(dec.decode(file('view_3.bin')), refusedWith('no_base'));
});

test('a base of another shift or sample should not be taken: no_base', async () => {
  // view_7 is a key at shift 1; a delta on view_6's super-tile at shift 0 named as if it were of view_7.
  const dec = await decoderAfter(['view_1.bin', 'view_2.bin', 'view_3.bin', 'view_5.bin', 'view_6.bin', 'view_7.bin']);
  const b = file('view_6.bin');
  new DataView(b.buffer).setUint32(32, 8, true); // seq 8: gap 1 names view_7 (shift 1)
  await assert.rejects(dec.decode(b), refusedWith('no_base'));
});

test('a byte after the last part should be refused with bad_length', async () => {
  const dec = new FrameDecoderV3();
  await assert.rejects(dec.decode(Uint8Array.of(...file('view_1.bin'), 0)), refusedWith('bad_length'));
});

test('a delta whose padding bits are not zero should be refused with bad_body', async () => {
  const dec = await decoderAfter(['view_1.bin']);
  const two = file('view_2.bin');
  const delta = two.slice();
  delta[delta.length - 1] = 0xff; // the padding of the last part's bits is no longer zero
  await assert.rejects(dec.decode(delta), refusedWith('bad_body'));
  checkFrame(await dec.decode(two), view.frames[1]);
});

test('every frame cut short anywhere should be refused with truncated or bad_value, never read past its end', async () => {
  for (const want of view.frames) {
    const dec = await decoderAfter(view.frames.filter((f) => f.seq < want.seq).map((f) => f.file));
    const b = file(want.file);
    for (let len = 0; len < b.length; len++) {
      await assert.rejects(dec.decode(b.subarray(0, len)), (e) => e instanceof SnapshotError
        && ['truncated', 'bad_value', 'bad_body', 'bad_length', 'hash_mismatch'].includes(e.code), `${want.file} cut to ${len}`);
    }
  }
});

test('mix, the sample test, the grid and the tile hash should follow §12.2 and §12.7', () => {
  assert.equal(mix(0), 0);
  assert.equal(mix(1), 0x514e28b7); // MurmurHash3's fmix32(1)
  assert.ok(inSample(12345, 0));
  for (let id = 1; id < 200; id++) assert.equal(inSample(id, 3), (mix(id) & 7) === 0);
  // Zooming in only adds boids: sample s + 1's boids are among sample s's.
  for (let id = 1; id < 2000; id++) if (inSample(id, 5)) assert.ok(inSample(id, 4));
  assert.deepEqual([gridAt(3, 0), gridAt(3, 1), gridAt(64, 3), gridAt(65, 3)], [3, 2, 8, 9]);
  const none = new Uint8Array(0);
  assert.equal(tileHash(new Uint32Array(0), new Uint16Array(0), new Uint16Array(0), none, none, 0, 0), 0);
  const p = view.frames[0].parts[0];
  assert.equal(tileHash(Uint32Array.from(p.id), Uint16Array.from(p.qx), Uint16Array.from(p.qy),
    Uint8Array.from(p.heading), Uint8Array.from(p.group), 0, p.id.length), p.tile_hash);
  assert.equal(plainBound(10, 4), 16 * 10 + 7 * 16 + 16);
});

// ---- frames written here (v3_fixture.mjs) ---------------------------------------

const BOIDS = [
  { id: 3, qx: 100, qy: 200, heading: 7, group: 0 },
  { id: 9, qx: 30000, qy: 40000, heading: 200, group: 1 },
  { id: 40, qx: 65535, qy: 1, heading: 64, group: 0 },
];
const keyFrame = (boids, opts = {}, hash = hashOf(boids)) => frame({ parts: [keyPart(boids, opts)], hash });

async function refuses(bytes, code, what, before = []) {
  const dec = new FrameDecoderV3();
  for (const b of before) await dec.decode(b);
  await assert.rejects(dec.decode(bytes), refusedWith(code), what);
}

test('a key written here should decode to its boids', async () => {
  const f = await new FrameDecoderV3().decode(keyFrame(BOIDS));
  assert.deepEqual(Array.from(f.id), [3, 9, 40]);
  assert.deepEqual(Array.from(f.qx), [100, 30000, 65535]);
  assert.deepEqual(Array.from(f.group), [0, 1, 0]);
});

test('keys that break §12.7 step 4 should be refused with its codes', async () => {
  const plain = keyPlain(BOIDS);
  const twice = [{ ...BOIDS[0] }, { ...BOIDS[0] }];
  await refuses(keyFrame(twice), 'bad_body', 'an id twice (a difference of 0)');
  await refuses(keyFrame([{ ...BOIDS[0], id: 0 }]), 'bad_body', 'id 0');
  await refuses(keyFrame(BOIDS, { plain: [...plain, 0] }), 'bad_body', 'a byte left over');
  await refuses(keyFrame(BOIDS, { plainLen: plain.length + 1 }), 'bad_body', 'less than plain_len');
  await refuses(keyFrame(BOIDS, { plainLen: plain.length - 1 }), 'bad_body', 'more than plain_len');
  await refuses(keyFrame(BOIDS, { plain: plain.slice(0, -1), plainLen: plain.length - 1 }), 'bad_body', 'a plane cut short');
  await refuses(keyFrame(BOIDS, { count: 0, plain: [], plainLen: 7 * 16 + 17 }), 'bad_value', 'plain_len above its bound');
  await refuses(keyFrame(BOIDS, { field: true }), 'bad_body', 'a field announced, none sent');
  await refuses(frame({ parts: [[3, 0, 0]], hash: 0 }), 'bad_value', 'part kind 3');
  await refuses(frame({ parts: [[4]], hash: 0 }), 'bad_value', 'an empty part with a field');
  await refuses(frame({ parts: [[2, 0x10, 0, 0]], hash: 0 }), 'bad_value', 'a delta with gap1 0');
  await refuses(frame({ parts: [[1, ...varint(1), ...varint(1), ...varint(2000)]], hash: 0 }), 'truncated', 'a body past the end');
  await refuses(frame({ parts: [[1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01]], hash: 0 }), 'truncated', 'a varint of six bytes');
  await assert.rejects(new FrameDecoderV3({ maxBoids: 2 }).decode(keyFrame(BOIDS)), refusedWith('over_limit'));
});

test('a key with a field should decode the field\'s counts and signed velocities', async () => {
  const field = [];
  for (let c = 0; c < 16; c++) field.push(...varint(c * 100), c, 256 - c);
  const f = await new FrameDecoderV3().decode(keyFrame(BOIDS, { field: true, plain: keyPlain(BOIDS, field) }));
  const p = f.parts[0];
  assert.equal(p.field.cells, 4);
  assert.deepEqual(Array.from(p.field.count), Array.from({ length: 16 }, (_, c) => c * 100));
  assert.deepEqual(Array.from(p.field.vx), Array.from({ length: 16 }, (_, c) => c));
  assert.deepEqual(Array.from(p.field.vy), Array.from({ length: 16 }, (_, c) => (c ? -c : 0)));
});

test('a delta written here should keep its stayers, drop its leavers and merge its new boids by id', async () => {
  const dec = new FrameDecoderV3();
  await dec.decode(keyFrame(BOIDS));
  const born = { id: 20, qx: 5, qy: 6, heading: 9, group: 2 };
  const now = [BOIDS[0], born, BOIDS[2]]; // 9 left (index 1 of base 1: a gap of 1), 20 came
  const f = await dec.decode(frame({ seq: 2, parts: [deltaPart({ count: 3, entered: [born], leavers: 1, bits: stayBits([1], 2) })], hash: hashOf(now) }));
  assert.deepEqual(Array.from(f.id), [3, 20, 40]);
  assert.deepEqual(Array.from(f.qx), [100, 5, 65535]);
  assert.deepEqual(Array.from(f.heading), [7, 9, 64]);
  assert.deepEqual(Array.from(f.group), [0, 2, 0]);
  assert.equal(f.parts[0].kind, 'delta');
});

test('deltas that break §12.7 step 4 should be refused with bad_body', async () => {
  const base = [keyFrame(BOIDS)];
  const delta = (d, hash = hashOf(BOIDS)) => frame({ seq: 2, parts: [deltaPart(d)], hash });
  const dec = new FrameDecoderV3();
  await dec.decode(base[0]);
  const ok = await dec.decode(delta({ count: 3, bits: stayBits([], 3) })); // the control: nothing wrong
  assert.deepEqual(Array.from(ok.id), [3, 9, 40]);
  await refuses(delta({ count: 3, leavers: 1, bits: stayBits([3], 2) }), 'bad_body', 'a leaver past base 1', base);
  await refuses(delta({ count: 3, leavers: 4, bits: stayBits([0, 0, 0, 0], 0) }), 'bad_body', 'more leavers than base 1 holds', base);
  await refuses(delta({ count: 4, bits: stayBits([], 3) }), 'bad_body', 'N is not S + E', base);
  await refuses(delta({ count: 4, entered: [{ ...BOIDS[1] }], bits: stayBits([], 3) }), 'bad_body', 'a new boid with a stayer\'s id', base);
  await refuses(delta({ count: 3, bits: [...stayBits([], 3), 0] }), 'bad_body', 'a byte after the bits', base);
  await refuses(delta({ count: 3, bits: stayBits([], 3).slice(0, 3) }), 'bad_body', 'codes past the body', base);
  await refuses(delta({ count: 3, gap1: 2, bits: stayBits([], 3) }), 'no_base', 'a base never sent', base);
});

test('a stayer\'s code past 20 ones should be read as an escape: 20 one bits, then 16 bits', async () => {
  const one = [{ id: 5, qx: 1000, qy: 1000, heading: 3, group: 0 }];
  const dec = new FrameDecoderV3();
  await dec.decode(keyFrame(one));
  const w = new BitWriter();
  w.put(0x321, 12); // kx 1 and 2, ky 3 (context 0 of each is what a one-base stayer uses)
  w.put(0, 12);
  w.rice(2 * 700, 1); // zx: +700, q = 700 >> 1 >= 20
  w.rice(1, 3); // zy: -1
  w.rice(0, 0); // zh: the predicted heading
  const moved = [{ ...one[0], qx: 1700, qy: 999, heading: 0 }]; // heading of (+700, -1): 0
  const f = await dec.decode(frame({ seq: 2, parts: [deltaPart({ count: 1, bits: w.end() })], hash: hashOf(moved) }));
  assert.deepEqual([f.qx[0], f.qy[0], f.heading[0]], [1700, 999, 0]);
});
