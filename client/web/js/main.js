// The flockd viewer: wires the connection, decoder, playout buffer,
// renderer, controls, stats panel, rooms panel and player list together,
// enables the controls the page's role may use, and exposes a read-only
// summary of its state as window.flockView for tests and the console.
//
// It speaks version 3 (PROTOCOL.md §12) when the server does: it sends
// the view its camera shows (viewreq.js) as the camera moves, with the
// budget it measures it can take, draws the level of detail the frames
// come at (lod.js), a minimap of the whole room (minimap.js), the fog of
// an rts team, and follows a boid by id. ?protocol=2 or ?protocol=1 asks
// for an older version only; ?budget=N starts the budget at N bytes/s.
//
// An rts player commands its team's squads (§13, squadui.js): a dragged
// box selects, a right-click moves, keys set formations and orders; the
// squads panel lists them and their waypoints and slots are drawn.
//
// A room that runs a script (§14) has a game panel (gameui.js): the
// script's latest state, room-wide and the team's, its action buttons and,
// for an admin, the script's status.

import { decodeAnySnapshot } from '../lib/decoder.js';
import { FrameDecoderV2 } from '../lib/decoder_v2.js';
import { FrameDecoderV3, SUBPROTOCOL_V3 } from '../lib/decode_v3.js';
import { Connection, offerFor, viewQuery } from '../lib/connection.js';
import { Playout } from './playout.js';
import { Camera } from './camera.js';
import { Renderer2D, groupColor } from './render2d.js';
import { ParamPanel } from './params.js';
import { bindPointer } from './pointer.js';
import { makeFlockView } from './flockview.js';
import { RoomSession, parseChoice, choiceSearch } from './session.js';
import { controlStates, clickCommand, hintFor, steeredGroup, replayPermissions } from './roles.js';
import { ReplayBar } from './replaybar.js';
import { Lobby } from './lobby.js';
import { RosterList } from './roster.js';
import { availabilityOf, bannerText } from './banner.js';
import {
  RateMeter, SkipCounter, Series, drawSparkline,
} from './stats.js';
import {
  viewOfCamera, ViewSender, BudgetMeter, START_BUDGET,
} from './viewreq.js';
import { LodBlend } from './lod.js';
import { Minimap, MinimapFeed } from './minimap.js';
import { Intro } from './intro.js';
import { SquadControl } from './squadui.js';
import { GamePanel } from './gameui.js';

// Render this far behind the newest snapshot, or 1.5 snapshot periods when
// snapshots come slower than 15 Hz, so there is a later one to move toward.
const PLAYOUT_DELAY_MS = 100;
const PING_EVERY_MS = 1000;
const STATS_EVERY_MS = 1000;
const PANEL_EVERY_MS = 250;
const TOAST_MS = 4000;
// After a version 2 frame is refused, ask for a key frame at most this often
// (the server rate limits commands too; PROTOCOL.md §11).
const KEYFRAME_EVERY_MS = 500;
const MINIMAP_EVERY_MS = 100;
const FOLLOW_LOST_MS = 3000; // a followed boid not seen this long is let go
// A version 3 stream that brings no frame this long after its welcome
// (a room a cluster's node relays has none today) is given up for version 2.
const V3_SILENCE_MS = 2500;
// A new version 3 stream's big frames (the whole room's: a big room's
// take long to decode) are dropped undecoded until its first view is
// acked, at most this long. The deltas that name them are refused
// (no_base) and a key frame asked for, without a word on screen.
const FIRST_VIEW_MS = 2000;
const FIRST_VIEW_DROP_BYTES = 32768;

const $ = (id) => document.getElementById(id);

const canvas = $('view');
const camera = new Camera();
const renderer = new Renderer2D(canvas);
const playout = new Playout({ delayMs: PLAYOUT_DELAY_MS });
const rates = new RateMeter(2000);
const skips = new SkipCounter();
const tickSeries = new Series(60);
const polSeries = new Series(60);
const globalSeries = new Series(60);
const nnSeries = new Series(60);
const speedSeries = new Series(60);
const millSeries = new Series(60);
const flockSeries = [tickSeries, polSeries, globalSeries, nnSeries, speedSeries, millSeries];

const app = {
  welcome: null,
  latest: null, // newest decoded snapshot
  frame: null, // what the last frame drew
  group: 0,
  highlight: -1,
  follow: false,
  radius: 40,
  values: new Map(), // group -> {param: value} as far as this client knows
  rttMs: null,
  tickMs: null, // the room's mean tick time, ms (stats)
  flock: null, // the flock's last measures (§6.5)
  acks: 0,
  errors: 0,
  lastError: null,
  badSnapshots: 0,
  decode: { count: 0, totalMs: 0, lastMs: 0 },
  wire: { bytes: 0, boids: 0 }, // snapshot payload bytes and boids, for bytes per boid
  keyframes: { asked: 0, lastAt: -Infinity, hashMismatches: 0 },
  frames: { count: 0, workMs: 0, lastWorkMs: 0, intervals: 0, intervalMs: 0, lastAt: null },
  preview: null, // obstacle outline under the pointer while shift is held
  lostOnce: false,
  unavailable: null, // the reason the room's node cannot be reached now (§6.6), or null
  perm: null, // what the page's role may do here (roles.js permissions)
  followId: null, // version 3: the id of the boid followed, or null
  followSeenAt: 0,
  viewAck: null, // version 3: the latest view's ack (§12.4)
  lod: null, // what the last frame drew of the level of detail (lod.js)
  fogUnits: 0, // the team's units the last frame cleared the fog around
  minimapOwn: false, // the minimap shows its own connection's frames
  v3Frames: 0, // version 3 frames since the latest welcome
  viewPendingSince: null, // when a new stream's first view went, until its ack: its frames are the whole room's
  framesDropped: 0, // frames dropped undecoded while the first view was pending
  squadBox: null, // the selection box being dragged, [sx0, sy0, sx1, sy1] in CSS px, or null
  squadsOf: null, // 'room:team' of the squads kept, so a reconnection keeps them
  gameOf: null, // 'room:script:hash' of the game panel kept, so a reconnection keeps it
};
const squadUi = new SquadControl();
const gamePanel = new GamePanel();
const SQUAD_COMMANDS = new Set(['select', 'move', 'patrol', 'follow', 'hold', 'stop', 'formation']);

