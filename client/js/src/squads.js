// Squads, orders and formations (proto/PROTOCOL.md §13): the checks the
// commands select, order and formation pass before they are sent (their
// arrays and booleans are beyond the schema's scalar checks, so they are
// written here, refusing with the code the server would give), and where
// a formation's slots lie (§13.3): slots(shape, n, anchor, facing,
// spacing), entrySlots(entry of a `squads` message), slotFit(slots,
// points, tolerance) for how much of a formation its units fill. What only
// the live room can decide (an empty selection, an id of no live boid or
// of another team, no free squad, a squad with no units) is the server's.
// Pure: no I/O, no state.

import { CommandError } from './errors.js';

export const SHAPES = Object.freeze(['none', 'line', 'column', 'wedge', 'box']);
export const ORDERS = Object.freeze(['move', 'patrol', 'follow', 'hold', 'stop']);
const SELECTIONS = ['rect', 'ids', 'all', 'squads'];
const MAX_SQUAD = 32;
const MAX_IDS = 256;
const MAX_WAYPOINTS = 16;
const MAX_PATROL = 15;
const ID_MAX = 0xFFFFFFFF; // a boid id is a uint32 other than 0 (§12.2)

const refuse = (cmd, code, text) => {
  throw new CommandError(code, `${cmd}: ${text}`, { command: cmd, local: true });
};

const isNumber = (v) => typeof v === 'number' && Number.isFinite(v);

function intIn(cmd, name, v, lo, hi) {
  if (typeof v !== 'number' || !Number.isInteger(v)) refuse(cmd, 'bad_arg', `field '${name}' must be an integer`);
  if (v < lo || v > hi) refuse(cmd, 'out_of_range', `field '${name}' must be in [${lo}, ${hi}]`);
}

function listOf(cmd, name, v, lo, hi) {
  if (!Array.isArray(v)) refuse(cmd, 'bad_arg', `field '${name}' must be an array`);
  if (v.length < lo || v.length > hi) refuse(cmd, 'out_of_range', `field '${name}' must hold ${lo} to ${hi} items`);
}

function point(cmd, p, world) {
  if (!Array.isArray(p) || p.length !== 2 || !p.every((c) => typeof c === 'number')) {
    refuse(cmd, 'bad_arg', "field 'to' must hold points [x, y]");
  }
  const [x, y] = p;
  if (!isNumber(x) || !isNumber(y) || x < 0 || y < 0 || x > world.width || y > world.height) {
    refuse(cmd, 'out_of_range', `field 'to': point [${x}, ${y}] is outside the world [0, ${world.width}] x [0, ${world.height}]`);
  }
}

function onlyFields(cmd, args, known) {
  for (const [name, v] of Object.entries(args)) {
    if (v !== undefined && !known.includes(name)) refuse(cmd, 'bad_arg', `unknown field '${name}'`);
  }
}

// Who may address which team (§13): no viewer; a player its own team
// (`team`, if given, must be it); an admin names the team.
function checkTeam(cmd, args, { role, team }) {
  if (role === 'viewer') refuse(cmd, 'forbidden', `viewers may not send ${cmd}`);
  if (args.team !== undefined) intIn(cmd, 'team', args.team, 0, 255);
  if (role === 'admin' && args.team === undefined) refuse(cmd, 'bad_arg', "missing field 'team' (an admin names the team)");
  if (role === 'player' && Number.isInteger(team) && args.team !== undefined && args.team !== team) {
    refuse(cmd, 'forbidden', `field 'team' must be this player's team, ${team}`);
  }
}

function checkRect(cmd, v, world) {
  if (!Array.isArray(v) || v.length !== 4 || !v.every((c) => typeof c === 'number')) {
    refuse(cmd, 'bad_arg', "field 'rect' must be [x, y, w, h]");
  }
  const [x, y, w, h] = v;
  if (!v.every(isNumber) || x < 0 || y < 0 || x > world.width || y > world.height) {
    refuse(cmd, 'out_of_range', "field 'rect' must start in the world");
  }
  if (w <= 0 || h <= 0) refuse(cmd, 'bad_arg', "field 'rect' must have w > 0 and h > 0");
}

