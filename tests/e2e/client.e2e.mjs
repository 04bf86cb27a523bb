// The JavaScript client library (client/js) in node against real flockd
// processes: every command acked (goto on a recording played by flockd
// --replay --serve); what the schema refuses refused before sending, with
// the code the server gives the same command sent anyway, the command
// vectors (proto/vectors/commands.json) included; the role table and
// apply-time errors; snapshots of versions 1 and 2 with velocities;
// version 3: the view acked with its members, frames that hold only the
// rect's super-tiles and the same boids as the whole room's stream of the
// same tick, ids stable across frames, the view sent again after a
// reconnection, a view given at connect in the URL, the audiences' flags
// of an rts room; a frame that cannot
// be decoded counted, a key frame asked for, nothing handed out (both
// versions); reconnection after flockd is killed and started again on
// the same port (the room, role and RTS team joined again, a command sent
// meanwhile answered, snapshots again); a kick ending the client; wss with
// a self-signed certificate.
//
// usage: node client.e2e.mjs FLOCKD [--functional | --timing [--untimed]]
//   --timing: only that the client resumes within 2 s of flockd answering
//   again (with --untimed, as sanitizer builds run it: that it resumes, the
//   time printed, not judged); --functional: everything else.
// Prints one line per check and last "N passed, N failed"; exits 1 on failure.

import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ROOT, check, assert, sleep, waitFor, finish, anyFailed, crashed, startFlockd, killServers,
} from './harness.mjs';
import {
  connect, schema, validateCommand, CommandError, ConnectionError, Snapshot, gridAt,
} from '../../client/js/src/index.js';
import { frame as v3Frame, deltaPart, stayBits } from '../web/v3_fixture.mjs';

const [flockdBin, ...options] = process.argv.slice(2);
const TIMING = options.includes('--timing');
const UNTIMED = options.includes('--untimed');
const FAST = ['--rate', '5000', '--burst', '5000'];

/** The error `promise` rejects with (it must reject). */
async function rejection(promise) {
  try {
    await promise;
  } catch (e) {
    return e;
  }
  throw new Error('it did not reject');
}

/** Valid arguments of every command, in a room of 1600 x 1000 (obstacle and client filled in by the caller). */
function validArgs(c, { obstacle, client }) {
  return {
    ping: {}, seek: { group: 1, x: 400, y: 300 }, seek_clear: { group: 1 }, obstacle_add: { x: 800, y: 500, r: 20 },
    obstacle_remove: { obstacle }, obstacle_clear: {}, spawn: { n: 10, group: 2, x: 100, y: 100 },
    despawn: { n: 5, group: 2 }, params: { group: 2, w_alignment: 2 }, pause: {}, step: { n: 2 }, resume: {},
    reset: { seed: 7, boids: 50 }, kick: { client }, keyframe: {}, stats: {}, join: { room: 'acks', role: 'admin' },
    // Squads of group 0 (the reset's boids): an admin names the team.
    select: { team: 0, all: true, squad: 1 }, move: { team: 0, squad: 1, to: [[800, 500]], queue: true },
    patrol: { team: 0, squad: 1, to: [[100, 100], [200, 100]] }, follow: { team: 0, squad: 1, squad_of: 2 },
    hold: { team: 0, squad: 1 }, stop: { team: 0, squad: 1 }, formation: { team: 0, squad: 1, shape: 'wedge' },
  }[c];
}

