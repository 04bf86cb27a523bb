// The client library's command validator (client/js/src/validate.js)
// against the protocol schema, as tests/unit/test_schema.c checks the C
// parser: every command of the schema has its method; each argument is
// accepted at both ends of its range and refused past them
// (out_of_range), when missing if required, mistyped or not whole where an
// integer is needed (bad_arg); strings are held to their lengths and
// characters and enums to their values; an unknown member is bad_arg; the
// role table follows each command's "who" and "team_arg". The codes are
// those the server gives: tests/e2e/client.e2e.mjs sends the same
// refusals to a real flockd and compares.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
  validateCommand, boundValue, COMMANDS, OPEN_ARGS_MAX, schema, CommandError, Client, methodName,
} from '../../client/js/src/index.js';

const WORLD = { width: 1600, height: 1000, capacity: 16384 };
const REGISTRY = [
  { name: 'w_alignment', min: 0, max: 10, integer: false },
  { name: 'own_group_only', min: 0, max: 1, integer: true },
];
const ADMIN = { world: WORLD, params: REGISTRY, role: 'admin', mode: 'sandbox' };

const bound = (a, key) => boundValue(a[key], WORLD);

/** A valid value of argument `a` at one end of its range. */
function valid(a, atMax) {
  if (a.type === 'int') return atMax ? Math.floor(bound(a, 'max')) : Math.ceil(bound(a, 'min'));
  if (a.type === 'number') return bound(a, atMax ? 'max' : 'min');
  if (a.type === 'enum') return a.values[atMax ? a.values.length - 1 : 0];
  if (a.type === 'bool') return a.values ? a.values[0] : atMax; // select's all takes only true
  if (a.type === 'rect') return atMax ? [1600, 1000, 1e7, 1e7] : [0, 0, 1, 1];
  if (a.type === 'array') {
    const n = atMax ? a.max_items : a.min_items;
    const item = a.items === 'point' ? (atMax ? [1600, 1000] : [0, 0]) : valid({ ...a, type: a.items }, atMax);
    return Array(n).fill(item);
  }
  return 'a'.repeat(atMax ? a.max_len : a.min_len || 0);
}

/**
 * The arguments of `c`: every required one (all of them with `all`) at one
 * end, but `skip`, and one of its one_of arguments (`skip` if it is one:
 * the caller adds it; else the first).
 */
function message(c, { atMax = false, all = true, skip = null } = {}) {
  const args = {};
  const oneOf = c.one_of || [];
  const one = oneOf.includes(skip) ? skip : oneOf[0];
  for (const a of c.args) {
    const wanted = oneOf.includes(a.name) ? a.name === one : all || a.required;
    if (wanted && a.name !== skip) args[a.name] = valid(a, atMax);
  }
  if (c.registry) args.w_alignment = 1;
  return args;
}

/** The code validateCommand gives (null: accepted). */
function codeOf(cmd, args, place = ADMIN) {
  try {
    validateCommand(cmd, args, place);
    return null;
  } catch (e) {
    assert.ok(e instanceof CommandError && e.local, `${cmd}: ${e}`);
    assert.ok(e.message.startsWith(`${cmd}: `), `the message names the command: ${e.message}`);
    return e.code;
  }
}

function expectWith(c, name, value, code) {
  const args = { ...message(c, { skip: name }), [name]: value };
  assert.equal(codeOf(c.name, args), code, `${c.name} ${JSON.stringify(args)}`);
}

test('every command of the schema should have its method on the client', () => {
  for (const name of COMMANDS.keys()) {
    assert.equal(typeof Client.prototype[methodName(name)], 'function', name);
  }
  assert.equal(methodName('obstacle_remove'), 'obstacleRemove');
  assert.equal(COMMANDS.size, schema.commands.length);
});