// Version 3 frames by default; ?protocol=2 or ?protocol=1 asks for that version.
const query = new URLSearchParams(location.search);
const offer = offerFor(Number(query.get('protocol')) || 3);
const v2 = new FrameDecoderV2();
let v3 = null; // the version 3 stream's decoder, made at its welcome
const startBudget = Number(query.get('budget')) || START_BUDGET;
const budget = new BudgetMeter({ start: startBudget, max: startBudget });
const viewSender = new ViewSender();
const lodBlend = new LodBlend();
const socketUrl = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/ws`;
const conn = new Connection(socketUrl, {
  onWelcome,
  onSnapshot,
  onReply,
  onMessage,
  onState,
}, offer);

// The room and role in the address (?room=&role=) are joined again after
// every fresh connection; without them the page stays in `default`.
const session = new RoomSession({
  storage: window.sessionStorage,
  send: (cmd, args) => conn.send(cmd, args),
  onChoice: (choice) => {
    history.replaceState(history.state, '', `${location.pathname}${choiceSearch(location.search, choice)}${location.hash}`);
  },
  choice: parseChoice(location.search),
});
app.perm = session.permissions;

const roster = new RosterList($('roster-list'), $('roster-viewers'));
const lobby = new Lobby($('lobby'), {
  onJoin: (req) => {
    if (session.join(req) === null) toast('not connected to flockd');
  },
});

const replayBar = new ReplayBar({
  section: $('replay'), slider: $('replay-slider'), tick: $('replay-tick'), go: $('replay-goto'), range: $('replay-range'),
}, (cmd, args) => conn.send(cmd, args));

const minimap = new Minimap($('minimap'), { onJump: (x, y) => jumpTo(x, y) });
const minimapFeed = new MinimapFeed(socketUrl, {
  px: minimap.px,
  onFrame: (f, w) => {
    if (app.minimapOwn && w.room === (session.here && session.here.room)) minimap.show(f, 'own');
  },
});
const intro = new Intro($('intro'), window.localStorage);
// While the rooms panel is open the view's own controls under it step aside (viewer.css).
new MutationObserver(() => $('stage').classList.toggle('lobby-open', !$('lobby').hidden))
  .observe($('lobby'), { attributes: true, attributeFilter: ['hidden'] });

const params = new ParamPanel($('param-list'), (name, value) => {
  const args = { [name]: value };
  if (!$('params-all').checked) args.group = app.group;
  if (conn.send('params', args) === null) return;
  for (const g of $('params-all').checked ? [...app.values.keys()] : [app.group]) {
    groupValues(g)[name] = value;
  }
});

// ---- connection ---------------------------------------------------------

function onWelcome(w, fresh) {
  app.welcome = w;
  v2.forget(); // a new stream: the server starts it with a key frame
  v3 = w.protocol === 3 ? new FrameDecoderV3({ cells: w.stream.field.cells }) : null;
  if (v3) expectV3Frames();
  viewSender.reset(); // a new stream shows the whole room until its view
  lodBlend.reset();
  app.viewAck = null;
  app.viewPendingSince = null;
  minimap.setWorld(w.world.width, w.world.height);
  playout.clear();
  playout.delayMs = Math.max(PLAYOUT_DELAY_MS, 1500 / w.snapshot_hz);
  skips.setRates(w.tick_hz, w.snapshot_hz);
  rates.reset();
  app.latest = null;
  app.values.clear();
  app.values.set(0, { ...w.values });
  // Groups whose parameters differ from group 0's list what differs (§6.1).
  for (const [g, own] of Object.entries(w.groups || {})) app.values.set(Number(g), { ...w.values, ...own });
  flockSeries.forEach((series) => series.clear());
  showFlock(w.flock || null, null);
  camera.setWorld(w.world.width, w.world.height);
  params.build(w.params || [], groupValues(app.group));
  const radius = $('radius');
  radius.max = Math.floor(Math.min(w.world.width, w.world.height) / 4);
  if (app.radius > Number(radius.max)) setRadius(Number(radius.max));
  $('spawn-n').max = w.world.capacity;
  if (w.protocol === 3) $('follow-index').removeAttribute('max'); // ids: never used again, not below capacity
  else $('follow-index').max = w.world.capacity - 1;
  session.welcome(w, fresh); // may send the join the address asks for
  gameFor(w);
  if (minimapFeed.open) minimapFeed.follow(session.here.room);
  replayBar.show(w.replay || null);
  roster.clear();
  lobby.setCurrent(session.here.room);
  applyRole();
  if (fresh && app.lostOnce) toast('Reconnected to flockd', 'info');
  setAvailable(availabilityOf(w));
  sendView(performance.now()); // at once: until it is acked the whole room comes
}

function onMessage(msg) {
  if (msg.type === 'roster' && session.here && msg.room === session.here.room) {
    roster.show(msg, session.here.client);
  }
  if (msg.type === 'squads' && squadUi.take(msg)) showSquads();
  if ((msg.type === 'game' && gamePanel.take(msg)) || (msg.type === 'script' && gamePanel.takeScript(msg))) showGame();
  const state = session.here ? availabilityOf(msg, session.here.room) : undefined;
  if (state) setAvailable(state);
}

/** A room of a cluster whose node cannot be reached (§6.6): a banner until it is back. */
function setAvailable({ available, reason }) {
  app.unavailable = available ? null : (reason || 'its node cannot be reached');
  updateBanner();
}

// A version 3 stream without frames (the server took flock.v3 but sends
// none for this room: one a cluster's node relays, today) is given up for
// version 2: the connection is closed and made again offering version 2.
let silenceTimer = null;
function expectV3Frames() {
  app.v3Frames = 0;
  clearTimeout(silenceTimer);
  silenceTimer = setTimeout(() => {
    if (conn.version !== 3 || app.v3Frames > 0 || !conn.open || app.unavailable) return;
    conn.protocols = offerFor(2);
    conn.url = socketUrl; // a view in it is version 3's
    toast('no version 3 frames from this room: using version 2', 'info');
    conn.ws.close(1000);
  }, V3_SILENCE_MS);
}

// A refused version 2 or 3 frame is not drawn: the bases it needed are
// gone or wrong, so ask for a key frame (rate limited) and draw again from
// there.
function refused(e) {
  app.badSnapshots++;
  if (e.code === 'hash_mismatch') app.keyframes.hashMismatches++;
  const now = performance.now();
  const deltas = conn.version === 2 || conn.version === 3;
  if (deltas && now - app.keyframes.lastAt >= KEYFRAME_EVERY_MS) {
    app.keyframes.lastAt = now;
    if (conn.send('keyframe') !== null) app.keyframes.asked++;
  }
  const expected = e.code === 'no_base' && app.framesDropped > 0; // a delta on a frame dropped before the view
  if ((app.badSnapshots === 1 || !deltas) && !expected) toast(`snapshot refused: ${e.message}`);
}

async function onSnapshot(buf, arrival) {
  const t0 = performance.now();
  if (conn.version === 3) app.v3Frames++;
  if (conn.version === 3 && app.viewPendingSince !== null && t0 - app.viewPendingSince < FIRST_VIEW_MS
    && buf.byteLength > FIRST_VIEW_DROP_BYTES) {
    app.framesDropped++;
    return;
  }
  let s;
  try {
    s = v3 && conn.version === 3 ? await v3.decode(buf) : await decodeAnySnapshot(buf, v2);
  } catch (e) {
    refused(e);
    return;
  }
  const ms = performance.now() - t0;
  app.wire.bytes += buf.byteLength;
  app.wire.boids += s.boidCount;
  app.decode.count++;
  app.decode.totalMs += ms;
  app.decode.lastMs = ms;
  rates.add(arrival, buf.byteLength);
  skips.add(s.tick, s.seq); // versions 2 and 3 number their snapshots
  replayBar.update(s.tick);
  playout.push(s, arrival);
  if (!app.latest || s.width !== app.latest.width || s.height !== app.latest.height) {
    camera.setWorld(s.width, s.height);
  }
  app.latest = s;
}

function onReply(msg, req) {
  if (!req && msg.id == null && isUrlViewReply(msg)) {
    if (msg.type === 'ack') viewAcked(msg);
    else console.warn(`the URL's view refused: ${msg.message}`); // the whole room comes
    return;
  }
  const cmd = req ? req.cmd : null;
  const join = session.reply(msg);
  if (join && join.joined) lobby.close(); // the new room's welcome follows
  if (join && !join.joined) {
    applyRole(); // a refused re-join leaves the page where it is
    if (msg.code === 'forbidden' && join.args.role === 'admin' && !join.auto) lobby.askToken();
  }
  if (msg.type === 'error') {
    if (cmd === 'view') app.viewPendingSince = null;
    app.errors++;
    app.lastError = { cmd, code: msg.code, message: msg.message };
    toast(`${cmd || 'command'} refused: ${msg.message || msg.code} (${msg.code})`);
    return;
  }
  if (cmd === 'view') {
    viewAcked(msg);
    return;
  }
  if (SQUAD_COMMANDS.has(cmd)) {
    squadUi.acked(cmd, msg);
    showSquads();
  }
  if (cmd !== 'ping' && cmd !== 'stats') app.acks++; // acks of what the user did
  if (cmd === 'ping') app.rttMs = performance.now() - req.sentAt;
  if (cmd === 'stats' && msg.stats) plotStats(msg.stats);
  if (cmd === 'reset' && app.welcome) {
    // reset restores every parameter to its default (§5.4).
    const defaults = Object.fromEntries(app.welcome.params.map((p) => [p.name, p.default]));
    app.values.clear();
    app.values.set(0, defaults);
    params.show(groupValues(app.group));
  }
}