async function everyCommandIsAcked(url) {
  // game and script are a scripted room's (tests/integration/test_game_clients.py).
  await check('every command is acked with the tick and its ack members (goto: on a recording, view: on a version 3 connection)', async () => {
    const c = await connect(url, { room: 'acks', role: 'admin', mode: 'sandbox', boids: 20 });
    const other = await connect(url, { room: 'acks', role: 'viewer' });
    const ids = { client: other.welcome.client, obstacle: null };
    for (const cmd of schema.commands.map((x) => x.name).filter((x) => !['goto', 'view', 'game', 'script'].includes(x))) {
      const method = cmd.replace(/_([a-z])/g, (_, l) => l.toUpperCase());
      if (cmd === 'follow') await c.select({ team: 0, rect: [800, 0, 800, 1000], squad: 2 }); // what it follows
      const ack = await c[method](validArgs(cmd, ids));
      assert(Number.isInteger(ack.tick) && !('type' in ack) && !('id' in ack), `${cmd}: ${JSON.stringify(ack)}`);
      for (const [k, spec] of Object.entries(schema.commands.find((x) => x.name === cmd).ack)) {
        assert(spec.optional || k in ack, `${cmd}: no ${k} in ${JSON.stringify(ack)}`);
      }
      if (cmd === 'obstacle_add') ids.obstacle = ack.obstacle;
    }
    assert((await c.stats()).stats.boids === 50, 'reset gave 50 boids');
    const e = await rejection(other.nextSnapshot({ timeoutMs: 3000 }));
    assert(e instanceof ConnectionError && e.code === 'closed_by_server' && other.state === 'closed',
      `the kicked client: ${e} (${other.state})`);
    await c.close();
  });
}

/** A few refusals of command c that the schema decides, each {args, code}. */
function refusals(c) {
  // Any members (game): the schema refuses only what is over 1024 bytes; the rest is the room's.
  if (c.open_args) return [{ args: { s: 'x'.repeat(1100) }, code: 'too_large' }];
  const base = Object.fromEntries(c.args.filter((a) => a.required).map((a) => [a.name, a.type === 'string' ? 'abc'
    : a.type === 'enum' ? a.values[0] : typeof a.min === 'number' ? a.min : 1]));
  if (c.registry) base.w_alignment = 1;
  const out = [{ args: { ...base, no_such_field: 1 }, code: 'bad_arg' }];
  for (const a of c.args) {
    if (a.required) {
      const { [a.name]: _, ...rest } = base;
      out.push({ args: rest, code: 'bad_arg' });
    }
    if (a.type === 'int' || a.type === 'number') {
      out.push({ args: { ...base, [a.name]: -1e9 }, code: 'out_of_range' });
      out.push({ args: { ...base, [a.name]: 'x' }, code: 'bad_arg' });
    }
    if (a.type === 'enum') out.push({ args: { ...base, [a.name]: 'nothing' }, code: 'bad_arg' });
    if (a.type === 'string') out.push({ args: { ...base, [a.name]: 'x'.repeat(a.max_len + 1) }, code: 'out_of_range' });
  }
  if (c.registry) out.push({ args: { group: 1 }, code: 'bad_arg' }, { args: { w_alignment: 1e9 }, code: 'out_of_range' });
  return out;
}

