// Raw deflate bodies of version 2 frames (proto/PROTOCOL.md §11.6): one
// complete stream of exactly the body's bytes that inflates to exactly
// plain_len bytes, never more kept than that. In node the stream is
// inflated by node:zlib at once (it reports how much input the stream
// took, so bytes after its end are seen); elsewhere by the platform's
// DecompressionStream('deflate-raw'). Pure otherwise: no DOM, no globals
// but the memo of which way this platform inflates.

import { SnapshotError, fail } from './decoder.js';

// node:zlib where it exists (node), found out once; null in browsers.
let zlib;
let zlibLoading = null;

function loadZlib() {
  if (!zlibLoading) {
    const node = typeof process === 'object' && process !== null && process.versions && process.versions.node;
    zlibLoading = (node ? import('node:zlib').catch(() => null) : Promise.resolve(null))
      .then((z) => { zlib = z && (z.default || z); });
  }
  return zlibLoading;
}

function inflateWithZlib(body, plainLen) {
  let out;
  try {
    // One byte more than allowed is enough to tell a body that inflates past plain_len.
    out = zlib.inflateRawSync(body, { info: true, maxOutputLength: plainLen + 1 });
  } catch (e) {
    if (e && e.code === 'ERR_BUFFER_TOO_LARGE') fail('bad_body', `the body inflates past plain_len ${plainLen}`);
    fail('bad_body', `not a raw deflate stream: ${e && e.message}`);
  }
  if (out.engine.bytesWritten !== body.length) fail('bad_body', 'bytes follow the end of the deflate stream');
  return new Uint8Array(out.buffer.buffer, out.buffer.byteOffset, out.buffer.length);
}

// Inflates body, failing past `limit` bytes; keeps them only if `keep`.
async function inflateStream(body, limit, keep) {
  const ds = new DecompressionStream('deflate-raw');
  const writer = ds.writable.getWriter();
  writer.write(body).catch(() => {});
  writer.close().catch(() => {});
  const reader = ds.readable.getReader();
  const out = keep ? new Uint8Array(limit) : null;
  let n = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return keep ? out.subarray(0, n) : n;
    if (n + value.length > limit) {
      reader.cancel().catch(() => {});
      fail('bad_body', `the body inflates past plain_len ${limit}`);
    }
    if (keep) out.set(value, n);
    n += value.length;
  }
}

async function isCompleteStream(body, limit) {
  try {
    await inflateStream(body, limit, false);
    return true;
  } catch {
    return false;
  }
}

// Whether this platform's DecompressionStream refuses bytes after the end
// of a stream (browsers do; some others ignore them). Found out once.
let junkRefused = null;

function refusesJunk() {
  if (!junkRefused) {
    // An empty final stored block, then one byte more.
    junkRefused = isCompleteStream(Uint8Array.of(1, 0, 0, 0xff, 0xff, 0), 1).then((ok) => !ok);
  }
  return junkRefused;
}

async function inflateWithStreams(body, plainLen) {
  const whole = inflateStream(body, plainLen, true).catch((e) => {
    if (e instanceof SnapshotError) throw e;
    fail('bad_body', `not a raw deflate stream: ${e.message}`);
  });
  // Where bytes after the end are ignored, the body without its last byte
  // must fail to inflate, or the stream ended early.
  const shorter = refusesJunk().then((refused) => !refused && body.length > 0
    && isCompleteStream(body.subarray(0, body.length - 1), plainLen));
  const [plain, endsEarly] = await Promise.all([whole, shorter]);
  if (endsEarly) fail('bad_body', 'bytes follow the end of the deflate stream');
  return plain;
}

/**
 * §11.6: inflates a raw deflate body (a Uint8Array) that must be one
 * complete stream of exactly body.length bytes holding exactly plainLen
 * bytes. Resolves to a new Uint8Array the caller owns; rejects with
 * SnapshotError('bad_body') otherwise. `streams`: inflate as browsers do
 * (DecompressionStream) even in node, for tests.
 */
export async function inflateBody(body, plainLen, { streams = false } = {}) {
  if (zlib === undefined) await loadZlib();
  const plain = zlib && !streams ? inflateWithZlib(body, plainLen) : await inflateWithStreams(body, plainLen);
  if (plain.length !== plainLen) fail('bad_body', `the body inflates to ${plain.length} bytes, not ${plainLen}`);
  return plain;
}