// The reply to the view of the socket's URL (PROTOCOL.md §12.4): it has no id.
function isUrlViewReply(msg) {
  return msg.type === 'ack' ? Array.isArray(msg.rect) : /^the URL's view/.test(msg.message || '');
}

// What the frames hold from now on: their rate sets what counts as a
// skipped frame and how far behind the playout runs.
function viewAcked(msg) {
  const { type, id, ...ack } = msg;
  app.viewAck = ack;
  app.viewPendingSince = null;
  const rate = Math.min(ack.rate, app.welcome.snapshot_hz);
  if (rate > 0) {
    skips.setRates(app.welcome.tick_hz, app.welcome.snapshot_hz, rate);
    playout.delayMs = Math.max(PLAYOUT_DELAY_MS, 1500 / rate);
  }
}

function onState(st) {
  const badge = $('conn');
  badge.className = `conn ${st.status}`;
  badge.textContent = { open: 'connected', connecting: 'connecting', waiting: 'reconnecting' }[st.status];
  if (st.status !== 'open' && st.everConnected) app.lostOnce = true;
  updateBanner();
}

function updateBanner() {
  const st = conn.state;
  const banner = $('banner');
  const text = bannerText(st, app.unavailable, performance.now());
  banner.hidden = text === null;
  if (text !== null) banner.textContent = text;
}

