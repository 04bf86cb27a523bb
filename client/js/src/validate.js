// Client-side validation of commands from the protocol schema
// (proto/schema.json, copied to schema.js): what the schema refuses is
// refused before it is sent, with the code the server would give
// (unknown_cmd, bad_arg, out_of_range, forbidden, too_large) and a message
// naming the command and the field, worded as the server words it
// (`seek: field 'x' must be in [0, 1600]`). Checks run in the server's
// order: the command, its members, each argument in the schema's order,
// the parameter registry, then the sender's role. A command with open_args
// (game) takes any members, any JSON, up to OPEN_ARGS_MAX bytes of them. What only the live room
// can decide (capacity, not_found, rate limits) is left to the server.
// Pure: no I/O.

import schema from './schema.js';
import { CommandError } from './errors.js';

/** The schema's commands by name. */
export const COMMANDS = new Map(schema.commands.map((c) => [c.name, c]));

/** The schema itself (proto/schema.json). */
export { schema };

// A bound of the schema: a number or an expression over W, H and C with
// min(), max(), / and * (schema.py's BOUND), read left to right.
function parseBound(text, world) {
  let at = 0;
  const skip = () => { while (text[at] === ' ') at++; };
  const expect = (ch) => {
    skip();
    if (text[at] !== ch) throw new Error(`bound "${text}": expected '${ch}' at ${at}`);
    at++;
  };
  let expr;
  const atom = () => {
    skip();
    const number = /^[0-9]+(\.[0-9]+)?/.exec(text.slice(at));
    if (number) {
      at += number[0].length;
      return Number(number[0]);
    }
    const ch = text[at];
    if (ch === 'W' || ch === 'H' || ch === 'C') {
      at++;
      return { W: world.width, H: world.height, C: world.capacity }[ch];
    }
    const fn = text.slice(at, at + 4);
    if (fn !== 'min(' && fn !== 'max(') throw new Error(`bound "${text}": unexpected text at ${at}`);
    at += 4;
    const a = expr();
    expect(',');
    const b = expr();
    expect(')');
    return fn === 'min(' ? Math.min(a, b) : Math.max(a, b);
  };
  expr = () => {
    let v = atom();
    for (skip(); text[at] === '/' || text[at] === '*'; skip()) {
      const op = text[at++];
      const w = atom();
      v = op === '/' ? v / w : v * w;
    }
    return v;
  };
  const v = expr();
  skip();
  if (at !== text.length) throw new Error(`bound "${text}": unexpected text at ${at}`);
  return v;
}

/**
 * The value of a schema bound (a number, or an expression such as
 * "min(W,H)/4") in `world` ({width, height, capacity}: the welcome's
 * world). The world's sizes are float32 on the server, and so here.
 */
export function boundValue(bound, world) {
  if (typeof bound === 'number') return bound;
  return parseBound(bound, {
    width: Math.fround(world.width), height: Math.fround(world.height), capacity: world.capacity,
  });
}

const utf8 = new TextEncoder();
const ROOM_CHARS = /^[A-Za-z0-9_-]*$/;
// Printable: no U+0000..U+001F, U+007F..U+009F (PROTOCOL.md §5.4).
// eslint-disable-next-line no-control-regex
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f]/;

const refuse = (cmd, code, text) => {
  throw new CommandError(code, `${cmd}: ${text}`, { command: cmd, local: true });
};

/** Checks a number against [lo, hi], whole if `integer`, as the server's check_num does. */
function checkNumber(cmd, name, v, lo, hi, integer) {
  if (typeof v !== 'number' || !Number.isFinite(v)) {
    // NaN and the infinities go out as JSON null: not a number.
    refuse(cmd, 'bad_arg', `field '${name}' must be ${integer ? 'an integer' : 'a number'}`);
  }
  if (integer && !Number.isInteger(v)) refuse(cmd, 'bad_arg', `field '${name}' must be an integer`);
  if (v < lo || v > hi) refuse(cmd, 'out_of_range', `field '${name}' must be in [${lo}, ${hi}]`);
}