async function refusalsMatchTheServer(url) {
  await check('what the schema refuses is refused before sending, with the code flockd gives it', async () => {
    const c = await connect(url, { room: 'refuse', role: 'admin' });
    let n = 0;
    for (const cmd of schema.commands) {
      for (const { args, code } of refusals(cmd)) {
        const method = cmd.name.replace(/_([a-z])/g, (_, l) => l.toUpperCase());
        const local = await rejection(c[method](args));
        assert(local instanceof CommandError && local.local && local.code === code,
          `${cmd.name} ${JSON.stringify(args)}: locally ${local.code} (${local.message}), expected ${code}`);
        const server = await rejection(c.command(cmd.name, args, { validate: false }));
        assert(server instanceof CommandError && !server.local && server.code === code,
          `${cmd.name} ${JSON.stringify(args)}: flockd says ${server.code} (${server.message}), expected ${code}`);
        n++;
      }
    }
    assert(n > 60, `only ${n} cases`);
    console.log(`     ${n} refusals, each refused alike by the library and by flockd`);
    await c.close();
  });

  await check('the command vectors: the library takes what flockd takes and refuses as flockd refuses', async () => {
    const c = await connect(url, { room: 'vectors', role: 'admin' });
    const vectors = JSON.parse(readFileSync(join(ROOT, 'proto', 'vectors', 'commands.json'), 'utf8'));
    const place = { ...c.place, world: vectors.limits };
    let n = 0;
    for (const v of vectors.cases) {
      // Only what a caller of the library can ask for: JSON objects of a
      // command without an id (the library numbers its own), not refused
      // for their JSON text or size.
      let msg;
      try { msg = JSON.parse(v.text); } catch { continue; }
      if (!msg || typeof msg !== 'object' || Array.isArray(msg) || typeof msg.cmd !== 'string' || 'id' in msg) continue;
      if (['bad_json', 'too_large'].includes(v.error) || /duplicate|1e999|overflows/.test(v.name)) continue;
      const { cmd, ...args } = msg;
      let code = null;
      try { validateCommand(cmd, args, place); } catch (e) { code = e.code; }
      assert(code === (v.ok ? null : v.error), `${v.name}: the library says ${code}, the vector ${v.error || 'ok'}`);
      if (v.ok) continue; // refused: changes nothing, so send it

      const server = await rejection(c.command(cmd, args, { validate: false }));
      assert(server.code === v.error, `${v.name}: flockd says ${server.code}, the vector ${v.error}`);
      n++;
    }
    assert(n > 30, `only ${n} vectors sent`);
    await c.close();
  });

  await check('the role table: viewers and players are refused what flockd refuses them, locally', async () => {
    const viewer = await connect(url, { room: 'refuse', role: 'viewer' });
    const player = await connect(url, { room: 'refuse', role: 'player', name: 'p' });
    const cases = [[viewer, 'seek', { group: 1, x: 1, y: 1 }], [viewer, 'obstacle_add', { x: 1, y: 1, r: 5 }],
      [player, 'spawn', { n: 1, group: 1, x: 1, y: 1 }], [player, 'pause', {}], [player, 'params', { w_alignment: 1 }]];
    for (const [c, cmd, args] of cases) {
      const local = await rejection(c.command(cmd, args));
      const server = await rejection(c.command(cmd, args, { validate: false }));
      assert(local.code === 'forbidden' && local.local && server.code === 'forbidden' && !server.local,
        `${c.role} ${cmd}: ${local.code} / ${server.code}`);
    }
    assert((await player.seek({ group: 4, x: 10, y: 10 })).tick >= 0, 'a sandbox player steers any group');
    const rts = await connect(url, { room: 'arena', role: 'player', mode: 'rts', name: 'ann' });
    assert(rts.team >= 1 && rts.mode === 'rts', `team ${rts.team}`);
    const other = rts.team === 1 ? 2 : 1;
    const local = await rejection(rts.seek({ group: other, x: 10, y: 10 }));
    const server = await rejection(rts.seek({ group: other, x: 10, y: 10 }, { validate: false }));
    assert(local.code === 'forbidden' && server.code === 'forbidden', `another team: ${local.code} / ${server.code}`);
    await rts.seek({ group: rts.team, x: 10, y: 10 });
    await Promise.all([viewer.close(), player.close(), rts.close()]);
  });

  await check('a dropped connection comes back with the same RTS team (its rejoin token) and snapshots', async () => {
    const c = await connect(url, { room: 'teams', role: 'player', mode: 'rts', name: 'cy' });
    const team = c.team;
    const back = c.once('reconnect');
    c.conn.ws.terminate(); // the network gone, as far as this client knows
    const { downMs } = await back;
    assert(c.team === team && c.room === 'teams' && c.role === 'player', `team ${c.team}, was ${team}`);
    // The roster that shows it back may come after the reconnect (a slow build).
    const isBack = () => c.roster && c.roster.players.some((p) => p.team === team && p.connected && p.name === 'cy');
    for (const deadline = Date.now() + 10000; !isBack() && Date.now() < deadline;) {
      await Promise.race([c.once('roster'), new Promise((r) => setTimeout(r, 100))]);
    }
    assert(isBack(), JSON.stringify(c.roster));
    await c.seek({ group: team, x: 5, y: 5 });
    assert((await c.nextSnapshot()).tick >= 0, 'snapshots again');
    console.log(`     back in ${downMs} ms`);
    await c.close();
  });

  await check('apply-time errors are the server\'s: not_found, capacity', async () => {
    const c = await connect(url, { room: 'apply', role: 'admin' });
    const e = await rejection(c.obstacleRemove({ obstacle: 4242 }));
    assert(e instanceof CommandError && e.code === 'not_found' && !e.local && e.command === 'obstacle_remove', String(e));
    const full = await rejection(c.spawn({ n: c.world.capacity, group: 1, x: 5, y: 5 }));
    assert(full.code === 'capacity' && !full.local, String(full));
    const big = await rejection(c.params({ w_alignment: 1, ...Object.fromEntries(Array.from({ length: 600 }, (_, i) => [`p${i}`, 1])) },
      { validate: false }));
    assert(big.code === 'too_large' && big.local && c.state === 'open', `an oversized message: ${big.code}`);
    await c.close();
  });
}