/** Enables what the page's role may use here and says where it is. */
function applyRole() {
  const perm = app.welcome && app.welcome.replay ? replayPermissions(session.permissions) : session.permissions;
  app.perm = perm;
  for (const [id, on] of Object.entries(controlStates(perm))) $(id).disabled = !on;
  params.setDisabled(!perm.admin);
  if (perm.seek === 'team') setGroup(perm.team);
  if (!perm.obstacles) app.preview = null;
  $('hint').textContent = hintFor(perm);
  squadsFor(perm);
  const h = session.here;
  const where = $('where');
  if (!h) return;
  const room = document.createElement('b');
  room.textContent = h.room;
  const team = h.role === 'player' && h.team !== null ? ` · team ${h.team}` : '';
  const joining = session.rejoining ? ` · joining ${session.pending.args.room}…` : '';
  where.replaceChildren(room, ` · ${h.mode} · ${h.role}${team}${joining}`);
}

// ---- squads (§13) --------------------------------------------------------

// Squads are an rts player's (its own team's); another room or team
// starts afresh, a reconnection to the same keeps what it knew.
function squadsFor(perm) {
  const team = perm.role === 'player' && perm.mode === 'rts' && !perm.replay && Number.isInteger(perm.team) ? perm.team : null;
  const key = team === null || !session.here ? null : `${session.here.room}:${team}`;
  if (key !== app.squadsOf) {
    app.squadsOf = key;
    squadUi.reset(key === null ? null : team);
    app.squadBox = null;
  }
  $('squads').hidden = !squadUi.active;
  showSquads();
}

/** Fills the squads panel from the team's latest squads message. */
function showSquads() {
  if (!squadUi.active) return;
  const items = squadUi.rows().map((r) => {
    const li = document.createElement('li');
    li.dataset.squad = String(r.squad);
    li.className = r.selected ? 'selected' : '';
    const cell = (cls, text) => {
      const span = document.createElement('span');
      span.className = cls;
      span.textContent = text;
      return span;
    };
    li.append(cell('name', `#${r.squad}`), cell('order', r.order), cell('units', `${r.units} units`), cell('formation', r.formation));
    li.addEventListener('click', () => {
      squadUi.select(r.squad);
      showSquads();
    });
    return li;
  });
  $('squads-list').replaceChildren(...items);
  $('squads-selected').textContent = squadUi.selected === null ? '' : `squad ${squadUi.selected} selected`;
}

// ---- the room's script (§14) ---------------------------------------------

// The game panel is a scripted room's: another room (or script) starts it
// afresh, a reconnection to the same keeps what it showed until the
// server sends the latest again.
function gameFor(w) {
  const key = w.script ? `${w.room}:${w.script.name}:${w.script.hash}` : null;
  if (key !== app.gameOf) {
    app.gameOf = key;
    gamePanel.reset(w.script || null);
  }
  $('game').hidden = !gamePanel.active;
  showGame();
}

/** One state's part of the game panel (gameui.js stateModel), as elements. */
function stateElements(m, heading) {
  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const out = [el('h3', 'phase', [heading, m.title].filter(Boolean).join(' · '))];
  if (m.banner) out.push(el('div', 'winner', m.banner));
  if (m.message) out.push(el('p', 'message', m.message));
  // A viewer watches: its page offers no actions (a script takes them from players and admins).
  if (m.actions.length && !(app.perm && app.perm.role === 'viewer')) {
    const bar = el('div', 'actions');
    for (const name of m.actions) {
      const b = el('button', '', name);
      b.type = 'button';
      b.addEventListener('click', () => sendMade(GamePanel.action(name)));
      bar.append(b);
    }
    out.push(bar);
  }
  if (m.rows.length) {
    const dl = el('dl');
    for (const r of m.rows) dl.append(el('dt', '', r.key), el('dd', '', r.text));
    out.push(dl);
  }
  for (const t of m.tables) {
    const table = el('table');
    const head = el('tr');
    const values = el('tr');
    head.append(el('th', '', t.key), ...t.columns.map((c) => el('th', '', c.head)));
    values.append(el('td'), ...t.columns.map((c) => el('td', '', c.value)));
    table.append(head, values);
    out.push(table);
  }
  return out;
}

