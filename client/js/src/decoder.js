// Snapshot decoder for the flockd wire protocol, version 1
// (proto/PROTOCOL.md §4). Pure: no DOM, no I/O, no globals; runs in the
// browser and in node. decodeSnapshot() either returns the whole snapshot
// or throws a SnapshotError whose `code` is the §4.6 status name
// (truncated, bad_magic, bad_version, bad_type, bad_value, bad_length);
// it never reads outside the message, whatever the counts say.

export const PROTOCOL_VERSION = 1;
export const SUBPROTOCOL = 'flock.v1';
export const SNAPSHOT_TYPE = 1;
export const HEADER_SIZE = 44;
export const FLAG_PAUSED = 0x01;
export const FLAG_WRAP = 0x02;

// Sizes and limits of the sections both versions carry (§4.3, §4.5); the
// version 2 decoder (decoder_v2.js) reads them with the functions below.
export const RUN_SIZE = 5;
export const OBSTACLE_SIZE = 16;
export const TARGET_SIZE = 9;
const BOID_SIZE = 5;
const MAX_RUNS = 256;
const MAX_TARGETS = 256;

export class SnapshotError extends Error {
  constructor(code, message) {
    super(`${code}: ${message}`);
    this.name = 'SnapshotError';
    this.code = code;
  }
}

/** Throws SnapshotError(code, message). */
export function fail(code, message) {
  throw new SnapshotError(code, message);
}

// §4.4: the centre of the quantum, computed as (q + 0.5) * S / 65536 in
// that order so the result is the binary64 value the vectors list.
export function dequantize(q, size) {
  return ((q + 0.5) * size) / 65536;
}

// §4.4: radians in [0, 2 pi); 0 along +x, 64 along +y.
export function headingToRadians(h) {
  return (h * Math.PI) / 128;
}

/** The bytes of `buf` (an ArrayBuffer or a typed array) as a Uint8Array, not copied. */
export function asBytes(buf) {
  if (buf instanceof Uint8Array) return buf;
  if (buf instanceof ArrayBuffer) return new Uint8Array(buf);
  if (ArrayBuffer.isView(buf)) return new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
  throw new TypeError('snapshot decoder: expected an ArrayBuffer or a typed array');
}

/**
 * Steps 1-4 of §4.6 (§11.7 for version 2): length, magic, `version` and
 * the type byte among `types`; then that the header's `headerSize` bytes
 * are there.
 */
export function checkStart(bytes, version, types, headerSize) {
  const len = bytes.length;
  if (len < 4) fail('truncated', `${len} bytes, a snapshot has at least ${headerSize}`);
  if (bytes[0] !== 0x46 || bytes[1] !== 0x4b) fail('bad_magic', 'magic is not "FK"');
  if (bytes[2] !== version) fail('bad_version', `version ${bytes[2]}`);
  if (!types.includes(bytes[3])) fail('bad_type', `type ${bytes[3]}`);
  if (len < headerSize) fail('truncated', `${len} bytes, the header has ${headerSize}`);
}

/**
 * The fields of the first 44 bytes, laid out alike in both versions
 * (§4.2), with the checks of §4.6 step 6 on them; `reservedZero` says
 * whether the version's reserved bytes are all zero.
 */
export function readCommonHeader(bytes, view, reservedZero) {
  const h = {
    magic: 'FK',
    version: bytes[2],
    type: bytes[3],
    flags: bytes[4],
    groupRunCount: view.getUint16(6, true),
    tickBig: view.getBigUint64(8, true),
    serverTimeUsBig: view.getBigUint64(16, true),
    width: view.getFloat32(24, true),
    height: view.getFloat32(28, true),
    epoch: view.getUint32(32, true),
    boidCount: view.getUint32(36, true),
    obstacleCount: view.getUint16(40, true),
    targetCount: view.getUint16(42, true),
  };
  if (h.flags & ~(FLAG_PAUSED | FLAG_WRAP)) fail('bad_value', `unknown flag bits 0x${h.flags.toString(16)}`);
  if (!reservedZero) fail('bad_value', 'reserved bytes are not zero');
  if (!(Number.isFinite(h.width) && h.width > 0)) fail('bad_value', `width ${h.width}`);
  if (!(Number.isFinite(h.height) && h.height > 0)) fail('bad_value', `height ${h.height}`);
  if (h.groupRunCount > MAX_RUNS) fail('bad_value', `group_run_count ${h.groupRunCount}`);
  if (h.targetCount > MAX_TARGETS) fail('bad_value', `target_count ${h.targetCount}`);
  return h;
}

/** What a decoded snapshot of either version says of itself besides its sections. */
export function headerSummary(h) {
  return {
    tick: Number(h.tickBig),
    serverTimeUs: Number(h.serverTimeUsBig),
    paused: (h.flags & FLAG_PAUSED) !== 0,
    wrap: (h.flags & FLAG_WRAP) !== 0,
  };
}

/** §4.4: the decoded positions of quantized coordinates, as binary64 arrays. */
export function dequantizeAll(qx, qy, width, height) {
  const n = qx.length;
  const x = new Float64Array(n);
  const y = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    x[i] = ((qx[i] + 0.5) * width) / 65536;
    y[i] = ((qy[i] + 0.5) * height) / 65536;
  }
  return { x, y };
}

