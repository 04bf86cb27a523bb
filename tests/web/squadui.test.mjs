// The viewer's squads (client/web/js/squadui.js): only an rts player's own
// team's squads messages are kept; a dragged box is a select of its
// rectangle (cut at the world's edges); a select's ack selects its squad;
// a right-click moves it (shift: queued), P then a click patrols, the
// keys set formations, stop and hold; a click on the ground clears the
// selection; the panel's rows and the overlay's slots and waypoints come
// from the latest message; a squad that ended is no longer selected.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { SquadControl, orderText, FORMATION_KEYS } from '../../client/web/js/squadui.js';

const entry = (squad, more = {}) => ({
  squad, units: 3, do: 'none', formation: 'none', spacing: 10, anchor: [100, 100], facing: 0, ...more,
});
const msg = (tick, team, ...squads) => ({ type: 'squads', tick, team, squads });

test('a page that is no rts player keeps no squads and sends nothing', () => {
  const q = new SquadControl();
  assert.equal(q.active, false);
  assert.equal(q.take(msg(1, 2, entry(1))), false);
  assert.equal(q.boxSelect(0, 0, 10, 10, 100, 100), null);
  assert.equal(q.key('1'), null);
  assert.deepEqual(q.overlay(), []);
});

test('only the own team\'s squads messages are kept, newest first', () => {
  const q = new SquadControl();
  q.reset(2);
  assert.equal(q.take(msg(5, 3, entry(1))), false, 'another team\'s');
  assert.equal(q.take(msg(5, 2, entry(1))), true);
  assert.equal(q.take(msg(4, 2, entry(2))), false, 'an older one');
  assert.deepEqual(q.rows().map((r) => r.squad), [1]);
});

test('a dragged box should select its rectangle cut at the world\'s edges, and its ack select the squad', () => {
  const q = new SquadControl();
  q.reset(2);
  assert.deepEqual(q.boxSelect(300, 200, 100, 50, 1600, 1000), { cmd: 'select', args: { rect: [100, 50, 200, 150] } });
  assert.deepEqual(q.boxSelect(-20, 900, 40, 1200, 1600, 1000), { cmd: 'select', args: { rect: [0, 900, 40, 100] } });
  assert.equal(q.boxSelect(5, 5, 5, 50, 1600, 1000), null, 'no area');
  q.acked('select', { squad: 3, units: 12 });
  assert.equal(q.selected, 3);
  q.acked('select', { squad: 0, units: 12 });
  assert.equal(q.selected, 3, 'units taken out of their squads select nothing');
});

test('with a squad selected, clicks and keys should order it', () => {
  const q = new SquadControl();
  q.reset(2);
  assert.equal(q.pointOrder(5, 5, false), null, 'nothing selected: nothing to move');
  assert.equal(q.key('1'), null);
  q.acked('select', { squad: 4 });
  assert.deepEqual(q.pointOrder(500, 400, false), { cmd: 'move', args: { squad: 4, to: [[500, 400]] } });
  assert.deepEqual(q.pointOrder(600, 400, true), { cmd: 'move', args: { squad: 4, to: [[600, 400]], queue: true } });
  for (const [k, shape] of Object.entries(FORMATION_KEYS)) {
    assert.deepEqual(q.key(k), { cmd: 'formation', args: { squad: 4, shape } });
  }
  assert.deepEqual(q.key('3').args.shape, 'wedge');
  assert.deepEqual(q.key('s'), { cmd: 'stop', args: { squad: 4 } });
  assert.deepEqual(q.key('h'), { cmd: 'hold', args: { squad: 4 } });
  assert.equal(q.key('x'), null);
  assert.deepEqual(q.key('p'), { arm: 'patrol' });
  assert.deepEqual(q.groundClick(700, 300), { cmd: 'patrol', args: { squad: 4, to: [[700, 300]] } });
  assert.equal(q.patrolArmed, false);
  assert.equal(q.selected, 4, 'a patrol keeps the selection');
  q.key('p');
  assert.deepEqual(q.key('escape'), { arm: null });
  assert.equal(q.groundClick(1, 1), null, 'a click on the ground');
  assert.equal(q.selected, null, 'clears the selection');
});

test('the panel and the overlay should show each squad\'s order, units, formation, waypoints and slots', () => {
  const q = new SquadControl();
  q.reset(1);
  q.take(msg(9, 1, entry(1, { do: 'move', to: [[800, 500], [900, 600]], formation: 'line', units: 3 }),
    entry(2, { do: 'follow', squad_of: 1 })));
  q.select(1);
  assert.deepEqual(q.rows(), [
    { squad: 1, units: 3, order: 'move (2 waypoints)', formation: 'line', waypoints: 2, selected: true },
    { squad: 2, units: 3, order: 'follow squad 1', formation: 'none', waypoints: 0, selected: false },
  ]);
  const [one, two] = q.overlay();
  assert.deepEqual(one.slots, [[100, 90], [100, 100], [100, 110]]);
  assert.deepEqual(one.to, [[800, 500], [900, 600]]);
  assert.equal(one.selected, true);
  assert.deepEqual(two.slots, []);
  q.select(7);
  assert.equal(q.selected, 1, 'a squad with no units cannot be selected');
  q.take(msg(10, 1, entry(2)));
  assert.equal(q.selected, null, 'the selected squad ended');
});

test('orderText should say each order', () => {
  assert.equal(orderText({ do: 'patrol', to: [[1, 1]] }), 'patrol (1 waypoint)');
  assert.equal(orderText({ do: 'follow', unit: 4711 }), 'follow unit 4711');
  assert.equal(orderText({ do: 'hold' }), 'hold');
  assert.equal(orderText({ do: 'move' }), 'move (0 waypoints)');
});