function checkString(cmd, a, v) {
  if (typeof v !== 'string') refuse(cmd, 'bad_arg', `field '${a.name}' must be a string`);
  if (a.type === 'enum') {
    if (!a.values.includes(v)) refuse(cmd, 'bad_arg', `field '${a.name}' must be one of ${a.values.join(', ')}`);
    return;
  }
  const n = utf8.encode(v).length;
  const min = a.min_len || 0;
  if (n < min || n > a.max_len) {
    refuse(cmd, 'out_of_range', `field '${a.name}' must be ${min} to ${a.max_len} bytes long`);
  }
  const ok = a.chars === 'room' ? ROOM_CHARS.test(v) : !UNPRINTABLE.test(v);
  if (!ok) refuse(cmd, 'bad_arg', `field '${a.name}' contains characters that are not allowed`);
}

// An array argument (PROTOCOL.md §13): its length, then each item.
function checkArray(cmd, a, v, world) {
  if (!Array.isArray(v)) refuse(cmd, 'bad_arg', `field '${a.name}' must be an array`);
  if (v.length < a.min_items || v.length > a.max_items) {
    refuse(cmd, 'out_of_range', `field '${a.name}' must hold ${a.min_items} to ${a.max_items} elements`);
  }
  for (const item of v) {
    if (a.items === 'point') {
      if (!Array.isArray(item) || item.length !== 2) refuse(cmd, 'bad_arg', `field '${a.name}' must hold points [x, y]`);
      checkNumber(cmd, a.name, item[0], 0, Math.fround(world.width), false);
      checkNumber(cmd, a.name, item[1], 0, Math.fround(world.height), false);
    } else {
      checkNumber(cmd, a.name, item, boundValue(a.min, world), boundValue(a.max, world), a.items === 'int');
    }
  }
}

// [x, y, w, h]: x, y in the world, w and h above 0 (and at most 10^7).
function checkRect(cmd, a, v, world) {
  if (!Array.isArray(v)) refuse(cmd, 'bad_arg', `field '${a.name}' must be an array`);
  if (v.length !== 4) refuse(cmd, 'out_of_range', `field '${a.name}' must hold 4 to 4 elements`);
  const hi = [Math.fround(world.width), Math.fround(world.height), 1e7, 1e7];
  v.forEach((item, k) => checkNumber(cmd, a.name, item, 0, hi[k], false));
  if (v[2] <= 0 || v[3] <= 0) refuse(cmd, 'out_of_range', `field '${a.name}' must have a width and height above 0`);
}

// Exactly one of the command's one_of arguments (select, follow).
function checkOneOf(c, args) {
  if (!c.one_of) return;
  const given = c.one_of.filter((n) => args[n] !== undefined && args[n] !== null).length;
  if (given !== 1) {
    const names = c.one_of.map((n) => `'${n}'`);
    refuse(c.name, 'bad_arg', `exactly one of ${names.slice(0, -1).join(', ')} or ${names[names.length - 1]}`);
  }
}

function checkArg(cmd, a, v, world) {
  if (a.type === 'int' || a.type === 'number') {
    checkNumber(cmd, a.name, v, boundValue(a.min, world), boundValue(a.max, world), a.type === 'int');
  } else if (a.type === 'bool') {
    if (typeof v !== 'boolean') refuse(cmd, 'bad_arg', `field '${a.name}' must be true or false`);
    if (a.values && !a.values.includes(v)) refuse(cmd, 'bad_arg', `field '${a.name}' must be ${a.values[0]}`);
  } else if (a.type === 'array') {
    checkArray(cmd, a, v, world);
  } else if (a.type === 'rect') {
    checkRect(cmd, a, v, world);
  } else {
    checkString(cmd, a, v);
  }
}

