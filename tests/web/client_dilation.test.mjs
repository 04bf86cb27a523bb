// The client library and a room whose clock runs slow (PROTOCOL.md §6.7,
// client/js/src/client.js), over a stand-in WebSocket: c.dilation is the
// welcome's factor, then each dilation message's for its room, and 1 in a
// room that keeps time; every dilation message reaches the 'dilation'
// event; a message of a type the library does not know reaches 'message'
// and changes nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { connect } from '../../client/js/src/index.js';

const welcome = (room, dilation) => ({
  type: 'welcome', protocol: 2, room, mode: 'sandbox', role: 'viewer', tick: 1, tick_hz: 60, snapshot_hz: 20,
  world: { width: 1600, height: 1000, edges: 'wrap', capacity: 16384, max_obstacles: 64 }, limits: { max_message: 4096 }, params: [], values: {},
  ...(dilation ? { dilation } : {}),
});

// A WebSocket that welcomes a viewer of room 'big', slowed to 0.5, and
// answers a join with the new room's welcome.
class StandIn {
  constructor() {
    this.protocol = 'flock.v2';
    this.readyState = 1;
    setTimeout(() => this.deliver(welcome('big', 0.5)), 0);
  }

  deliver(msg) { this.onmessage({ data: JSON.stringify(msg) }); }

  send(text) {
    const m = JSON.parse(text);
    if (m.cmd === 'join') {
      setTimeout(() => {
        this.deliver({ type: 'ack', id: m.id, tick: 5, room: m.room, role: 'viewer', client: 9 });
        this.deliver(welcome(m.room));
      }, 0);
    } else {
      setTimeout(() => this.deliver({ type: 'ack', id: m.id, tick: 5 }), 0);
    }
  }

  close(code = 1000) {
    this.readyState = 3;
    setTimeout(() => this.onclose({ code }), 0);
  }

  addEventListener() {}
}

test('the dilation should be the welcome\'s, then each message\'s for the room', async () => {
  const c = await connect('ws://stand.in', { WebSocket: StandIn, timeoutMs: 2000 });
  assert.equal(c.dilation, 0.5);
  const seen = [];
  const other = [];
  c.on('dilation', (m) => seen.push(m));
  c.on('message', (m) => other.push(m));
  const ws = c.conn.ws;
  ws.deliver({ type: 'dilation', room: 'big', factor: 0.042, tick_hz: 2.52, snapshot_hz: 2.52 });
  assert.equal(c.dilation, 0.042);
  ws.deliver({ type: 'dilation', room: 'elsewhere', factor: 0.3, tick_hz: 18, snapshot_hz: 5 });
  assert.equal(c.dilation, 0.042, 'another room\'s says nothing of this one');
  ws.deliver({ type: 'something_newer', factor: 0.1 });
  assert.equal(c.dilation, 0.042);
  assert.deepEqual(other.map((m) => m.type), ['something_newer']);
  ws.deliver({ type: 'dilation', room: 'big', factor: 1, tick_hz: 60, snapshot_hz: 20 });
  assert.equal(c.dilation, 1);
  assert.deepEqual(seen.map((m) => [m.room, m.factor]), [['big', 0.042], ['elsewhere', 0.3], ['big', 1]]);
  ws.deliver({ type: 'dilation', room: 'big', factor: 0.25, tick_hz: 15, snapshot_hz: 5 });
  await c.join({ room: 'calm', role: 'viewer' });
  assert.equal(c.dilation, 1, 'a room whose welcome has no dilation keeps time');
  await c.close();
});