test('bounds should be the schema\'s numbers and expressions over W, H and C', () => {
  assert.equal(boundValue(7, WORLD), 7);
  assert.equal(boundValue('W', WORLD), 1600);
  assert.equal(boundValue('min(W,H)/4', WORLD), 250);
  assert.equal(boundValue('max(W,H)', WORLD), 1600);
  assert.equal(boundValue('min(50,max(W,H))', WORLD), 50);
  assert.equal(boundValue('C', WORLD), 16384);
  assert.equal(boundValue('2*W/4', WORLD), 800);
  assert.throws(() => boundValue('W+1', WORLD));
});

test('commands should be accepted at both ends of every range', () => {
  for (const c of schema.commands) {
    for (const atMax of [false, true]) {
      for (const all of [false, true]) assert.equal(codeOf(c.name, message(c, { atMax, all })), null, c.name);
    }
  }
});

test('a missing required argument should be bad_arg', () => {
  for (const c of schema.commands) {
    for (const a of c.args.filter((x) => x.required)) {
      assert.equal(codeOf(c.name, message(c, { skip: a.name })), 'bad_arg', `${c.name} without ${a.name}`);
    }
  }
});

test('numbers past their range should be out_of_range, fractions of integers and strings bad_arg', () => {
  for (const c of schema.commands) {
    for (const a of c.args.filter((x) => x.type === 'int' || x.type === 'number')) {
      const lo = bound(a, 'min');
      const hi = bound(a, 'max');
      expectWith(c, a.name, lo - Math.max(1, Math.ceil(Math.abs(lo) * 1e-6)), 'out_of_range');
      expectWith(c, a.name, hi + Math.max(1, Math.ceil(Math.abs(hi) * 1e-6)), 'out_of_range');
      expectWith(c, a.name, '1', 'bad_arg');
      expectWith(c, a.name, null, 'bad_arg');
      expectWith(c, a.name, NaN, 'bad_arg');
      if (a.type === 'int' && hi - lo >= 1) expectWith(c, a.name, lo + 0.5, 'bad_arg');
    }
  }
});

test('strings should keep their lengths and characters and enums their values', () => {
  for (const c of schema.commands) {
    for (const a of c.args) {
      if (a.type === 'enum') {
        expectWith(c, a.name, 'none_of_these', 'bad_arg');
        expectWith(c, a.name, 1, 'bad_arg');
      }
      if (a.type === 'bool') {
        expectWith(c, a.name, 'true', 'bad_arg');
        expectWith(c, a.name, 1, 'bad_arg');
      }
      if (a.type !== 'string') continue;
      expectWith(c, a.name, 'a'.repeat(a.max_len + 1), 'out_of_range');
      expectWith(c, a.name, 'é'.repeat(Math.floor(a.max_len / 2) + 1), 'out_of_range'); // bytes, not characters
      if (a.min_len > 0) expectWith(c, a.name, '', 'out_of_range');
      expectWith(c, a.name, a.chars === 'room' ? 'a b' : 'a\x7f', 'bad_arg');
      expectWith(c, a.name, 1, 'bad_arg');
    }
  }
});

test('a member the schema does not name should be bad_arg, as should cmd, id and objects', () => {
  for (const c of schema.commands) {
    // A command with open_args (game, §14.2) takes any member.
    const unknown = c.open_args ? null : 'bad_arg';
    if (!c.registry) assert.equal(codeOf(c.name, { ...message(c), not_an_argument: 1 }), unknown, c.name);
    assert.equal(codeOf(c.name, { ...message(c), id: 3 }), 'bad_arg', c.name);
    assert.equal(codeOf(c.name, { ...message(c), cmd: c.name }), 'bad_arg', c.name);
  }
  assert.equal(codeOf('seek', { group: 1, x: { v: 1 }, y: 1 }), 'bad_arg');
  assert.equal(codeOf('seek', { group: 1, x: [1], y: 1 }), 'bad_arg');
  assert.equal(codeOf('seek', { group: 1, x: 1, y: 1, extra: undefined }), null, 'undefined members are absent');
});

