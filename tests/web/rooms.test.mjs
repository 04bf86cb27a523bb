// Rooms in the page: the room and role in the address, the join sent after
// each fresh welcome with the secrets kept in session storage, the room
// list's cells and the roster's lines (PROTOCOL.md §5.6, §6.4, §10).
import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
  RoomSession, parseChoice, choiceSearch, placeOf, validRoomName,
} from '../../client/web/js/session.js';
import { roomCells } from '../../client/web/js/lobby.js';
import { rosterRows, viewersText, moreText } from '../../client/web/js/roster.js';
import { groupColor } from '../../client/web/js/render2d.js';

/** A Storage over a Map. */
class MemoryStorage {
  constructor() { this.m = new Map(); }
  getItem(k) { return this.m.has(k) ? this.m.get(k) : null; }
  setItem(k, v) { this.m.set(k, String(v)); }
  removeItem(k) { this.m.delete(k); }
}

/** A RoomSession whose sends and URL changes are recorded. */
function session(choice = null, storage = new MemoryStorage()) {
  const sent = [];
  const urls = [];
  let id = 0;
  const s = new RoomSession({
    storage,
    send: (cmd, args) => { sent.push({ cmd, args, id: ++id }); return id; },
    onChoice: (c) => urls.push(c),
    choice,
  });
  return { s, sent, urls, storage };
}

const welcome = (extra = {}) => ({ type: 'welcome', client: 7, room: 'default', mode: 'sandbox', role: 'admin', ...extra });

test('parseChoice should read room and role from the query string', () => {
  assert.deepEqual(parseChoice('?room=arena&role=player'), { room: 'arena', role: 'player' });
  assert.deepEqual(parseChoice('?role=admin&room=a_b-9'), { room: 'a_b-9', role: 'admin' });
  assert.deepEqual(parseChoice('?room=arena'), { room: 'arena', role: 'viewer' });
  assert.deepEqual(parseChoice('?room=arena&role=owner'), { room: 'arena', role: 'viewer' });
  assert.equal(parseChoice(''), null);
  assert.equal(parseChoice('?room='), null);
  assert.equal(parseChoice('?room=no%20spaces'), null);
  assert.equal(parseChoice(`?room=${'x'.repeat(33)}`), null);
});

test('validRoomName should take 1 to 32 of [A-Za-z0-9_-]', () => {
  assert.ok(validRoomName('x'));
  assert.ok(validRoomName('A-z_0'.padEnd(32, 'q')));
  for (const bad of ['', 'a b', 'é', 'a/b', 'x'.repeat(33), null, undefined, 3]) assert.ok(!validRoomName(bad), String(bad));
});

test('choiceSearch should write room and role and keep other members', () => {
  assert.equal(choiceSearch('', { room: 'arena', role: 'player' }), '?room=arena&role=player');
  assert.equal(choiceSearch('?debug=1&room=old&role=viewer', { room: 'arena', role: 'admin' }),
    '?debug=1&room=arena&role=admin');
  assert.equal(choiceSearch('?room=arena&role=player', null), '');
  assert.equal(choiceSearch('?debug=1&room=arena', null), '?debug=1');
});

test('placeOf should read the welcome and treat a welcome without role as an admin\'s', () => {
  assert.deepEqual(placeOf(welcome({ room: 'arena', mode: 'rts', role: 'player', team: 2 })),
    { room: 'arena', mode: 'rts', role: 'player', team: 2, client: 7 });
  assert.deepEqual(placeOf({ type: 'welcome', client: 1 }),
    { room: 'default', mode: 'sandbox', role: 'admin', team: null, client: 1 });
});

test('a page without a choice should not join', () => {
  const { s, sent } = session();
  assert.equal(s.welcome(welcome(), true), false);
  assert.deepEqual(sent, []);
  assert.equal(s.permissions.admin, true);
});

test('a page should not join the room and role it already has', () => {
  const { s, sent } = session({ room: 'default', role: 'admin' });
  assert.equal(s.welcome(welcome(), true), false);
  assert.deepEqual(sent, []);
});

test('a fresh welcome should join the chosen room, with a viewer\'s rights until it is in', () => {
  const { s, sent, urls } = session({ room: 'arena', role: 'player' });
  assert.equal(s.welcome(welcome(), true), true);
  assert.deepEqual(sent.map((x) => x.args), [{ room: 'arena', role: 'player' }]);
  assert.equal(s.rejoining, true);
  assert.equal(s.permissions.seek, 'none');
  assert.deepEqual(s.reply({ type: 'ack', id: 1, room: 'arena', role: 'player', client: 7, team: 1, rejoin: 'ab12' }),
    { joined: true, args: { room: 'arena', role: 'player' }, auto: true });
  assert.deepEqual(urls, [{ room: 'arena', role: 'player' }]);
  // The welcome after a join is not fresh: nothing more is sent.
  assert.equal(s.welcome(welcome({ room: 'arena', mode: 'rts', role: 'player', team: 1 }), false), false);
  assert.equal(sent.length, 1);
  assert.deepEqual(s.permissions, { role: 'player', mode: 'rts', team: 1, seek: 'team', obstacles: true, admin: false,
    playback: false });
});