function checkSelect(args, world, place) {
  const cmd = 'select';
  onlyFields(cmd, args, [...SELECTIONS, 'squad', 'team']);
  const given = SELECTIONS.filter((k) => args[k] !== undefined);
  if (given.length !== 1) refuse(cmd, 'bad_arg', 'give exactly one of rect, ids, all, squads');
  const v = args[given[0]];
  if (given[0] === 'rect') checkRect(cmd, v, world);
  else if (given[0] === 'ids') {
    listOf(cmd, 'ids', v, 1, MAX_IDS);
    v.forEach((id) => intIn(cmd, 'ids', id, 1, ID_MAX));
  } else if (given[0] === 'all') {
    if (v !== true) refuse(cmd, 'bad_arg', "field 'all' must be true");
  } else {
    listOf(cmd, 'squads', v, 1, MAX_SQUAD);
    v.forEach((s) => intIn(cmd, 'squads', s, 0, MAX_SQUAD));
  }
  if (args.squad !== undefined) intIn(cmd, 'squad', args.squad, 0, MAX_SQUAD);
  checkTeam(cmd, args, place);
}

const ORDER_ARGS = { move: ['to', 'queue'], patrol: ['to'], follow: ['squad_of', 'unit'] };

function checkOrder(args, world, place) {
  const cmd = 'order';
  onlyFields(cmd, args, ['squad', 'do', 'to', 'queue', 'squad_of', 'unit', 'team']);
  for (const name of ['squad', 'do']) if (args[name] === undefined) refuse(cmd, 'bad_arg', `missing field '${name}'`);
  intIn(cmd, 'squad', args.squad, 1, MAX_SQUAD);
  const { do: what } = args;
  if (!ORDERS.includes(what)) refuse(cmd, 'bad_arg', `field 'do' must be one of ${ORDERS.join(', ')}`);
  for (const name of ['to', 'queue', 'squad_of', 'unit']) {
    if (args[name] !== undefined && !(ORDER_ARGS[what] || []).includes(name)) {
      refuse(cmd, 'bad_arg', `field '${name}' does not go with do '${what}'`);
    }
  }
  if (what === 'move' || what === 'patrol') {
    if (args.to === undefined) refuse(cmd, 'bad_arg', "missing field 'to'");
    listOf(cmd, 'to', args.to, 1, what === 'move' ? MAX_WAYPOINTS : MAX_PATROL);
    args.to.forEach((p) => point(cmd, p, world));
    if (args.queue !== undefined && typeof args.queue !== 'boolean') refuse(cmd, 'bad_arg', "field 'queue' must be true or false");
  } else if (what === 'follow') {
    if ((args.squad_of === undefined) === (args.unit === undefined)) refuse(cmd, 'bad_arg', 'follow takes exactly one of squad_of, unit');
    if (args.squad_of !== undefined) intIn(cmd, 'squad_of', args.squad_of, 1, MAX_SQUAD);
    else intIn(cmd, 'unit', args.unit, 1, ID_MAX);
  }
  checkTeam(cmd, args, place);
}

function checkFormation(args, world, place) {
  const cmd = 'formation';
  onlyFields(cmd, args, ['squad', 'shape', 'spacing', 'team']);
  for (const name of ['squad', 'shape']) if (args[name] === undefined) refuse(cmd, 'bad_arg', `missing field '${name}'`);
  intIn(cmd, 'squad', args.squad, 1, MAX_SQUAD);
  if (!SHAPES.includes(args.shape)) refuse(cmd, 'bad_arg', `field 'shape' must be one of ${SHAPES.join(', ')}`);
  const s = args.spacing;
  if (s !== undefined) {
    if (typeof s !== 'number') refuse(cmd, 'bad_arg', "field 'spacing' must be a number");
    if (!Number.isFinite(s) || s < 1 || s > 200) refuse(cmd, 'out_of_range', "field 'spacing' must be in [1, 200]");
  }
  checkTeam(cmd, args, place);
}