function checkSnapshot(s, c, prev) {
  assert(s instanceof Snapshot && s.frame.version === c.protocol, `version ${s.frame.version}, protocol ${c.protocol}`);
  assert(s.count === s.x.length && s.x instanceof Float64Array && s.group instanceof Uint8Array, 'typed arrays');
  assert(s.width === c.world.width && s.height === c.world.height, 'world size');
  assert(Math.abs(s.time - Date.now() / 1000) < 30, `time ${s.time}`);
  assert(s.ids === null, 'ids');
  for (let i = 0; i < s.count; i++) {
    assert(s.heading[i] >= 0 && s.heading[i] < 2 * Math.PI, `heading ${s.heading[i]}`);
    assert(s.x[i] >= 0 && s.x[i] <= s.width && s.y[i] >= 0 && s.y[i] <= s.height, 'position');
  }
  if (prev && prev.epoch === s.epoch && s.tick > prev.tick) {
    const finite = Array.from(s.vx).filter(Number.isFinite).length;
    assert(finite === s.count, `${finite} of ${s.count} velocities known`);
    const speed = Math.hypot(s.vx[0], s.vy[0]);
    assert(speed > 1 && speed < 1000, `speed ${speed}`);
  }
}

async function snapshotsOfBothVersions(url) {
  for (const protocol of [2, 1]) {
    await check(`snapshots of version ${protocol}: typed arrays, radians, velocities within an epoch`, async () => {
      const c = await connect(url, { room: `snap${protocol}`, role: 'admin', protocol, boids: 200 });
      assert(c.protocol === protocol, `protocol ${c.protocol}`);
      let prev = null;
      let n = 0;
      for await (const s of c.snapshots()) {
        checkSnapshot(s, c, prev);
        if (n === 0) assert(Array.from(s.vx).every(Number.isNaN), 'the first snapshot knows no velocity');
        prev = s;
        if (++n === 4) break;
      }
      const it = c.snapshots();
      await c.spawn({ n: 30, group: 5, x: 800, y: 500, spread: 10 });
      let s;
      do ({ value: s } = await it.next()); while (s.of(5).count === 0);
      it.return();
      assert(Array.from(s.vx).every(Number.isNaN), 'a new epoch knows no velocity');
      const g = s.of(5);
      assert(g.count === 30 && g.start + g.count === s.count, `group 5: ${g.start} + ${g.count} of ${s.count}`);
      assert(g.x.every((x) => Math.abs(x - 800) <= 40), 'the group\'s boids where they were spawned');
      assert(c.counters.snapshots >= 5 && c.counters.badFrames === 0, JSON.stringify(c.counters));
      await c.close();
    });
  }

  await check('a frame that cannot be decoded is counted, a key frame asked for, nothing handed out', async () => {
    const c = await connect(url, { room: 'snap2', role: 'viewer' });
    const handed = [];
    c.on('snapshot', (s) => handed.push(s));
    const bad = c.once('badframe');
    await c.nextSnapshot();
    handed.length = 0;
    c.onFrame(Uint8Array.of(0x46, 0x4b, 2, 2, 0, 0).buffer); // as if the server had sent it
    const e = await bad;
    assert(e.code === 'truncated' && c.counters.badFrames === 1 && c.counters.keyframesAsked === 1,
      `${e.code} ${JSON.stringify(c.counters)}`);
    const s = await c.nextSnapshot();
    assert(s.count > 0 && handed.every((h) => h.count > 0), 'only decoded frames are handed out');
    await c.close();
  });
}

// ---- version 3 ------------------------------------------------------------------------

/** Whether super-tile (tx, ty) is in rect [x, y, cols, rows] of a grid of gc x gr super-tiles (it wraps). */
function inRect(tx, ty, [x, y, cols, rows], gc, gr) {
  return (tx - x + gc) % gc < cols && (ty - y + gr) % gr < rows;
}