/** Fills the game panel from the latest states. */
function showGame() {
  if (!gamePanel.active) return;
  const m = gamePanel.model();
  $('game-name').textContent = m.name;
  const parts = m.room ? stateElements(m.room, '') : [];
  for (const t of m.teams) parts.push(...stateElements(t, `team ${t.team}`));
  const line = $('game-script');
  line.hidden = !m.script;
  line.textContent = m.script ? m.script.text : '';
  line.classList.toggle('disabled', Boolean(m.script && m.script.disabled));
  $('game-state').replaceChildren(...parts);
}

/** Sends a command squadUi or gamePanel made (or nothing for null). */
function sendMade(c) {
  if (!c) return;
  if (conn.send(c.cmd, c.args) === null) toast('not connected to flockd');
}

// A box dragged on the canvas (CSS px): its units into a new squad.
function boxSelected(sx0, sy0, sx1, sy1) {
  const [x0, y0] = camera.screenToWorld(sx0, sy0);
  const [x1, y1] = camera.screenToWorld(sx1, sy1);
  sendMade(squadUi.boxSelect(x0, y0, x1, y1, camera.worldW, camera.worldH));
}

// A click of an rts player with a squad selected (or P pressed): true if
// it was the squad's. A right-click moves the squad (shift: queued), a
// left click patrols after P, else clears the selection.
function squadClick(x, y, { shift, secondary }) {
  if (!squadUi.active || (squadUi.selected === null && !squadUi.patrolArmed)) return false;
  if (secondary) sendMade(squadUi.pointOrder(x, y, shift));
  else if (shift) return false; // an obstacle, as before
  else sendMade(squadUi.groundClick(x, y));
  showSquads();
  return true;
}

function squadKey(k) {
  const r = squadUi.key(k);
  if (!r) return false;
  if (r.cmd) sendMade(r);
  else toast(r.arm ? `patrol: click where squad ${squadUi.selected} patrols to` : 'patrol cancelled', 'info');
  return true;
}

function groupValues(g) {
  if (!app.values.has(g)) app.values.set(g, { ...(app.values.get(0) || {}) });
  return app.values.get(g);
}

// ---- messages on screen -------------------------------------------------

let toastTimer = null;

/** Shows `text` over the canvas for a few seconds; kind 'error' or 'info'. */
function toast(text, kind = 'error') {
  const el = $('toast');
  el.textContent = text;
  el.className = kind === 'info' ? 'info' : '';
  el.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { el.hidden = true; }, TOAST_MS);
}

// ---- render loop --------------------------------------------------------

function frame() {
  requestAnimationFrame(frame);
  const t0 = performance.now();
  const [w, h] = renderer.resize();
  camera.resize(w, h);
  const f = playout.sample(t0);
  if (f && f.id) followById(f, t0);
  if (f && app.follow && app.highlight >= 0 && app.highlight < f.count) {
    camera.centerOn(f.x[app.highlight], f.y[app.highlight]);
  }
  const lod = lodBlend.update(f && f.id ? f.shown : null, t0);
  app.lod = { sample: lod.field ? lod.field.sample : 0, fieldAlpha: lod.fieldAlpha, boidAlpha: lod.boidAlpha };
  renderer.draw(f, camera, {
    highlight: app.highlight, label: app.followId ?? app.highlight, selectedGroup: app.group, preview: app.preview,
    ...lod, fog: fogOf(f),
    squads: squadUi.active ? squadUi.overlay() : null, squadColor: groupColor(app.perm.team ?? 0), box: app.squadBox,
  });
  app.frame = f;
  sendView(t0);
  drawMinimap(t0);
  const fr = app.frames;
  const t1 = performance.now();
  fr.count++;
  fr.lastWorkMs = t1 - t0;
  fr.workMs += fr.lastWorkMs;
  if (fr.lastAt !== null) {
    fr.intervals++;
    fr.intervalMs += t0 - fr.lastAt;
  }
  fr.lastAt = t0;
}

// ---- version 3: the view, the fog, following by id, the minimap -----------

/** The part of the world the main view shows: {x, y, w, h, px}. */
function currentView() {
  return viewOfCamera(camera, camera.worldW, camera.worldH);
}

// The view goes out as the camera moves, throttled, with the budget.
function sendView(now) {
  if (conn.version !== 3 || !conn.open || !app.welcome || session.rejoining) return;
  const v = viewSender.offer(currentView(), budget.budget, now);
  if (v && conn.send('view', v) !== null && !app.viewAck && app.viewPendingSince === null) app.viewPendingSince = now;
}

// An rts player's frames are its team's (fogged): grey out all but the
// circles its units see (sight_radius, §6.1's registry, per group).
function fogOf(f) {
  app.fogUnits = 0;
  const team = app.perm.team;
  if (!f || !f.snap.fogged || app.perm.role !== 'player' || !Number.isInteger(team)) return null;
  const r = groupValues(team).sight_radius ?? app.welcome.values.sight_radius ?? 0;
  const units = [];
  let i = 0;
  for (const run of f.runs) {
    if (run.group === team) {
      for (let k = i; k < i + run.count; k++) units.push([f.x[k], f.y[k], r]);
    }
    i += run.count;
  }
  app.fogUnits = units.length;
  return { units };
}