/** The commands checked here, not by the schema: name -> check(args, world, place). */
export const HAND_CHECKED = new Map([['select', checkSelect], ['order', checkOrder], ['formation', checkFormation]]);

/** `to` as a list of points: one point [x, y] becomes [[x, y]]. */
export function pointList(to) {
  if (Array.isArray(to) && to.length === 2 && to.every((c) => typeof c === 'number')) return [to];
  return to;
}

// ---- §13.3: where the slots are ------------------------------------------------

/**
 * The [a, b] of slots 0..n-1 of `shape`: a across the facing (along r), b
 * back from the front row (along -f), in spacings. `none` has none.
 */
export function slotOffsets(shape, n) {
  const out = [];
  if (shape === 'line') for (let i = 0; i < n; i++) out.push([i - (n - 1) / 2, 0]);
  else if (shape === 'column') for (let i = 0; i < n; i++) out.push([0, i]);
  else if (shape === 'box') {
    const c = Math.ceil(Math.sqrt(n));
    for (let i = 0; i < n; i++) {
      const b = Math.floor(i / c);
      const m = Math.min(c, n - b * c);
      out.push([(i % c) - (m - 1) / 2, b]);
    }
  } else if (shape === 'wedge') {
    for (let b = 0; out.length < n; b++) {
      const m = Math.min(2 * b + 1, n - out.length); // row b starts at slot b*b
      for (let j = 0; j < m; j++) out.push([j - (m - 1) / 2, b]);
    }
  } else if (shape !== 'none') throw new RangeError(`unknown formation shape '${shape}'`);
  return out;
}

/**
 * The n slot positions [[x, y]] of a formation whose anchor (the middle of
 * its front row) is `anchor`, facing `facing` radians, `spacing` world
 * units between neighbours (§13.3).
 */
export function slots(shape, n, anchor, facing, spacing) {
  const fx = Math.cos(facing);
  const fy = Math.sin(facing);
  const [ax, ay] = anchor;
  return slotOffsets(shape, n).map(([a, b]) => [ax - a * spacing * fy - b * spacing * fx, ay + a * spacing * fx - b * spacing * fy]);
}

/** The slots of one entry of a `squads` message (§13.5); [] for `none`. */
export function entrySlots(e) {
  if (!e || !e.formation || e.formation === 'none') return [];
  return slots(e.formation, e.units, e.anchor, e.facing, e.spacing);
}

// |d| the shorter way round an axis of `size` (0: no wrap).
function gap(d, size) {
  const a = Math.abs(d);
  if (!size) return a;
  const m = a % size;
  return Math.min(m, size - m);
}

/**
 * The share (0..1) of `slotList` that has a point of `points` within
 * `tolerance`, each point taken for one slot at most, closest pairs first.
 * 1 when there are no slots. `wrap`: [width, height] of a wrapping world,
 * whose distances are the shorter way round.
 */
export function slotFit(slotList, points, tolerance, wrap = null) {
  if (slotList.length === 0) return 1;
  const [w, h] = wrap || [0, 0];
  const pairs = [];
  const t2 = tolerance * tolerance;
  slotList.forEach(([sx, sy], si) => {
    points.forEach(([px, py], pi) => {
      const d2 = gap(sx - px, w) ** 2 + gap(sy - py, h) ** 2;
      if (d2 <= t2) pairs.push([d2, si, pi]);
    });
  });
  pairs.sort((p, q) => p[0] - q[0] || p[1] - q[1] || p[2] - q[2]);
  const slotTaken = new Set();
  const pointTaken = new Set();
  for (const [, si, pi] of pairs) {
    if (!slotTaken.has(si) && !pointTaken.has(pi)) {
      slotTaken.add(si);
      pointTaken.add(pi);
    }
  }
  return slotTaken.size / slotList.length;
}