/** Distance on a torus of w x h. */
function dist(ax, ay, bx, by, w, h) {
  const dx = Math.abs(ax - bx);
  const dy = Math.abs(ay - by);
  return Math.hypot(Math.min(dx, w - dx), Math.min(dy, h - dy));
}

/** The first snapshot of `c` after tick `tick`. */
async function snapshotAfter(c, tick) {
  for (;;) {
    const s = await c.nextSnapshot();
    if (s.tick > tick) return s;
  }
}

/** "qx,qy,heading,group" of each boid of frame f at [start, end), sorted: a multiset to compare. */
function boidKeys(f, keep = () => true) {
  const out = [];
  for (let i = 0; i < f.boidCount; i++) if (keep(i)) out.push(`${f.qx[i]},${f.qy[i]},${f.heading[i]},${f.group[i]}`);
  return out.sort();
}

async function viewsOfVersion3(url) {
  let c = null;
  let whole = null;
  await check('version 3: the welcome\'s stream, then the whole room at shift and sample 0 until a view', async () => {
    c = await connect(url, { room: 'views', role: 'admin', mode: 'sandbox', boids: 3000, protocol: 3 });
    const st = c.welcome.stream;
    assert(c.protocol === 3 && st && st.tiles.cols >= 2 && st.field.cells >= 1 && st.audience === 'all', JSON.stringify(st));
    const s = await c.nextSnapshot();
    assert(s.version === 3 && s.count === 3000 && s.roomBoids === 3000 && s.shift === 0 && s.sample === 0, `${s.count} ${s.shift} ${s.sample}`);
    assert(s.rect.cols === st.tiles.cols && s.rect.rows === st.tiles.rows, JSON.stringify(s.rect));
    assert(new Set(s.ids).size === s.count && s.ids.every((id) => id >= 1), 'ids unique, from 1');
    whole = await connect(url, { room: 'views', role: 'viewer', protocol: 2 });
  });
  if (!c || !whole) return;
  const view = { x: 300, y: 200, w: 700, h: 450, px: 700, budget: 200000 };
  let ack = null;
  await check('a view is acked with its members, and the frames after it hold only the rect\'s super-tiles', async () => {
    const event = c.once('view');
    ack = await c.view(view);
    for (const k of Object.keys(schema.commands.find((x) => x.name === 'view').ack)) assert(k in ack, `no ${k} in ${JSON.stringify(ack)}`);
    assert(ack.rect.length === 4 && ack.shift === 0 && ack.sample === 0 && ack.boids > 0 && ack.bytes > 0 && ack.rate > 0, JSON.stringify(ack));
    assert(JSON.stringify((await event).view) === JSON.stringify(view) && c.viewAck === ack, 'the view event');
    const { cols, rows } = c.welcome.stream.tiles;
    const gc = gridAt(cols, ack.shift);
    const gr = gridAt(rows, ack.shift);
    const s = await snapshotAfter(c, ack.tick);
    assert(JSON.stringify([s.rect.x, s.rect.y, s.rect.cols, s.rect.rows]) === JSON.stringify(ack.rect), `rect ${JSON.stringify(s.rect)}`);
    assert(s.count > 0 && s.count < 3000, `${s.count} boids`);
    const f = s.frame;
    for (let i = 0; i < s.count; i++) {
      const tx = ((f.qx[i] * cols) >>> 16) >> ack.shift;
      const ty = ((f.qy[i] * rows) >>> 16) >> ack.shift;
      assert(inRect(tx, ty, ack.rect, gc, gr), `boid ${s.ids[i]} in super-tile (${tx}, ${ty}), outside ${ack.rect}`);
    }
  });
  await check('a view frame holds the same boids as the whole room\'s stream of the same tick, in its rect', async () => {
    const { cols, rows } = c.welcome.stream.tiles;
    // Both streams are kept: either may get a tick's frame first, and each
    // may skip ticks the other gets (a viewer gets the newest frame).
    const ticks = new Map();
    const views = new Map();
    const stops = [
      whole.on('snapshot', (s) => ticks.set(s.tick, s.frame)),
      c.on('snapshot', (v) => views.set(v.tick, v)),
    ];
    try {
      const s = await waitFor('a tick both streams sent', () => {
        for (const [tick, v] of views) if (ticks.has(tick)) return v;
        return null;
      }, 5000, 20);
      const w = ticks.get(s.tick);
      const inside = (i) => inRect((w.qx[i] * cols) >>> 16, (w.qy[i] * rows) >>> 16, ack.rect, cols, rows);
      const a = boidKeys(s.frame);
      const b = boidKeys(w, inside);
      assert(a.length === b.length && a.every((k, i) => k === b[i]), `tick ${s.tick}: ${a.length} boids, the whole room has ${b.length} there`);
    } finally {
      for (const stop of stops) stop();
    }
  });
  await check('ids are stable across frames: a boid seen again is near where it was, its velocity known', async () => {
    const a = await c.nextSnapshot();
    const b = await c.nextSnapshot();
    const at = new Map(Array.from(a.ids, (id, i) => [id, i]));
    const dt = (b.tick - a.tick) / c.welcome.tick_hz;
    const top = 3 * c.welcome.values.max_speed * dt + 1;
    let shared = 0;
    for (let i = 0; i < b.count; i++) {
      const j = at.get(b.ids[i]);
      if (j === undefined) continue;
      shared++;
      const d = dist(b.x[i], b.y[i], a.x[j], a.y[j], b.width, b.height);
      assert(d <= top, `boid ${b.ids[i]} jumped ${d.toFixed(1)} units in ${dt} s`);
      assert(Number.isFinite(b.vx[i]) && Math.hypot(b.vx[i], b.vy[i]) < 3 * c.welcome.values.max_speed, `boid ${b.ids[i]}: v ${b.vx[i]}`);
    }
    assert(shared > 0.8 * Math.min(a.count, b.count), `${shared} of ${b.count} boids seen in both frames`);
  });
  await check('a refused version 3 frame (no base) is counted and a key frame asked for; frames go on', async () => {
    const bad = c.once('badframe');
    const before = { ...c.counters };
    c.onFrame(v3Frame({ seq: 99999, parts: [deltaPart({ count: 0, bits: stayBits([], 0) })], hash: 0 }).buffer);
    const e = await bad;
    assert(e.code === 'no_base' && c.counters.badFrames === before.badFrames + 1 && c.counters.keyframesAsked === before.keyframesAsked + 1,
      `${e.code} ${JSON.stringify(c.counters)}`);
    const s = await c.nextSnapshot();
    assert(s.count > 0 && c.counters.badFrames === before.badFrames + 1, 'frames again');
  });
  await check('after a reconnection the client sends its view again: the frames hold its rect, not the whole room', async () => {
    const again = c.once('view');
    c.conn.ws.terminate();
    const resent = await again;
    assert(JSON.stringify(resent.view) === JSON.stringify(view) && JSON.stringify(resent.rect) === JSON.stringify(ack.rect),
      `the view sent again: ${JSON.stringify(resent)}`);
    const s = await snapshotAfter(c, resent.tick);
    assert(s.count < 3000 && JSON.stringify([s.rect.x, s.rect.y, s.rect.cols, s.rect.rows]) === JSON.stringify(ack.rect), `${s.count} boids`);
    assert(c.counters.reconnects === 1, JSON.stringify(c.counters));
  });
  await check('a whole-world view at a small budget is sampled: fewer boids, a field in every part', async () => {
    const w = c.world;
    const a = await c.view({ x: 0, y: 0, w: w.width, h: w.height, px: 300, budget: 4000 });
    assert(a.sample > 0 && a.boids < 3000, JSON.stringify(a));
    const s = await snapshotAfter(c, a.tick);
    assert(s.sample === a.sample && s.count < 3000 && s.parts.every((p) => p.field && p.field.count.length === p.field.cells ** 2),
      `${s.count} boids at sample ${s.sample}`);
    const seen = s.parts.reduce((n, p) => n + p.field.count.reduce((x, y) => x + y, 0), 0);
    assert(seen === 3000, `the fields count ${seen} boids`);
  });
  await Promise.all([c.close(), whole.close()]);
  await check('an rts room: a player\'s frames are fogged, a spectator\'s delayed, by the welcome and the flags', async () => {
    const p = await connect(url, { room: 'fog3', role: 'player', mode: 'rts', name: 'fi', protocol: 3 });
    const v = await connect(url, { room: 'fog3', role: 'viewer', protocol: 3 });
    assert(p.welcome.stream.audience === 'team' && v.welcome.stream.audience === 'delayed' && v.welcome.stream.delay_s > 0,
      `${p.welcome.stream.audience} ${v.welcome.stream.audience}`);
    const ps = await p.nextSnapshot();
    const vs = await v.nextSnapshot({ timeoutMs: 15000 });
    assert(ps.fogged && !ps.delayed && vs.delayed && !vs.fogged, `player ${ps.fogged}/${ps.delayed}, spectator ${vs.fogged}/${vs.delayed}`);
    await Promise.all([p.close(), v.close()]);
  });
}

