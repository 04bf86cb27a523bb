// The viewer's game panel (client/web/js/gameui.js, PROTOCOL.md §14.4): a
// room without a script has none; a state's phase is its title, its
// winner a banner once the phase is ended, its actions buttons that send
// {"cmd":"game","action":NAME}, its message a line; every other key a row
// (nested values as compact JSON, `ready` a list), a number-valued object
// or list a small table; team states come under the room-wide one, by
// team; an older state does not replace a newer; an admin sees the
// script disabled and why.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
  GamePanel, stateModel, valueText, numberColumns, winnerText, scriptLine,
} from '../../client/web/js/gameui.js';

const SCRIPT = { name: 'flockwars', hash: '9b9114032e7b01a1' };
const game = (tick, state, team) => ({ type: 'game', tick, state, ...(team === undefined ? {} : { team }) });

test('a room without a script has no game panel and keeps nothing', () => {
  const g = new GamePanel();
  assert.equal(g.active, false);
  assert.equal(g.take(game(1, { phase: 'lobby' })), false);
  assert.equal(g.takeScript({ type: 'script', status: 'disabled' }), false);
  g.reset(null);
  assert.equal(g.active, false);
});

test('a lobby shows its phase, its action buttons and its ready teams', () => {
  const m = stateModel({ phase: 'lobby', round: 1, ready: [2, 1], actions: ['ready', 'unready'] });
  assert.equal(m.title, 'lobby');
  assert.equal(m.banner, null);
  assert.deepEqual(m.actions, ['ready', 'unready']);
  assert.deepEqual(m.rows, [{ key: 'round', text: '1' }, { key: 'ready', text: '2, 1' }]);
  assert.deepEqual(m.tables, [], 'ready is a list, never a table');
  // An empty Lua table comes as {}: nobody ready.
  assert.deepEqual(stateModel({ ready: {} }).rows, [{ key: 'ready', text: 'none' }]);
  assert.deepEqual(GamePanel.action('ready'), { cmd: 'game', args: { action: 'ready' } });
});

test('a match being played shows its rows and its by-team numbers as tables', () => {
  const m = stateModel({
    phase: 'playing', time_left: 178, units: [200, 187], captured: { 1: 13, 2: 0 }, note: null, fast: true,
  });
  assert.equal(m.title, 'playing');
  assert.deepEqual(m.actions, []);
  assert.deepEqual(m.rows, [{ key: 'time left', text: '178' }, { key: 'note', text: '–' }, { key: 'fast', text: 'true' }]);
  assert.deepEqual(m.tables, [
    { key: 'units', columns: [{ head: '1', value: '200' }, { head: '2', value: '187' }] },
    { key: 'captured', columns: [{ head: '1', value: '13' }, { head: '2', value: '0' }] },
  ]);
});

test('an ended match has a winner banner and its results as compact JSON', () => {
  const m = stateModel({ phase: 'ended', winner: 2, results: { units: [0, 400] }, actions: ['rematch'], message: 'well played' });
  assert.equal(m.banner, 'Team 2 wins');
  assert.equal(m.message, 'well played');
  assert.deepEqual(m.actions, ['rematch']);
  assert.deepEqual(m.rows, [{ key: 'results', text: '{"units":[0,400]}' }]);
  assert.equal(winnerText({ phase: 'ended', winner: 'Red' }), 'Red wins');
  assert.equal(winnerText({ phase: 'ended' }), 'No winner');
  assert.equal(winnerText({ phase: 'ended', winner: null }), 'No winner');
  assert.equal(winnerText({ phase: 'playing', winner: 2 }), null, 'a banner only once the match ended');
  assert.ok(!stateModel({ phase: 'playing', winner: 2 }).rows.some((r) => r.key === 'winner'));
});

test('values read as text, long JSON cut, and only numbers make a table', () => {
  assert.equal(valueText('red'), 'red');
  assert.equal(valueText(undefined), '–');
  assert.equal(valueText({ a: [1, { b: 2 }] }), '{"a":[1,{"b":2}]}');
  const long = valueText({ list: Array.from({ length: 50 }, (_, i) => i) });
  assert.equal(long.length, 80);
  assert.ok(long.endsWith('…'));
  assert.equal(numberColumns([]), null);
  assert.equal(numberColumns({}), null);
  assert.equal(numberColumns([1, 'two']), null);
  assert.equal(numberColumns('12'), null);
  assert.deepEqual(numberColumns({ red: 3 }), [{ head: 'red', value: '3' }]);
});

test('what is no state is shown as an empty one, and bad actions are left out', () => {
  for (const bad of [null, [], 'x', 3]) {
    assert.deepEqual(stateModel(bad), { title: '', banner: null, message: '', actions: [], rows: [], tables: [] });
  }
  assert.deepEqual(stateModel({ actions: ['go', 3, '', null] }).actions, ['go']);
  assert.deepEqual(stateModel({ actions: 'go' }).actions, []);
  assert.equal(stateModel({ phase: 3 }).title, '');
});

test('the room-wide state comes first, then each team\'s by team, newer over older', () => {
  const g = new GamePanel();
  g.reset(SCRIPT);
  assert.equal(g.active, true);
  assert.deepEqual(g.model(), { name: 'flockwars', room: null, teams: [], script: null });
  assert.equal(g.take(game(10, { phase: 'playing' })), true);
  assert.equal(g.take(game(9, { phase: 'lobby' })), false, 'older');
  assert.equal(g.take(game(10, { score: 3 }, 3)), true);
  assert.equal(g.take(game(11, { score: 1 }, 1)), true);
  assert.equal(g.take({ type: 'game', tick: 12 }), false, 'no state');
  const m = g.model();
  assert.equal(m.room.title, 'playing');
  assert.deepEqual(m.teams.map((t) => [t.team, t.rows[0].text]), [[1, '1'], [3, '3']]);
  g.reset(SCRIPT);
  assert.deepEqual(g.model().teams, [], 'another room starts afresh');
});

test('an admin sees the script disabled and why, and a reload', () => {
  const g = new GamePanel();
  g.reset(SCRIPT);
  assert.equal(g.takeScript({ type: 'script', room: 'w1', ...SCRIPT, status: 'disabled', reason: 'memory cap' }), true);
  assert.deepEqual(g.model().script, { text: 'script flockwars disabled: memory cap', disabled: true });
  assert.deepEqual(scriptLine({ status: 'reloaded', hash: 'abc' }), { text: 'script reloaded (abc)', disabled: false });
  assert.deepEqual(scriptLine({ status: 'running', reason: 'syntax error' }), { text: 'script still runs; reload failed: syntax error', disabled: false });
  assert.equal(scriptLine({ status: 'running' }), null);
  assert.equal(scriptLine(null), null);
  assert.deepEqual(scriptLine({ status: 'disabled' }), { text: 'script disabled', disabled: true });
});
