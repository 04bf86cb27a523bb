// The client library's squads (PROTOCOL.md §13, client/js/src/squads.js):
// §13.3's slot layouts worked out by hand for each shape (and the sizes it
// gives for 200 units), turned and moved; how much of a formation a set of
// units fills; and, over a stand-in WebSocket, that the schema's squad
// commands send what they are given and resolve to the ack or reject with
// the server's refusal, and that squads messages are kept per team,
// emitted and wake waitSquads. (The commands' checks: validate.test.mjs;
// against the real server: tests/e2e/squads.e2e.mjs.)
import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
  connect, slots, slotOffsets, entrySlots, slotFit,
} from '../../client/js/src/index.js';

function near(got, want) {
  assert.equal(got.length, want.length);
  got.forEach(([x, y], i) => {
    assert.ok(Math.abs(x - want[i][0]) < 1e-9 && Math.abs(y - want[i][1]) < 1e-9, `slot ${i}: [${x}, ${y}] not [${want[i]}]`);
  });
}

test('each shape should lay its slots out as §13.3 says', () => {
  assert.deepEqual(slotOffsets('line', 4), [[-1.5, 0], [-0.5, 0], [0.5, 0], [1.5, 0]]);
  // c = ceil(sqrt(40)) = 7: a row of 7, then 3 centred.
  assert.deepEqual(slotOffsets('line', 10), [[-3, 0], [-2, 0], [-1, 0], [0, 0], [1, 0], [2, 0], [3, 0], [-1, 1], [0, 1], [1, 1]]);
  assert.deepEqual(slotOffsets('column', 3), [[0, 0], [0, 1], [0, 2]]);
  // c = ceil(sqrt(ceil(10 / 4))) = 2: five rows of two.
  assert.deepEqual(slotOffsets('column', 10), [0, 1, 2, 3, 4].flatMap((b) => [[-0.5, b], [0.5, b]]));
  assert.deepEqual(slotOffsets('box', 7), [[-1, 0], [0, 0], [1, 0], [-1, 1], [0, 1], [1, 1], [0, 2]]);
  assert.deepEqual(slotOffsets('wedge', 6), [[0, 0], [-1, 1], [0, 1], [1, 1], [-0.5, 2], [0.5, 2]]);
  assert.deepEqual(slotOffsets('none', 5), []);
  assert.deepEqual(slotOffsets('line', 0), []);
  // §13.3: a line of 29 x 7, a box of 15 x 14, a column of 8 x 25, a wedge of 15 rows (the last of 4).
  for (const [shape, cols, rows] of [['line', 29, 7], ['box', 15, 14], ['column', 8, 25], ['wedge', 27, 15]]) {
    const offs = slotOffsets(shape, 200);
    const widest = Math.max(...Array.from({ length: rows }, (_, r) => offs.filter(([, b]) => b === r).length));
    assert.deepEqual([widest, Math.max(...offs.map(([, b]) => b)) + 1], [cols, rows], shape);
  }
  assert.throws(() => slotOffsets('circle', 3), RangeError);
  for (const shape of ['line', 'column', 'wedge', 'box']) {
    for (const n of [1, 2, 10, 37, 200]) {
      const offs = slotOffsets(shape, n);
      assert.equal(new Set(offs.map(String)).size, n, `${shape} of ${n}: one slot a unit, none twice`);
    }
  }
});

test('slots should face the heading with the anchor in the front row', () => {
  near(slots('column', 3, [100, 50], 0, 10), [[100, 50], [90, 50], [80, 50]]);
  near(slots('line', 3, [100, 50], Math.PI / 2, 10), [[110, 50], [100, 50], [90, 50]]);
  near(slots('wedge', 4, [0, 0], Math.PI / 2, 2), [[0, 0], [2, -2], [0, -2], [-2, -2]]);
  const e = { squad: 1, units: 3, do: 'move', formation: 'line', spacing: 12.5, anchor: [612.5, 480], facing: 0 };
  near(entrySlots(e), [[612.5, 467.5], [612.5, 480], [612.5, 492.5]]);
  assert.deepEqual(entrySlots({ ...e, formation: 'none' }), []);
});