/** Kills flockd and starts it again on the same port; resolves to {server, answeredAt}. */
async function restart(server, args) {
  server.proc.kill('SIGKILL');
  await new Promise((r) => server.proc.once('exit', r));
  await sleep(700); // a few attempts fail and the backoff grows
  const again = await startFlockd(flockdBin, args, server.port);
  return { server: again, answeredAt: Date.now() };
}

async function reconnects() {
  const args = ['--boids', '100', ...FAST];
  let server = await startFlockd(flockdBin, args);
  const url = server.url;
  const c = await connect(url, { room: 'again', role: 'admin', mode: 'sandbox', boids: 80 });
  const rts = await connect(url, { room: 'war', role: 'player', mode: 'rts', name: 'bo' });
  const events = [];
  c.on('disconnect', () => events.push('disconnect'));
  c.on('reconnect', () => events.push('reconnect'));
  await c.nextSnapshot();
  const restarted = restart(server, args);
  await c.once('disconnect');
  const meanwhile = c.ping({}, { timeoutMs: 15000 }); // waits for the connection
  meanwhile.catch(() => {}); // judged below, in the functional part
  const { server: again, answeredAt } = await restarted;
  server = again;
  const s = await c.nextSnapshot({ timeoutMs: 15000 });
  const resumedMs = Date.now() - answeredAt;
  const room = c.room;
  console.log(`     resumed ${resumedMs} ms after flockd answered again (a snapshot of tick ${s.tick})`);
  if (TIMING && UNTIMED) {
    await check('the client resumes after flockd answers again (the time not judged)', () => {
      assert(c.state === 'open' && Number.isInteger(s.tick), `${c.state} ${s.tick}`);
    });
  } else if (TIMING) {
    await check('the client resumes within 2 s of flockd answering again', () => {
      assert(resumedMs <= 2000, `${resumedMs} ms`);
    });
  } else {
    await check('after flockd is killed and restarted the client is back in its room and role, unasked', async () => {
      assert(c.room === 'again' && c.role === 'admin' && c.state === 'open', `${c.room} ${c.role} ${c.state}`);
      assert(room === 'again' && s.count === 80, `the first snapshot back is of ${room}, ${s.count} boids: the room `
        + 'created again as asked, not `default` where a new connection starts');
      assert(events.join() === 'disconnect,reconnect' && c.counters.reconnects === 1, events.join());
      assert(Number.isInteger((await meanwhile).tick), 'the ping sent while it was down is answered');
      await waitFor('the RTS player back', () => rts.state === 'open' && rts.room === 'war', 5000);
      assert(rts.role === 'player' && rts.team >= 1, `RTS ${rts.role} team ${rts.team}`);
      await rts.seek({ group: rts.team, x: 5, y: 5 });
    });
  }
  await Promise.all([c.close(), rts.close()]);
  await server.stop();
}