// The members: only the command's arguments (or, for a registry command,
// the registry's names), none of them an object or array but array arguments.
function checkMembers(c, args, registry) {
  const known = new Set(c.args.map((a) => a.name));
  const arrays = new Set(c.args.filter((a) => a.type === 'array' || a.type === 'rect').map((a) => a.name));
  for (const [name, v] of Object.entries(args)) {
    if (v === undefined) continue;
    const param = c.registry && !known.has(name);
    if (name === 'cmd' || name === 'id' || (!known.has(name) && !(param && (!registry || registry.has(name))))) {
      refuse(c.name, 'bad_arg', `unknown ${c.registry ? 'parameter' : 'field'} '${name}'`);
    }
    if (v !== null && typeof v === 'object' && !(Array.isArray(v) && arrays.has(name))) {
      refuse(c.name, 'bad_arg', `field '${name}' must not be an object or array`);
    }
  }
}

/** A command with open_args (game, §14.2): its members as compact JSON, at most this many bytes. */
export const OPEN_ARGS_MAX = 1024;

// Any members, any JSON (game): neither cmd nor id (the message's own),
// at most OPEN_ARGS_MAX bytes of them as JSON.
function checkOpenArgs(c, args) {
  for (const name of ['cmd', 'id']) {
    if (args[name] !== undefined) refuse(c.name, 'bad_arg', `member '${name}' is the message's own, not the command's`);
  }
  if (utf8.encode(JSON.stringify(args)).length > OPEN_ARGS_MAX) {
    refuse(c.name, 'too_large', `the members of a ${c.name} command are over ${OPEN_ARGS_MAX} bytes`);
  }
}

// The parameter registry's values (params): each within its range, at least one.
function checkRegistry(c, args, registry) {
  let count = 0;
  for (const [name, v] of Object.entries(args)) {
    if (v === undefined || c.args.some((a) => a.name === name)) continue;
    count++;
    const p = registry && registry.get(name);
    if (p) checkNumber(c.name, name, v, p.min, p.max, p.integer);
    else checkNumber(c.name, name, v, -Infinity, Infinity, false);
  }
  if (count === 0 && args.reset !== true) refuse(c.name, 'bad_arg', 'no parameter given (and no reset)');
}

// The role table (PROTOCOL.md §5.6) for the schema's `who` and `team_arg`.
function checkRole(c, args, place) {
  const { role, mode, team } = place;
  if (!role || c.who === 'anyone' || role === 'admin') return;
  if (c.who === 'admin') refuse(c.name, 'forbidden', `only admins may send ${c.name}; this client is a ${role}`);
  if (role === 'viewer') refuse(c.name, 'forbidden', `viewers may not send ${c.name}`);
  const teamArg = c.team_arg && c.args.find((a) => a.name === c.team_arg);
  const own = teamArg && !teamArg.required && args[c.team_arg] === undefined; // absent: its own
  if (mode === 'rts' && c.team_arg && Number.isInteger(team) && args[c.team_arg] !== team && !own) {
    refuse(c.name, 'forbidden', `field '${c.team_arg}' must be this player's team, ${team}`);
  }
}

/**
 * Throws a CommandError (local: true) if the server would refuse command
 * `cmd` with arguments `args` (a plain object; members whose value is
 * undefined count as absent) before looking at the room. `place` is what
 * the welcome said: {world: {width, height, capacity}, params: the
 * registry [{name, min, max, integer}], role, mode, team}; without a world
 * the ranges that depend on it are not checked, without a role the role
 * table is not. Returns nothing.
 */
export function validateCommand(cmd, args = {}, place = {}) {
  const c = COMMANDS.get(cmd);
  if (!c) refuse(String(cmd), 'unknown_cmd', `unknown command '${cmd}'`);
  if (args === null || typeof args !== 'object' || Array.isArray(args)) {
    refuse(cmd, 'bad_arg', 'the arguments must be an object');
  }
  const registry = place.params ? new Map(place.params.map((p) => [p.name, p])) : null;
  if (c.open_args) checkOpenArgs(c, args);
  else checkMembers(c, args, registry);
  const world = place.world || { width: Infinity, height: Infinity, capacity: Infinity };
  for (const a of c.args) {
    const v = args[a.name];
    if (v === undefined) {
      if (a.required) refuse(cmd, 'bad_arg', `missing field '${a.name}'`);
      continue;
    }
    checkArg(cmd, a, v, world);
  }
  checkOneOf(c, args);
  if (c.registry) checkRegistry(c, args, registry);
  checkRole(c, args, place);
}