test('slotFit should count each unit for one slot, the closest pairs first', () => {
  const s = slots('box', 9, [200, 200], 0.7, 10);
  assert.equal(slotFit(s, s, 1), 1);
  assert.equal(slotFit([[0, 0], [1, 0], [2, 0], [3, 0]], [[0.5, 0]], 0.6), 0.25);
  assert.equal(slotFit(s, s.map(([x, y]) => [x + 6, y]), 5), 0);
  assert.equal(slotFit([[0, 0], [2, 0]], [[0.9, 0], [2.2, 0]], 1), 1);
  assert.equal(slotFit([], [], 1), 1);
  assert.equal(slotFit([[1, 500]], [[1599, 500]], 3), 0, 'no wrap: far apart');
  assert.equal(slotFit([[1, 500]], [[1599, 500]], 3, [1600, 1000]), 1, 'across the seam of a wrapping world');
});

// A WebSocket that welcomes a player of team 2 and answers as `answer` says.
function standIn(answer, sent) {
  return class StandIn {
    constructor() {
      this.protocol = 'flock.v2';
      this.readyState = 1;
      setTimeout(() => this.deliver({
        type: 'welcome', protocol: 2, room: 'war', mode: 'rts', role: 'player', team: 2, tick: 1, tick_hz: 60, snapshot_hz: 20,
        world: { width: 1600, height: 1000, edges: 'wrap', capacity: 16384, max_obstacles: 64 }, limits: { max_message: 4096 }, params: [], values: {},
      }), 0);
    }

    deliver(msg) { this.onmessage({ data: JSON.stringify(msg) }); }

    send(text) {
      const m = JSON.parse(text);
      sent.push(m);
      setTimeout(() => answer(m).forEach((r) => this.deliver(r)), 0);
    }

    close(code = 1000) {
      this.readyState = 3;
      setTimeout(() => this.onclose({ code }), 0);
    }

    addEventListener() {}
  };
}

const squadsMsg = (tick, entry) => ({ type: 'squads', tick, team: 2, squads: [entry] });

function answer(m) {
  if (m.cmd === 'select' && m.ids && m.ids[0] === 999) return [{ type: 'error', id: m.id, code: 'not_found', message: 'select: no live boid 999' }];
  if (m.cmd === 'select') {
    return [{ type: 'ack', id: m.id, tick: 10, squad: 2, units: 37 },
      squadsMsg(10, { squad: 2, units: 37, do: 'none', formation: 'none', spacing: 12.5, anchor: [100, 100], facing: 0 })];
  }
  if (m.cmd === 'formation') {
    return [{ type: 'ack', id: m.id, tick: 11, squad: m.squad },
      squadsMsg(11, { squad: m.squad, units: 37, do: 'none', formation: m.shape, spacing: m.spacing ?? 12.5, anchor: [100, 100], facing: 0 })];
  }
  return [{ type: 'ack', id: m.id, tick: 12, squad: m.squad }];
}

test('the methods should send their command and resolve to the ack or reject with the refusal', async () => {
  const sent = [];
  const c = await connect('ws://stand.in', { WebSocket: standIn(answer, sent), timeoutMs: 2000 });
  const seen = [];
  c.on('squads', (msg) => seen.push(msg.tick));
  assert.deepEqual(await c.select({ rect: [10, 20, 300, 200] }), { tick: 10, squad: 2, units: 37 });
  assert.equal((await c.formation({ squad: 2, shape: 'wedge', spacing: 14 })).squad, 2);
  await c.move({ squad: 2, to: [[800, 500]], queue: true });
  await c.follow({ squad: 2, squad_of: 3 });
  await assert.rejects(c.select({ ids: [999] }), (e) => e.code === 'not_found' && !e.local);
  await assert.rejects(c.select({ all: true, ids: [1] }), (e) => e.code === 'bad_arg' && e.local);
  const msg = await c.waitSquads((m) => m.tick === 11, { timeoutMs: 1000 });
  assert.equal(c.squads.get(2), msg);
  assert.equal(c.squad(2).formation, 'wedge');
  assert.equal(c.squad(2).spacing, 14);
  assert.equal(c.squad(3), null);
  assert.deepEqual(seen, [10, 11]);
  await assert.rejects(c.waitSquads((m) => m.tick > 100, { timeoutMs: 100 }), (e) => e.code === 'timeout');
  await c.close();
  assert.deepEqual(sent.filter((m) => m.cmd !== 'ping').map(({ id, ...m }) => m), [
    { cmd: 'select', rect: [10, 20, 300, 200] },
    { cmd: 'formation', squad: 2, shape: 'wedge', spacing: 14 },
    { cmd: 'move', squad: 2, to: [[800, 500]], queue: true },
    { cmd: 'follow', squad: 2, squad_of: 3 },
    { cmd: 'select', ids: [999] },
  ]);
});