// Keeps the followed boid (by id) at the centre; lets it go after
// FOLLOW_LOST_MS out of the frames (it left the view's sample, or died).
function followById(f, now) {
  if (app.followId === null) return;
  let at = -1;
  for (let i = 0; i < f.count; i++) {
    if (f.id[i] === app.followId) {
      at = i;
      break;
    }
  }
  app.highlight = at;
  if (at >= 0) {
    app.followSeenAt = now;
    if (app.follow) camera.centerOn(f.x[at], f.y[at]);
  } else if (now - app.followSeenAt > FOLLOW_LOST_MS) {
    toast(`boid ${app.followId} is out of sight`, 'info');
    setHighlight(-1);
  }
}

/** Whether the main view shows all of the world. */
function wholeWorldShown() {
  const [x0, y0, x1, y1] = camera.visibleWorld();
  return x0 <= 0 && y0 <= 0 && x1 >= camera.worldW && y1 >= camera.worldH;
}

// The minimap shows the page's own frames while they hold the whole room
// (or for an rts player, whom a spectator's connection would show what
// the fog hides), else those of its own connection, opened the first time.
let minimapAt = -Infinity;
function drawMinimap(now) {
  if (now - minimapAt < MINIMAP_EVERY_MS || !app.welcome) return;
  minimapAt = now;
  const rtsPlayer = app.perm.role === 'player' && app.perm.mode === 'rts';
  const own = conn.version === 3 && !rtsPlayer && !wholeWorldShown() && !app.welcome.replay;
  app.minimapOwn = own;
  if (own && !minimapFeed.open && session.here) minimapFeed.follow(session.here.room);
  if (!own || minimap.source !== 'own') minimap.show(app.latest, 'page');
  const v = currentView();
  minimap.draw(v);
}

/** Centres the main view on world point (x, y) (a click on the minimap). */
function jumpTo(x, y) {
  if (camera.fitted) camera.zoomAt(camera.viewW / 2, camera.viewH / 2, 3);
  camera.centerOn(x, y);
  camera.fitted = false;
  if (app.follow) setFollow(false);
}

// ---- what clicks and keys do --------------------------------------------

/** The world point under canvas point (sx, sy), kept inside the world. */
function worldAt(sx, sy) {
  const [x, y] = camera.screenToWorld(sx, sy);
  return [Math.min(camera.worldW, Math.max(0, x)), Math.min(camera.worldH, Math.max(0, y))];
}

function obstacleAt(x, y) {
  if (!app.latest) return null;
  const slop = 4 / camera.scale;
  return app.latest.obstacles.find((o) => Math.hypot(o.x - x, o.y - y) <= o.r + slop) || null;
}

function nearestBoid(sx, sy, maxPx = 25) {
  const f = app.frame;
  if (!f) return -1;
  let best = -1;
  let bestD = maxPx * maxPx;
  for (let i = 0; i < f.count; i++) {
    const [bx, by] = camera.worldToScreen(f.x[i], f.y[i]);
    const d = (bx - sx) ** 2 + (by - sy) ** 2;
    if (d < bestD) {
      bestD = d;
      best = i;
    }
  }
  return best;
}

// Alt-click or a long press: a boid to highlight; on version 3 it is
// followed by its id.
function pick(sx, sy) {
  const i = nearestBoid(sx, sy);
  if (i >= 0 && app.frame.id) {
    followBoid(app.frame.id[i]);
    return;
  }
  setHighlight(i);
  if (i < 0) toast('no boid there', 'info');
}

function click(sx, sy, { shift, alt, secondary }) {
  const [x, y] = worldAt(sx, sy);
  if (alt) {
    pick(sx, sy);
    return;
  }
  const hit = obstacleAt(x, y);
  if (!hit && squadClick(x, y, { shift, secondary })) return;
  const c = clickCommand(app.perm, { hit, place: shift || secondary, x, y, group: app.group, radius: app.radius });
  if (c) conn.send(c.cmd, c.args);
}

function updatePreview(sx, sy, shift) {
  if (!shift || !app.perm.obstacles) {
    app.preview = null;
    return;
  }
  const [x, y] = worldAt(sx, sy);
  app.preview = obstacleAt(x, y) ? null : { x, y, r: app.radius };
}

const KEYS = {
  ' ': () => app.perm.playback && conn.send(app.latest && app.latest.paused ? 'resume' : 'pause'),
  s: () => app.perm.playback && conn.send('step', { n: 1 }),
  f: () => camera.fit(),
  '+': () => zoomBy(1.5),
  '-': () => zoomBy(1 / 1.5),
  escape: () => setHighlight(-1),
};

function zoomBy(factor) {
  camera.zoomAt(camera.viewW / 2, camera.viewH / 2, factor);
}

document.addEventListener('keydown', (e) => {
  if (e.target instanceof HTMLInputElement || e.target instanceof HTMLSelectElement || e.ctrlKey || e.metaKey || e.altKey) return;
  const key = e.key.toLowerCase();
  if (squadKey(key)) {
    e.preventDefault();
    return;
  }
  const action = KEYS[key];
  if (!action) return;
  e.preventDefault(); // a focused button would take space as a click too
  action();
});

// ---- controls -----------------------------------------------------------

function setHighlight(i) {
  app.highlight = i;
  if (i < 0) app.followId = null;
  $('follow-index').value = i;
  if (i < 0) setFollow(false);
}

/** Version 3: follows the boid with id `id` across the world. */
function followBoid(id) {
  app.followId = id;
  app.followSeenAt = performance.now();
  $('follow-index').value = id;
  setFollow(true);
}

function setFollow(on) {
  app.follow = on;
  $('follow').checked = on;
  if (on && camera.fitted) camera.zoomAt(camera.viewW / 2, camera.viewH / 2, 3);
}

