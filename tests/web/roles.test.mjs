// What each role may do (PROTOCOL.md §5.6) as the page offers it: enabled
// controls, the command a click sends, the hint line.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
  permissions, controlStates, clickCommand, steeredGroup, hintFor, replayPermissions,
} from '../../client/web/js/roles.js';

const ADMIN_ONLY = ['btn-pause', 'btn-resume', 'btn-step', 'btn-reset', 'btn-spawn', 'spawn-n',
  'btn-clear-obstacles', 'params-all'];

const enabled = (states) => Object.keys(states).filter((id) => states[id]).sort();

test('an admin should have every control', () => {
  const s = controlStates(permissions('admin', 'sandbox'));
  assert.deepEqual(enabled(s), Object.keys(s).sort());
  assert.ok(ADMIN_ONLY.every((id) => s[id]));
  assert.equal(permissions('admin', 'rts').seek, 'any');
});

test('a viewer should have no control that sends a command', () => {
  for (const mode of ['sandbox', 'rts']) {
    const p = permissions('viewer', mode, 3);
    assert.deepEqual(enabled(controlStates(p)), []);
    assert.equal(p.seek, 'none');
    assert.equal(p.obstacles, false);
  }
});

test('a sandbox player should seek any group and place obstacles, nothing room-wide', () => {
  const s = controlStates(permissions('player', 'sandbox'));
  assert.deepEqual(enabled(s), ['btn-clear-target', 'group', 'radius']);
});

test('an RTS player should steer its team only, without a group box', () => {
  const p = permissions('player', 'rts', 2);
  assert.equal(p.seek, 'team');
  assert.equal(p.team, 2);
  assert.deepEqual(enabled(controlStates(p)), ['btn-clear-target', 'radius']);
  assert.equal(steeredGroup(p, 7), 2);
});

test('an RTS player without a team should steer nothing', () => {
  const p = permissions('player', 'rts');
  assert.equal(p.seek, 'none');
  assert.equal(clickCommand(p, { hit: null, place: false, x: 1, y: 1, group: 0, radius: 40 }), null);
});

test('an unknown role should get a viewer\'s rights', () => {
  assert.deepEqual(enabled(controlStates(permissions('owner', 'sandbox'))), []);
  assert.deepEqual(enabled(controlStates(permissions(undefined, undefined))), []);
});

test('clickCommand should send what the role may do and nothing else', () => {
  const at = { x: 100, y: 200, group: 5, radius: 30 };
  const hit = { id: 9, x: 100, y: 200, r: 30 };
  const admin = permissions('admin', 'sandbox');
  assert.deepEqual(clickCommand(admin, { ...at, hit: null, place: false }),
    { cmd: 'seek', args: { group: 5, x: 100, y: 200 } });
  assert.deepEqual(clickCommand(admin, { ...at, hit: null, place: true }),
    { cmd: 'obstacle_add', args: { x: 100, y: 200, r: 30 } });
  assert.deepEqual(clickCommand(admin, { ...at, hit, place: false }),
    { cmd: 'obstacle_remove', args: { obstacle: 9 } });

  const rts = permissions('player', 'rts', 3);
  assert.deepEqual(clickCommand(rts, { ...at, hit: null, place: false }),
    { cmd: 'seek', args: { group: 3, x: 100, y: 200 } });
  assert.equal(clickCommand(rts, { ...at, hit, place: true }).cmd, 'obstacle_remove');

  const viewer = permissions('viewer', 'rts');
  for (const c of [{ hit: null, place: false }, { hit: null, place: true }, { hit, place: false }]) {
    assert.equal(clickCommand(viewer, { ...at, ...c }), null);
  }
});

test('hintFor should promise only what the role may do', () => {
  assert.match(hintFor(permissions('admin', 'sandbox')), /space: pause\/resume/);
  assert.match(hintFor(permissions('viewer', 'sandbox')), /^viewing only/);
  const rts = hintFor(permissions('player', 'rts', 4));
  assert.match(rts, /your team \(group 4\)/);
  assert.doesNotMatch(rts, /pause/);
});

test('in a recording an admin should only play it back, a viewer only watch', () => {
  const admin = replayPermissions(permissions('admin', 'sandbox'));
  assert.deepEqual(enabled(controlStates(admin)),
    ['btn-pause', 'btn-resume', 'btn-step', 'replay-goto', 'replay-tick']);
  assert.equal(clickCommand(admin, { hit: null, place: false, x: 1, y: 2, group: 0, radius: 5 }), null);
  assert.equal(clickCommand(admin, { hit: { id: 3 }, place: false, x: 1, y: 2, group: 0, radius: 5 }), null);
  assert.match(hintFor(admin), /recording.*space: pause/);
  const viewer = replayPermissions(permissions('viewer', 'sandbox'));
  assert.deepEqual(enabled(controlStates(viewer)), []);
  assert.doesNotMatch(hintFor(viewer), /space/);
});