async function overTls() {
  const dir = mkdtempSync(join(tmpdir(), 'flockd-client-tls-'));
  try {
    const crt = join(dir, 'tls.crt');
    const key = join(dir, 'tls.key');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', crt,
      '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
    const server = await startFlockd(flockdBin, ['--tls-cert', crt, '--tls-key', key, '--boids', '100']);
    await check('over wss with the certificate as the CA: commands and snapshots; an unknown certificate is refused', async () => {
      assert(server.url.startsWith('https://'), server.url);
      const c = await connect(server.url, { tls: { ca: readFileSync(crt) } });
      assert(c.url.startsWith('wss://'), c.url);
      assert(Number.isInteger((await c.ping()).tick), 'ping');
      assert((await c.nextSnapshot()).count === 100, 'a snapshot');
      await c.close();
      const e = await rejection(connect(server.url, { timeoutMs: 3000 }));
      assert(e instanceof ConnectionError && e.code === 'connect_failed', String(e));
    });
    await server.stop();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function gotoOnARecording() {
  const dir = mkdtempSync(join(tmpdir(), 'flockd-client-replay-'));
  try {
    const recording = await startFlockd(flockdBin, ['--boids', '50', '--record', dir]);
    const c = await connect(recording.url);
    await c.seek({ group: 0, x: 100, y: 100 });
    const live = await rejection(c.goto({ tick: 1 }));
    await sleep(1000);
    await c.close();
    await recording.stop();
    const replay = await startFlockd(flockdBin, ['--replay', join(dir, 'default.flog'), '--serve']);
    await check('goto is acked on a recording and refused forbidden on a live room', async () => {
      assert(live.code === 'forbidden' && !live.local, `goto on a live room: ${live.code}`);
      const r = await connect(replay.url);
      const { first_tick: first, last_tick: last } = r.welcome.replay;
      assert(last > first, `ticks ${first}..${last}`);
      assert(Number.isInteger((await r.goto({ tick: last })).tick), 'goto');
      const far = await rejection(r.goto({ tick: last + 1000 }));
      assert(far.code === 'out_of_range' && !far.local, `past the end: ${far.code}`);
      await r.close();
    });
    await replay.stop();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function urlViews(url) {
  await check('options.view puts the first view in the URL: acked at connect, the first frame already of it; a refused one rejects', async () => {
    const u = await connect(url, { protocol: 3, view: { x: 10, y: 10, w: 400, h: 300, px: 400 } });
    try {
      const ack = u.viewAck;
      assert(ack && ack.rect.length === 4, JSON.stringify(ack));
      const s = await u.nextSnapshot();
      assert(JSON.stringify([s.rect.x, s.rect.y, s.rect.cols, s.rect.rows]) === JSON.stringify(ack.rect), `rect ${JSON.stringify(s.rect)}`);
      const { cols, rows } = u.welcome.stream.tiles;
      assert(ack.rect[2] * ack.rect[3] < cols * rows, `the whole grid: ${ack.rect}`);
    } finally {
      await u.close();
    }
    const e = await rejection(connect(url, { protocol: 3, view: { x: 0, y: 0, w: 0, h: 10 } }));
    assert(e instanceof CommandError && e.code === 'out_of_range' && e.message.includes('the URL\'s view'), String(e));
    let thrown = null;
    try {
      await connect(url, { protocol: 2, view: { x: 0, y: 0, w: 10, h: 10 } });
    } catch (err) {
      thrown = err;
    }
    assert(thrown instanceof TypeError, String(thrown));
  });
}

async function main() {
  if (!flockdBin) {
    console.log('usage: node client.e2e.mjs FLOCKD [--functional | --timing [--untimed]]');
    process.exit(2);
  }
  if (TIMING) {
    await reconnects();
    finish(anyFailed() ? 1 : 0);
  }
  // A spectator's frames lag the room by --spectator-delay: 1 s, not 5.
  const server = await startFlockd(flockdBin, ['--boids', '100', '--spectator-delay', '1', ...FAST]);
  await everyCommandIsAcked(server.url);
  await refusalsMatchTheServer(server.url);
  await snapshotsOfBothVersions(server.url);
  await viewsOfVersion3(server.url);
  await urlViews(server.url);
  await check('connect refuses a join the server refuses, and a server that is not there', async () => {
    const e = await rejection(connect(server.url, { room: 'no spaces' }));
    assert(e instanceof CommandError && e.code === 'bad_arg' && e.local, String(e));
    const f = await rejection(connect('ws://127.0.0.1:1/ws'));
    assert(f instanceof ConnectionError && f.code === 'connect_failed', String(f));
  });
  await server.stop();
  await Promise.all([reconnects(), overTls(), gotoOnARecording()]);
  killServers();
  finish(anyFailed() ? 1 : 0);
}

main().catch(crashed);