function setRadius(r) {
  app.radius = r;
  $('radius').value = r;
  $('radius-out').value = r;
}

function setGroup(g) {
  app.group = Math.min(255, Math.max(0, Math.round(g) || 0));
  $('group').value = app.group;
  $('group-swatch').style.background = groupColor(app.group);
  params.show(groupValues($('params-all').checked ? 0 : app.group));
}

function bindControls() {
  $('btn-pause').addEventListener('click', () => conn.send('pause'));
  $('btn-resume').addEventListener('click', () => conn.send('resume'));
  $('btn-step').addEventListener('click', () => conn.send('step', { n: 1 }));
  $('btn-reset').addEventListener('click', () => conn.send('reset'));
  $('btn-clear-target').addEventListener('click', () => conn.send('seek_clear', { group: steeredGroup(app.perm, app.group) }));
  $('btn-clear-obstacles').addEventListener('click', () => conn.send('obstacle_clear'));
  $('btn-fit').addEventListener('click', () => camera.fit());
  $('btn-spawn').addEventListener('click', () => {
    const n = Math.max(1, Math.round(Number($('spawn-n').value)) || 1);
    const [x, y] = worldAt(camera.viewW / 2, camera.viewH / 2);
    conn.send('spawn', { n, group: app.group, x, y });
  });
  $('group').addEventListener('change', (e) => setGroup(Number(e.target.value)));
  $('params-all').addEventListener('change', () => setGroup(app.group));
  $('radius').addEventListener('input', (e) => setRadius(Number(e.target.value)));
  $('follow').addEventListener('change', (e) => {
    if (e.target.checked && app.highlight < 0 && app.followId === null) {
      if (app.frame && app.frame.id && app.frame.count) followBoid(app.frame.id[0]);
      else setHighlight(0);
    }
    setFollow(e.target.checked);
  });
  $('follow-index').addEventListener('change', (e) => {
    const v = Math.max(-1, Math.round(Number(e.target.value)) || 0);
    if (conn.version === 3 && v > 0) followBoid(v);
    else setHighlight(v);
  });
  $('btn-zoom-in').addEventListener('click', () => zoomBy(1.5));
  $('btn-zoom-out').addEventListener('click', () => zoomBy(1 / 1.5));
  $('btn-zoom-fit').addEventListener('click', () => camera.fit());
  $('btn-rooms').addEventListener('click', () => lobby.toggle());
  lobby.setName(session.name);
  setGroup(0);
  setRadius(app.radius);
}

// ---- stats panel --------------------------------------------------------

function fmt(v, digits = 1) {
  return v === null || v === undefined || !Number.isFinite(v) ? '–' : v.toFixed(digits);
}