// Step 1-6 of §4.6; returns the header fields.
function readHeader(bytes, view) {
  checkStart(bytes, PROTOCOL_VERSION, [SNAPSHOT_TYPE], HEADER_SIZE);
  return readCommonHeader(bytes, view, bytes[5] === 0);
}

/** Step 9, runs at `off`: fills `group` (one entry per boid) and returns the runs. */
export function readRuns(bytes, view, h, off, group) {
  const runs = new Array(h.groupRunCount);
  let sum = 0;
  let prev = -1;
  for (let i = 0; i < h.groupRunCount; i++, off += RUN_SIZE) {
    const g = bytes[off];
    const count = view.getUint32(off + 1, true);
    if (count < 1) fail('bad_value', `run ${i} is empty`);
    if (g <= prev) fail('bad_value', `run ${i}: groups not ascending`);
    if (sum + count > h.boidCount) fail('bad_value', 'runs add up to more than boid_count');
    group.fill(g, sum, sum + count);
    sum += count;
    prev = g;
    runs[i] = { group: g, count };
  }
  if (sum !== h.boidCount) fail('bad_value', `runs add up to ${sum}, boid_count is ${h.boidCount}`);
  return runs;
}

function readBoids(bytes, h, off) {
  const n = h.boidCount;
  const qx = new Uint16Array(n);
  const qy = new Uint16Array(n);
  const heading = new Uint8Array(n);
  for (let i = 0; i < n; i++, off += BOID_SIZE) {
    qx[i] = bytes[off] | (bytes[off + 1] << 8);
    qy[i] = bytes[off + 2] | (bytes[off + 3] << 8);
    heading[i] = bytes[off + 4];
  }
  return { qx, qy, heading, ...dequantizeAll(qx, qy, h.width, h.height) };
}

/** Step 9, `count` obstacles at `off`. */
export function readObstacles(view, count, off) {
  const out = new Array(count);
  let prev = 0;
  for (let i = 0; i < count; i++, off += OBSTACLE_SIZE) {
    const id = view.getUint32(off, true);
    const x = view.getFloat32(off + 4, true);
    const y = view.getFloat32(off + 8, true);
    const r = view.getFloat32(off + 12, true);
    if (id < 1 || id <= prev) fail('bad_value', `obstacle ${i}: id ${id} not ascending from 1`);
    if (!Number.isFinite(x) || !Number.isFinite(y)) fail('bad_value', `obstacle ${id}: position not finite`);
    if (!(Number.isFinite(r) && r > 0)) fail('bad_value', `obstacle ${id}: radius ${r}`);
    prev = id;
    out[i] = { id, x, y, r };
  }
  return out;
}

/** Step 9, `count` targets at `off`. */
export function readTargets(bytes, view, count, off) {
  const out = new Array(count);
  let prev = -1;
  for (let i = 0; i < count; i++, off += TARGET_SIZE) {
    const group = bytes[off];
    const x = view.getFloat32(off + 1, true);
    const y = view.getFloat32(off + 5, true);
    if (group <= prev) fail('bad_value', `target ${i}: groups not ascending`);
    if (!Number.isFinite(x) || !Number.isFinite(y)) fail('bad_value', `target of group ${group}: not finite`);
    prev = group;
    out[i] = { group, x, y };
  }
  return out;
}

/**
 * Decodes one binary snapshot (ArrayBuffer or typed array).
 *
 * Returns a new object owned by the caller: header fields (tick and
 * serverTimeUs as Numbers, exact below 2^53, with the BigInt originals in
 * tickBig and serverTimeUsBig; paused and wrap from the flags), `runs`, per
 * boid the typed arrays group, qx, qy, heading (quantized, 0..255) and the
 * decoded positions x, y (binary64, §4.4), `obstacles` [{id, x, y, r}] and
 * `targets` [{group, x, y}]. Throws SnapshotError on the first §4.6 check
 * that fails.
 */
export function decodeSnapshot(buf) {
  const bytes = asBytes(buf);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const h = readHeader(bytes, view);
  const runsAt = HEADER_SIZE;
  const boidsAt = runsAt + RUN_SIZE * h.groupRunCount;
  const obstaclesAt = boidsAt + BOID_SIZE * h.boidCount;
  const targetsAt = obstaclesAt + OBSTACLE_SIZE * h.obstacleCount;
  const size = targetsAt + TARGET_SIZE * h.targetCount; // < 2^36: exact in a double
  if (bytes.length < size) fail('truncated', `${bytes.length} bytes, the counts need ${size}`);
  if (bytes.length > size) fail('bad_length', `${bytes.length} bytes, the counts need ${size}`);

  const group = new Uint8Array(h.boidCount);
  const runs = readRuns(bytes, view, h, runsAt, group);
  const obstacles = readObstacles(view, h.obstacleCount, obstaclesAt);
  const targets = readTargets(bytes, view, h.targetCount, targetsAt);
  const boids = readBoids(bytes, h, boidsAt);
  return {
    ...h,
    ...headerSummary(h),
    size,
    runs,
    group,
    ...boids,
    obstacles,
    targets,
  };
}

/**
 * Decodes a snapshot of either version, by its version byte: version 1
 * with decodeSnapshot(), version 2 with `v2`, the FrameDecoderV2
 * (decoder_v2.js) that holds the stream's bases. A promise either way.
 */
export async function decodeAnySnapshot(buf, v2) {
  const bytes = asBytes(buf);
  if (bytes.length >= 3 && bytes[2] === 2 && v2) return v2.decode(bytes);
  return decodeSnapshot(bytes);
}