test('a reconnect should join again with the rejoin token, password and name kept', () => {
  const { s, sent, storage } = session();
  s.welcome(welcome(), true);
  s.join({ room: 'arena', role: 'player', mode: 'rts', password: 'pw', name: 'ann' });
  assert.deepEqual(sent[0].args, { room: 'arena', role: 'player', mode: 'rts', name: 'ann', password: 'pw' });
  s.reply({ type: 'ack', id: 1, room: 'arena', role: 'player', client: 7, team: 3, rejoin: 'f00d' });
  s.welcome(welcome({ room: 'arena', mode: 'rts', role: 'player', team: 3 }), false);
  // The connection drops; the next one starts in default again. The mode
  // goes along, so a room gone with a restarted server comes back as it was.
  s.welcome(welcome({ client: 8 }), true);
  assert.deepEqual(sent[1].args, { room: 'arena', role: 'player', mode: 'rts', name: 'ann', password: 'pw', rejoin: 'f00d' });
  // The same secrets are there after a reload (same session storage).
  const again = session(parseChoice('?room=arena&role=player'), storage);
  again.s.welcome(welcome({ client: 9 }), true);
  assert.deepEqual(again.sent[0].args, sent[1].args);
});

test('an admin join should carry the token, which is kept only once accepted', () => {
  const { s, sent, storage } = session();
  s.welcome(welcome({ role: 'player' }), true);
  s.join({ room: 'default', role: 'admin', token: 'wrong' });
  assert.equal(sent[0].args.token, 'wrong');
  const r = s.reply({ type: 'error', id: 1, code: 'forbidden', message: 'join: bad token' });
  assert.deepEqual(r, { joined: false, args: sent[0].args, auto: false });
  assert.equal(storage.getItem('flockd.token'), null);
  s.join({ room: 'default', role: 'admin', token: 's3cret' });
  s.reply({ type: 'ack', id: 2, room: 'default', role: 'admin', client: 7 });
  assert.equal(storage.getItem('flockd.token'), 's3cret');
  // Later admin joins use it; the token never goes to the address.
  s.join({ room: 'other', role: 'admin' });
  assert.equal(sent[2].args.token, 's3cret');
  assert.ok(!choiceSearch('', s.choice).includes('s3cret'));
  // Player and viewer joins do not carry it.
  s.join({ room: 'other', role: 'viewer' });
  assert.equal(sent[3].args.token, undefined);
});

test('a refused re-join should drop the choice; a refused lobby join should keep it', () => {
  const { s, sent, urls, storage } = session({ room: 'arena', role: 'admin' });
  storage.setItem('flockd.token', 'stale');
  s.welcome(welcome({ role: 'player' }), true);
  assert.equal(sent[0].args.token, 'stale');
  s.reply({ type: 'error', id: 1, code: 'forbidden', message: 'no' });
  assert.equal(s.choice, null);
  assert.deepEqual(urls, [null]);
  assert.equal(storage.getItem('flockd.token'), null, 'a refused token is forgotten');
  assert.equal(s.permissions.role, 'player');

  const b = session({ room: 'arena', role: 'viewer' });
  b.s.welcome(welcome(), true);
  b.s.reply({ type: 'ack', id: 1, room: 'arena', role: 'viewer', client: 7 });
  b.s.join({ room: 'locked', role: 'player', password: 'nope' });
  b.s.reply({ type: 'error', id: 2, code: 'forbidden', message: 'password' });
  assert.deepEqual(b.s.choice, { room: 'arena', role: 'viewer' });
  assert.deepEqual(b.urls, [{ room: 'arena', role: 'viewer' }]);
});

test('replies to other commands and stale joins should be left alone', () => {
  const { s } = session({ room: 'arena', role: 'viewer' });
  s.welcome(welcome(), true);
  assert.equal(s.reply({ type: 'ack', id: 99, tick: 4 }), null);
  // The connection drops before the reply: the join is sent again.
  s.welcome(welcome(), true);
  assert.equal(s.reply({ type: 'ack', id: 1, room: 'arena', role: 'viewer' }), null);
  assert.notEqual(s.reply({ type: 'ack', id: 2, room: 'arena', role: 'viewer' }), null);
});

test('roomCells should show counts, mode and password of an /api/rooms entry', () => {
  const r = { name: 'default', mode: 'sandbox', players: 1, admins: 1, viewers: 4, boids: 1000, password: false };
  assert.deepEqual(roomCells(r), ['default', 'sandbox', '1 + 1 admin', '4', '1000', 'no', '']);
  assert.deepEqual(roomCells({ name: 'arena', mode: 'rts', players: 2, admins: 0, viewers: 0, boids: 60, password: true }),
    ['arena', 'rts', '2', '0', '60', 'yes', '']);
  assert.deepEqual(roomCells({ name: 'x', mode: 'rts' }).slice(2), ['–', '–', '–', 'no', '']);
});

test('roomCells should name the node that ticks a room of a cluster', () => {
  const r = { name: 'default', mode: 'sandbox', players: 0, admins: 0, viewers: 2, boids: 1000, password: false, node: 'n2' };
  assert.equal(roomCells(r)[6], 'n2');
  assert.equal(roomCells({ ...r, node: 7 })[6], '');
});

test('rosterRows should colour each team as the renderer does and mark who left', () => {
  const msg = {
    type: 'roster', room: 'arena', mode: 'rts', viewers: 3,
    players: [
      { client: 12, name: 'ann', role: 'player', team: 1, connected: true },
      { client: 0, name: '', role: 'player', team: 2, connected: false },
      { client: 14, name: '', role: 'admin', connected: true },
    ],
  };
  const rows = rosterRows(msg, 12);
  assert.deepEqual(rows.map((r) => [r.label, r.role, r.team, r.color, r.left, r.you]), [
    ['ann', 'player', 1, groupColor(1), false, true],
    ['team 2', 'player', 2, groupColor(2), true, false],
    ['client 14', 'admin', null, null, false, false],
  ]);
  assert.deepEqual(rosterRows({ type: 'roster' }, 1), []);
  assert.equal(viewersText(3), '3 viewers');
  assert.equal(viewersText(1), '1 viewer');
  assert.equal(moreText(5), 'and 5 more');
  assert.equal(moreText(0), null);
  assert.equal(moreText(undefined), null);
});