test('a game should take any JSON members within 1024 bytes, from any role', () => {
  for (const role of ['viewer', 'player', 'admin']) assert.equal(codeOf('game', { action: 'ready' }, { role }), null, role);
  assert.equal(codeOf('game', {}), null);
  assert.equal(codeOf('game', { to: [[1, 2], [3, 4]], opts: { fast: true }, n: null }), null);
  // {"s":"..."}: 8 bytes around the string, 1016 in it is 1024 exactly.
  assert.equal(codeOf('game', { s: 'a'.repeat(1016) }), null);
  assert.equal(codeOf('game', { s: 'a'.repeat(1017) }), 'too_large');
  assert.equal(codeOf('game', { s: 'é'.repeat(509) }), 'too_large', 'bytes, not characters');
  assert.throws(() => validateCommand('game', { s: 'a'.repeat(2000) }),
    (e) => e.message === 'game: the members of a game command are over 1024 bytes' && e.local);
  assert.equal(OPEN_ARGS_MAX, 1024);
});

test('params should take the registry\'s names within their ranges, at least one', () => {
  assert.equal(codeOf('params', { w_alignment: 10, own_group_only: 1 }), null);
  assert.equal(codeOf('params', { group: 2 }), 'bad_arg');
  assert.equal(codeOf('params', { group: 2, reset: true }), null, 'a reset needs no parameter');
  assert.equal(codeOf('params', { group: 2, reset: false }), 'bad_arg');
  assert.equal(codeOf('params', {}), 'bad_arg');
  assert.equal(codeOf('params', { not_a_parameter: 1 }), 'bad_arg');
  assert.equal(codeOf('params', { w_alignment: 10.5 }), 'out_of_range');
  assert.equal(codeOf('params', { own_group_only: 0.5 }), 'bad_arg');
  assert.equal(codeOf('params', { w_alignment: 'x' }), 'bad_arg');
});

test('an unknown command should be unknown_cmd', () => {
  assert.equal(codeOf('warp', {}), 'unknown_cmd');
  assert.equal(codeOf('Seek', { group: 1, x: 1, y: 1 }), 'unknown_cmd');
});

test('the role table should allow what each command\'s who says', () => {
  for (const c of schema.commands) {
    const args = message(c);
    if (c.team_arg) args[c.team_arg] = 3;
    const as = (role, mode = 'sandbox', team = null) => codeOf(c.name, args, { ...ADMIN, role, mode, team });
    assert.equal(as('admin'), null, c.name);
    assert.equal(as('viewer') === null, c.who === 'anyone', `${c.name}: a viewer`);
    assert.equal(as('player') === null, c.who !== 'admin', `${c.name}: a player`);
    assert.equal(as('player', 'rts', 3) === null, c.who !== 'admin', `${c.name}: an RTS player's own team`);
    if (c.who !== 'admin') {
      assert.equal(as('player', 'rts', 2) === null, !c.team_arg, `${c.name}: another team's group`);
    }
    if (c.who !== 'anyone') assert.equal(as('viewer'), 'forbidden');
  }
});

test('messages should name the command and the field as the server does', () => {
  const message = (cmd, args, place = ADMIN) => {
    try {
      validateCommand(cmd, args, place);
    } catch (e) {
      return e.message;
    }
    return null;
  };
  assert.equal(message('seek', { group: 1, x: 1601, y: 1 }), "seek: field 'x' must be in [0, 1600]");
  assert.equal(message('seek', { group: 1, y: 1 }), "seek: missing field 'x'");
  assert.equal(message('obstacle_add', { x: 1, y: 1, r: 300 }), "obstacle_add: field 'r' must be in [1, 250]");
  assert.equal(message('join', { room: 'a b', role: 'viewer' }), "join: field 'room' contains characters that are not allowed");
  assert.match(message('spawn', { n: 1, group: 0, x: 1, y: 1 }, { ...ADMIN, role: 'player' }), /^spawn: .*admin/);
});

test('without a world or a role only what needs neither should be checked', () => {
  assert.equal(codeOf('seek', { group: 1, x: 1e6, y: 1 }, {}), null);
  assert.equal(codeOf('seek', { group: 256, x: 1, y: 1 }, {}), 'out_of_range');
  assert.equal(codeOf('spawn', { n: 1, group: 0, x: 1, y: 1 }, { world: WORLD }), null);
});
