// The client library's room scripts (PROTOCOL.md §14, client/js/src/client.js),
// over a stand-in WebSocket: game() sends its members and resolves to the
// ack or rejects with the script's refusal; the welcome's script is
// roomScript; game messages are kept room-wide (roomGame, gamePhase) and
// per team (teamGames), emitted and wake waitGame; script messages reach
// the 'script' event; another room's welcome forgets them; a join names
// the script of the room it creates and joins it again after a reconnect.
// (The command's checks: validate.test.mjs; against the real server:
// tests/integration/test_game_clients.py, run by hand.)
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { connect } from '../../client/js/src/index.js';

const SCRIPT = { name: 'flockwars', hash: '9b9114032e7b01a1' };

const welcome = (room, script) => ({
  type: 'welcome', protocol: 2, room, mode: 'rts', role: 'player', team: 2, tick: 1, tick_hz: 60, snapshot_hz: 20,
  world: { width: 1600, height: 1000, edges: 'contain', capacity: 16384, max_obstacles: 64 }, limits: { max_message: 4096 }, params: [], values: {},
  ...(script ? { script } : {}),
});

const LOBBY = { phase: 'lobby', round: 1, ready: {}, actions: ['ready', 'unready'] };

// A WebSocket that welcomes a player of team 2 in a scripted room, sends
// the lobby's state and answers as `answer` says.
function standIn(sent) {
  return class StandIn {
    constructor() {
      this.protocol = 'flock.v2';
      this.readyState = 1;
      setTimeout(() => {
        this.deliver(welcome('w1', SCRIPT));
        this.deliver({ type: 'game', tick: 1, state: LOBBY });
      }, 0);
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

function answer(m) {
  if (m.cmd === 'join') {
    return [{ type: 'ack', id: m.id, tick: 5, room: m.room, role: 'player', client: 9, team: 2 },
      welcome(m.room, m.script ? SCRIPT : null)];
  }
  if (m.action === 'ready') {
    return [{ type: 'ack', id: m.id, tick: 20 },
      { type: 'game', tick: 20, state: { phase: 'countdown', round: 1, ready: [2], time_left: 3 } },
      { type: 'game', tick: 21, team: 2, state: { score: 4 } }];
  }
  if (m.action === 'disable') {
    return [{ type: 'ack', id: m.id, tick: 22 },
      { type: 'script', room: 'w1', ...SCRIPT, status: 'disabled', reason: 'its instruction budget' }];
  }
  return [{ type: 'error', id: m.id, code: 'refused', message: `game: unknown action: ${m.action}` }];
}

test('game should send its members, and the latest game states be kept room-wide and per team', async () => {
  const sent = [];
  const c = await connect('ws://stand.in', { WebSocket: standIn(sent), timeoutMs: 2000 });
  const seen = [];
  c.on('game', (msg) => seen.push([msg.team ?? null, msg.tick]));
  assert.deepEqual(c.roomScript, SCRIPT);
  const lobby = await c.waitGame(() => true, { timeoutMs: 1000 });
  assert.deepEqual(lobby.state.actions, ['ready', 'unready']);
  assert.deepEqual(await c.game({ action: 'ready' }), { tick: 20 });
  const g = await c.waitGame((m) => m.state.phase === 'countdown', { timeoutMs: 1000 });
  assert.equal(g.state.time_left, 3);
  const mine = await c.waitGame((m) => m.state.score === 4, { timeoutMs: 1000, team: 2 });
  assert.equal(c.teamGames.get(2), mine);
  assert.equal(c.roomGame, g);
  assert.equal(c.gamePhase, 'countdown');
  assert.deepEqual(seen, [[null, 20], [2, 21]]);
  await assert.rejects(c.game({ action: 'fly', to: { x: 1 } }),
    (e) => e.code === 'refused' && !e.local && e.message === 'game: unknown action: fly');
  await assert.rejects(c.game({ note: 'x'.repeat(1100) }), (e) => e.code === 'too_large' && e.local);
  await assert.rejects(c.waitGame(() => false, { timeoutMs: 50 }), (e) => e.code === 'timeout' && /game message/.test(e.message));
  await c.close();
  assert.deepEqual(sent.filter((m) => m.cmd !== 'ping').map(({ id, ...m }) => m), [
    { cmd: 'game', action: 'ready' },
    { cmd: 'game', action: 'fly', to: { x: 1 } },
  ]);
});

test('script messages should reach their event, and another room forget the game', async () => {
  const sent = [];
  const c = await connect('ws://stand.in', { WebSocket: standIn(sent), timeoutMs: 2000 });
  const statuses = [];
  c.on('script', (msg) => statuses.push(msg));
  await c.waitGame(() => true, { timeoutMs: 1000 });
  const status = c.once('script');
  await c.game({ action: 'disable' });
  assert.equal((await status).reason, 'its instruction budget');
  assert.equal(c.scriptStatus, statuses[0]);
  await c.join({ room: 'plain', role: 'player', mode: 'rts' });
  assert.equal(c.roomScript, null);
  assert.equal(c.roomGame, null);
  assert.equal(c.gamePhase, null);
  assert.equal(c.scriptStatus, null);
  assert.equal(c.teamGames.size, 0);
  await c.join({ room: 'w2', role: 'player', mode: 'rts', script: 'flockwars', teams: 2 });
  assert.deepEqual(c.roomScript, SCRIPT);
  assert.deepEqual(c.want.script, 'flockwars', 'joined again after a reconnect with its script');
  await c.close();
  assert.deepEqual(sent.filter((m) => m.cmd === 'join').map(({ id, ...m }) => m), [
    { cmd: 'join', room: 'plain', role: 'player', mode: 'rts' },
    { cmd: 'join', room: 'w2', role: 'player', mode: 'rts', script: 'flockwars', teams: 2 },
  ]);
});