function bytes(n) {
  if (n >= 1e6) return `${(n / 1e6).toFixed(2)} MB/s`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(1)} kB/s`;
  return `${n.toFixed(0)} B/s`;
}

function snapshotStats() {
  const r = rates.read(performance.now());
  return { rate: r.rate, bytesPerSec: r.bytesPerSec };
}

function frameStats() {
  const fr = app.frames;
  return {
    meanFps: fr.intervals ? 1000 / (fr.intervalMs / fr.intervals) : null,
    meanWorkMs: fr.count ? fr.workMs / fr.count : null,
  };
}

let panelFrames = { count: 0, workMs: 0, intervals: 0, intervalMs: 0 };

function updatePanel() {
  const s = app.latest;
  const r = snapshotStats();
  $('st-tick').textContent = s ? `${s.tick}${s.paused ? ' (paused)' : ''}` : '–';
  $('st-boids').textContent = s ? `${s.boidCount}${s.roomBoids !== undefined ? ` of ${s.roomBoids}` : ''}` : '–';
  $('st-view').textContent = s && s.version === 3 ? `shift ${s.shift}, sample ${s.sample}${s.sample ? ' (field)' : ''}` : 'whole room';
  $('st-budget').textContent = conn.version === 3 ? `${bytes(budget.budget)} (takes ${bytes(budget.limit)})` : '–';
  const badge = $('badge-delayed');
  badge.hidden = !(s && s.delayed);
  if (s && s.delayed) badge.textContent = `delayed ${fmt(app.welcome.stream.delay_s, 0)} s`;
  $('st-rate').textContent = `${fmt(r.rate)} /s`;
  $('st-bytes').textContent = bytes(r.bytesPerSec);
  $('st-ping').textContent = app.rttMs === null ? '–' : `${fmt(app.rttMs)} ms`;
  $('st-skipped').textContent = String(skips.skipped);
  // Frame rate and work per frame since the last panel update.
  const fr = app.frames;
  const di = fr.intervals - panelFrames.intervals;
  const dc = fr.count - panelFrames.count;
  const fps = di ? (1000 * di) / (fr.intervalMs - panelFrames.intervalMs) : null;
  const work = dc ? (fr.workMs - panelFrames.workMs) / dc : null;
  panelFrames = { count: fr.count, workMs: fr.workMs, intervals: fr.intervals, intervalMs: fr.intervalMs };
  $('st-fps').textContent = `${fmt(fps, 0)} fps, ${fmt(work, 2)} ms`;
  $('st-decode').textContent = app.decode.count ? `${fmt(app.decode.totalMs / app.decode.count, 2)} ms` : '–';
  $('st-version').textContent = conn.version ? `v${conn.version}` : '–';
  $('st-bpb').textContent = app.wire.boids ? `${fmt(app.wire.bytes / app.wire.boids, 2)} B` : '–';
  $('st-keyframes').textContent = `${app.keyframes.asked} asked, ${app.keyframes.hashMismatches} mismatches`;
  $('st-groups').textContent = s ? s.runs.map((run) => `${run.group}:${run.count}`).join(' ') || 'none' : '–';
  $('btn-pause').disabled = !app.perm.playback || !conn.open || (s && s.paused);
  $('btn-resume').disabled = !app.perm.playback || !conn.open || !(s && s.paused);
  updateBanner();
}

// Once a second: what the page can take, from how it kept up.
function measureBudget() {
  const now = performance.now();
  const ack = app.viewAck;
  budget.update({
    frames: app.frames.count, skipped: skips.skipped, workMs: app.frames.workMs, decodeMs: app.decode.totalMs,
    bytes: app.wire.bytes, lateMs: playout.lateness(now),
    heldBack: Boolean(ack && (ack.sample > 0 || ack.rate < app.welcome.snapshot_hz)),
  }, now);
}

// The room's own figures, asked for with stats (§6.5) once a second: its
// tick time and the flock's measures, plotted beside each other.
function pollStats() {
  if (conn.open && app.welcome) conn.send('stats');
}

/** Fills the flock rows of the panel from a §6.5 flock object (or null). */
function showFlock(f, tickMs) {
  const v = app.welcome ? app.welcome.values : {};
  $('st-tickms').textContent = tickMs === null ? '–' : `${fmt(tickMs, 3)} ms`;
  $('st-pol').textContent = f ? `${fmt(f.local_polarization, 3)} local, ${fmt(f.global_polarization, 2)} global` : '–';
  $('st-nn').textContent = f ? `${fmt(f.nn_p5, 1)} (${fmt(f.nn_p5 / v.separation_radius, 2)} × separation)` : '–';
  $('st-speed').textContent = f ? `${fmt(f.mean_speed, 1)} (${fmt(f.mean_speed / v.max_speed, 2)} × max)` : '–';
  $('st-clusters').textContent = f ? `${f.clusters}, largest ${f.largest_cluster}, ${f.flocks} flocks` : '–';
  $('st-mills').textContent = f ? `${f.mills} (${fmt(100 * f.mill_fraction, 1)} % of boids)` : '–';
}

function plotStats(st) {
  const f = st.flock;
  const v = app.welcome ? app.welcome.values : {};
  app.flock = f;
  app.tickMs = st.tick_ms_mean;
  tickSeries.push(st.tick_ms_mean);
  polSeries.push(f ? f.local_polarization : null);
  globalSeries.push(f ? f.global_polarization : null);
  nnSeries.push(f ? f.nn_p5 / v.separation_radius : null);
  speedSeries.push(f ? f.mean_speed / v.max_speed : null);
  millSeries.push(f ? f.mill_fraction : null);
  showFlock(f, st.tick_ms_mean);
  drawSparkline($('spark-tick'), tickSeries, { color: '#ffb703', min: 0 });
  drawSparkline($('spark-pol'), polSeries, { color: '#4cc9f0', min: 0, max: 1 });
  drawSparkline($('spark-global'), globalSeries, { color: '#90be6d', min: 0, max: 1 });
  drawSparkline($('spark-nn'), nnSeries, { color: '#f28482', min: 0 });
  drawSparkline($('spark-speed'), speedSeries, { color: '#cdb4db', min: 0, max: 1 });
  drawSparkline($('spark-mills'), millSeries, { color: '#e63946', min: 0, max: 1 });
}

// ---- start --------------------------------------------------------------

// A page that starts in the room a connection starts in (no room in its
// address) asks for its first view, the whole world as the camera first
// shows it, in the socket's URL (PROTOCOL.md §12.4): even the first frame
// is at the level of detail the page takes, not every boid of a big room.
// The world's size comes from /api/rooms (the default room first); without
// it the view follows the welcome, as it always does too.
async function startConnection() {
  if (offer[0] === SUBPROTOCOL_V3 && !parseChoice(location.search)) {
    try {
      const res = await fetch('/api/rooms', { cache: 'no-store' });
      const first = res.ok ? (await res.json()).rooms[0] : null;
      if (first && first.width > 0 && first.height > 0) {
        camera.setWorld(first.width, first.height);
        conn.url = `${socketUrl}?${viewQuery({ ...currentView(), budget: budget.budget })}`;
      }
    } catch (e) {
      console.warn(`no first view in the URL: ${e.message}`);
    }
  }
  conn.start();
}

window.flockView = makeFlockView({
  app, conn, camera, canvas, renderer, playout, skips, session, roster, snapshotStats, frameStats,
  budget, viewSender, minimap, minimapFeed, intro, currentView, squadUi, gamePanel,
});
bindControls();
bindPointer(canvas, camera, {
  onClick: click,
  onHover: updatePreview,
  onLeave: () => { app.preview = null; },
  onLongPress: pick,
  boxSelect: () => squadUi.active,
  onBox: boxSelected,
  onBoxMove: (box) => { app.squadBox = box; },
});
startConnection();
requestAnimationFrame(frame);
setInterval(() => conn.send('ping'), PING_EVERY_MS);
setInterval(pollStats, STATS_EVERY_MS);
setInterval(updatePanel, PANEL_EVERY_MS);
setInterval(measureBudget, 1000);
