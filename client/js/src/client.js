// The flockd client for scripts, in browsers and in node: connect(url,
// options) resolves to a Client that is in the room and role it was asked
// for; one async method per command of the protocol schema (seek,
// obstacleAdd, spawn, params, view, ...), each checked against the schema
// before it is sent (validate.js) and resolving to its ack's fields or
// rejecting with a CommandError; an async iterator of typed snapshots
// (snapshot.js) of any protocol version; events. When the connection drops
// it reconnects with capped, jittered backoff, joins the same room and
// role again (an RTS player with its rejoin token), sends its last view
// again (version 3; in the WebSocket URL for a client that never joined,
// as options.view puts the first one, PROTOCOL.md §12.4) and goes on from
// the key frame a new stream starts with; commands sent meanwhile wait
// for it. Squads (§13): the latest `squads` message of each team
// (`squads`, the 'squads' event, squad(n), waitSquads()). Room scripts
// (§14): game(members) for the script, the welcome's script (roomScript),
// the latest room-wide and per-team `game` messages (roomGame, teamGames,
// gamePhase, the 'game' event, waitGame()) and the admins' `script`
// messages (scriptStatus, the 'script' event).
// Owns its Connection (connection.js); one Client per connection.

import { Connection, offerFor, viewQuery } from './connection.js';
import { decodeSnapshot } from './decoder.js';
import { FrameDecoderV2 } from './decoder_v2.js';
import { FrameDecoderV3, SUBPROTOCOL_V3 } from './decode_v3.js';
import { Snapshot, SnapshotQueue, deferred } from './snapshot.js';
import { COMMANDS, validateCommand } from './validate.js';
import { CommandError, ConnectionError } from './errors.js';

/** A script's pace: 0.1 s doubling to 1 s, ±20%: back within about a second of the server. */
export const CLIENT_BACKOFF = Object.freeze({ firstMs: 100, maxMs: 1000, jitter: 0.2 });
// After a refused frame, ask for a key frame at most this often (the
// server rate limits commands, PROTOCOL.md §5.4 keyframe).
const KEYFRAME_EVERY_MS = 500;
const JOIN_KEYS = ['room', 'role', 'mode', 'name', 'token', 'password', 'rejoin', 'boids',
  'width', 'height', 'edges', 'teams', 'units', 'script'];

/** A command's method name: seek_clear -> seekClear. */
export function methodName(cmd) {
  return cmd.replace(/_([a-z])/g, (_, c) => c.toUpperCase());
}

/** The WebSocket URL for `url`: http(s) becomes ws(s), and a bare host gets the path /ws. */
export function socketUrl(url) {
  const u = new URL(url);
  if (u.protocol === 'http:') u.protocol = 'ws:';
  if (u.protocol === 'https:') u.protocol = 'wss:';
  if (u.protocol !== 'ws:' && u.protocol !== 'wss:') throw new TypeError(`not a WebSocket URL: ${url}`);
  if (u.pathname === '/' || u.pathname === '') u.pathname = '/ws';
  return u.toString();
}

const isNode = () => typeof process === 'object' && process !== null && Boolean(process.versions && process.versions.node);

/**
 * The WebSocket class to use: the `ws` package in node (it takes TLS
 * options; node 20 has no WebSocket of its own), the platform's elsewhere.
 */
export async function webSocketClass() {
  if (isNode()) {
    try {
      const m = await import('ws');
      return m.WebSocket || m.default;
    } catch (e) {
      if (typeof globalThis.WebSocket === 'function') return globalThis.WebSocket;
      throw new ConnectionError('connect_failed', `the ws package cannot be loaded: ${e.message}`);
    }
  }
  if (typeof globalThis.WebSocket !== 'function') throw new ConnectionError('connect_failed', 'no WebSocket here');
  return globalThis.WebSocket;
}

// The ack's own members: everything but type and id.
function ackFields(msg) {
  const { type, id, ...fields } = msg;
  return fields;
}

function defined(obj) {
  return Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== undefined && v !== null));
}

export class Client {
  /** Use connect(); `WebSocket` is the class webSocketClass() found. */
  constructor(url, options, WebSocket) {
    this.url = socketUrl(url);
    this.options = { timeoutMs: 10000, validate: true, snapshotBuffer: 64, ...options };
    this.welcome = null;
    this.roster = null;
    this.available = true;
    this.dilation = 1; // the room's dilation factor (§6.7)
    this.latest = null;
    this.counters = { snapshots: 0, badFrames: 0, keyframesAsked: 0, reconnects: 0, dropped: 0 };
    this.state = 'connecting'; // 'open', 'reconnecting', 'closed'
    this.want = null; // the join this client makes on each connection
    this.pending = new Map(); // command id -> {cmd, resolve, reject, timer, join}
    this.awaitingWelcome = null; // the accepted join whose welcome comes next
    this.listeners = new Map();
    this.queues = new Set();
    this.ready = deferred(); // settles when in the room: at connect, after each reconnect
    this.inRoom = false; // the frames coming now are of the room it wants
    this.opened = false;
    this.lostAt = 0;
    this.stream = 0; // counts welcomes: a frame of an older stream is dropped
    this.decoder = null; // the stream's: FrameDecoderV2 or FrameDecoderV3, from the welcome
    this.prev = null;
    this.decoding = Promise.resolve();
    this.keyframeAt = -Infinity;
    this.closeError = null;
    this.lastView = null; // the arguments of the latest view sent: sent again after a reconnection
    this.viewAck = null; // the ack of the latest view (§12.4), or null
    // A client that never joins puts its view in the URL (§12.4): urlView is
    // the one the connection's URL carries now.
    this.urlViewOk = !this.options.room;
    this.urlView = null;
    if (this.options.view) {
      if (this.options.protocol !== 3 || this.options.room) {
        throw new TypeError('options.view needs protocol 3 and no room (it is the first room\'s); view() after a join');
      }
      viewQuery(this.options.view);
      this.lastView = defined({ ...this.options.view });
    }
    this.squads = new Map(); // team -> its latest squads message (§13.5) in this room
    this.roomGame = null; // the latest room-wide game message (§14.4) in this room
    this.teamGames = new Map(); // team -> its latest game message
    this.scriptStatus = null; // the latest script message (§14.5; admins)
    const protocols = offerFor(options.protocol);
    const socketOptions = isNode() && WebSocket !== globalThis.WebSocket
      ? { perMessageDeflate: false, ...(options.tls || {}) } : undefined;
    this.conn = new Connection(this.url, {
      onWelcome: (w, fresh) => this.onWelcome(w, fresh),
      onSnapshot: (data) => this.onFrame(data),
      onReply: (msg) => this.onReply(msg),
      onMessage: (msg) => this.onMessage(msg),
      onClose: (e) => this.onClose(e),
    }, protocols, {
      WebSocket, socketOptions, backoff: options.backoff || CLIENT_BACKOFF, retryFirst: false,
    });
    this.aimUrl();
  }

  // The URL the next connection opens: with the last view while the client
  // never joined (version 3).
  aimUrl() {
    this.urlView = this.urlViewOk && this.lastView && this.options.protocol === 3 ? this.lastView : null;
    let query = null;
    try {
      query = this.urlView && viewQuery(this.urlView);
    } catch (e) {
      this.urlView = null; // not numbers (validate off): sent as the command, the server says why
    }
    this.conn.url = query ? `${this.url}${this.url.includes('?') ? '&' : '?'}${query}` : this.url;
  }

  // ---- where the client is -------------------------------------------------

  /** The room the client is in (the latest welcome's). */
  get room() { return this.welcome ? this.welcome.room : null; }

  get role() { return this.welcome ? this.welcome.role : null; }

  get mode() { return this.welcome ? this.welcome.mode : null; }

  /** RTS players: the team's group; else null. */
  get team() { return this.welcome && Number.isInteger(this.welcome.team) ? this.welcome.team : null; }

  /** The snapshot version this connection speaks: 1, 2 or 3. */
  get protocol() { return this.welcome ? this.welcome.protocol : null; }

  /** The welcome's world: {width, height, edges, capacity, max_obstacles}. */
  get world() { return this.welcome ? this.welcome.world : null; }

  /** The room's script, {name, hash} (§14.1), or null. */
  get roomScript() { return (this.welcome && this.welcome.script) || null; }

  /** The phase of the latest room-wide game state (lobby, countdown, playing, ended), or null. */
  get gamePhase() { return (this.roomGame && this.roomGame.state.phase) || null; }

  // ---- events ------------------------------------------------------------------

  /** Calls fn(value) on each `event`; returns a function that stops it. */
  on(event, fn) {
    if (!this.listeners.has(event)) this.listeners.set(event, new Set());
    this.listeners.get(event).add(fn);
    return () => this.off(event, fn);
  }

  off(event, fn) {
    const set = this.listeners.get(event);
    if (set) set.delete(fn);
  }

  /** A promise of the next `event`'s value. */
  once(event) {
    return new Promise((resolve) => {
      const stop = this.on(event, (v) => {
        stop();
        resolve(v);
      });
    });
  }

  emit(event, value) {
    for (const fn of [...(this.listeners.get(event) || [])]) {
      try {
        fn(value);
      } catch (e) {
        queueMicrotask(() => { throw e; }); // the listener's failure, not the client's
      }
    }
  }

  // ---- the connection ----------------------------------------------------------

  start() {
    this.conn.start();
    return this.ready.promise;
  }

  onWelcome(w, fresh) {
    if (!this.welcome || this.welcome.room !== w.room) { // another room's are to come
      this.squads = new Map();
      this.roomGame = null;
      this.teamGames = new Map();
      this.scriptStatus = null;
    }
    this.welcome = w;
    this.stream++;
    this.decoder = this.decoderFor(w); // a new stream: it starts with a key frame
    this.prev = null;
    this.viewAck = null; // a new stream is the whole room until a view
    if (typeof w.available === 'boolean') this.available = w.available;
    else this.available = true;
    this.dilation = typeof w.dilation === 'number' ? w.dilation : 1;
    if (this.want && this.want.room === w.room) this.want.mode = w.mode;
    this.emit('welcome', w);
    if (!fresh && this.awaitingWelcome) {
      const p = this.awaitingWelcome;
      this.awaitingWelcome = null;
      this.inRoom = true;
      p.resolve(p.ack);
    }
    if (fresh) {
      if (!this.want) this.want = this.initialWant(w);
      const joinArgs = this.joinArgs(w);
      // Decided now, not when the join is answered: the frames that follow
      // this welcome may come in the same read, before any promise settles.
      this.inRoom = !joinArgs;
      this.enterRoom(joinArgs);
    }
  }

  // A decoder for the stream welcome `w` starts: version 3 needs the
  // fields' size (§12.3), version 2 its bases; none for version 1.
  decoderFor(w) {
    if (w.protocol === 3) {
      const cells = w.stream && w.stream.field ? w.stream.field.cells : 4;
      return new FrameDecoderV3({ cells });
    }
    return w.protocol === 2 ? new FrameDecoderV2() : null;
  }

  // After a fresh welcome: join what this client wants, send its view
  // again (a new connection sees the whole room), then it is ready.
  async enterRoom(joinArgs) {
    if (joinArgs) {
      try {
        if (this.options.validate) validateCommand('join', joinArgs, this.place);
        await this.joinNow(joinArgs);
      } catch (e) {
        if (e instanceof CommandError) this.fail(e);
        return; // a lost connection: the next one tries again
      }
    }
    if (this.urlView && !joinArgs) {
      const refused = await this.urlViewReply(this.urlView);
      if (!this.inRoom) return; // the connection went meanwhile: the next one tries again
      if (refused && !this.opened) {
        this.fail(refused); // connect() rejects with it
        return;
      }
    } else if (this.lastView && this.protocol === 3) {
      this.resendView(this.lastView);
    }
    this.state = 'open';
    const wasLost = this.opened;
    this.opened = true;
    this.ready.resolve();
    if (wasLost) {
      this.counters.reconnects++;
      this.emit('reconnect', { welcome: this.welcome, downMs: Date.now() - this.lostAt });
    }
  }

  initialWant(w) {
    const o = this.options;
    const role = o.role || (o.token ? 'admin' : w.role);
    return defined({
      room: o.room || w.room, role, mode: o.mode, name: o.name, token: o.token, password: o.password, boids: o.boids,
    });
  }

  // The join to send after welcome `w`, or null when it is already where it wants to be.
  joinArgs(w) {
    const want = this.want;
    const named = want.name !== undefined || want.password !== undefined || want.rejoin !== undefined;
    if (want.room === w.room && want.role === w.role && !named) return null;
    return defined(Object.fromEntries(JOIN_KEYS.map((k) => [k, want[k]])));
  }

  onClose({ code, reason, gaveUp }) {
    const wasOpen = this.state === 'open';
    this.inRoom = false;
    const err = new ConnectionError(this.state === 'closed' ? 'closed' : 'disconnected',
      `the connection to ${this.url} closed${code ? ` (${code}${reason ? ` ${reason}` : ''})` : ''}`);
    this.rejectPending(err);
    if (this.state === 'closed') return;
    if (code === 1008) {
      // Kicked, or too slow or too fast for the server (PROTOCOL.md §7.2): not to come back.
      this.fail(new ConnectionError('closed_by_server', `flockd closed the connection (1008${reason ? ` ${reason}` : ''})`));
      return;
    }
    if (gaveUp) {
      this.fail(this.opened ? err : new ConnectionError('connect_failed', `cannot connect to ${this.url}${code ? ` (${code})` : ''}`));
      return;
    }
    if (wasOpen) {
      this.state = 'reconnecting';
      this.lostAt = Date.now();
      this.ready = deferred();
      this.emit('disconnect', { code, reason });
    }
  }

  rejectPending(err) {
    for (const p of this.pending.values()) {
      clearTimeout(p.timer);
      p.reject(err);
    }
    this.pending.clear();
    if (this.awaitingWelcome) this.awaitingWelcome.reject(err);
    this.awaitingWelcome = null;
  }

  // Ends the client with `error`: no more reconnects; waiters and iterators get the error.
  fail(error) {
    if (this.state === 'closed') return;
    this.closeError = error;
    this.shutDown(error);
  }

  shutDown(error) {
    this.state = 'closed';
    this.conn.stop();
    this.rejectPending(error || new ConnectionError('closed', 'the client was closed'));
    this.ready.reject(error || new ConnectionError('closed', 'the client was closed'));
    this.ready.promise.catch(() => {});
    for (const q of this.queues) q.end(error);
    this.queues.clear();
    this.emit('close', { error });
  }

  /** Closes the connection for good; resolves once the socket is closed (at most 1 s). */
  async close() {
    if (this.state === 'closed') return;
    const ws = this.conn.ws;
    const closed = ws && ws.readyState !== 3 ? new Promise((resolve) => {
      const t = setTimeout(resolve, 1000);
      ws.addEventListener('close', () => { clearTimeout(t); resolve(); });
    }) : null;
    this.shutDown(null);
    if (closed) await closed;
  }

  // ---- messages ------------------------------------------------------------------

  onMessage(msg) {
    if (msg.type === 'roster') {
      this.roster = msg;
      this.emit('roster', msg);
    } else if (msg.type === 'squads' && Number.isInteger(msg.team)) {
      this.squads.set(msg.team, msg);
      this.emit('squads', msg);
    } else if (msg.type === 'game' && msg.state !== null && typeof msg.state === 'object') {
      if (Number.isInteger(msg.team)) this.teamGames.set(msg.team, msg);
      else this.roomGame = msg;
      this.emit('game', msg);
    } else if (msg.type === 'script') {
      this.scriptStatus = msg;
      this.emit('script', msg);
    } else if (msg.type === 'availability') {
      if (msg.room === this.room) this.available = msg.available;
      this.emit('availability', msg);
    } else if (msg.type === 'dilation') {
      if (msg.room === this.room && typeof msg.factor === 'number') this.dilation = msg.factor;
      this.emit('dilation', msg);
    } else {
      this.emit('message', msg);
    }
  }

  onReply(msg) {
    const p = this.pending.get(msg.id);
    if (!p) return; // e.g. the ack of a keyframe request
    this.pending.delete(msg.id);
    clearTimeout(p.timer);
    if (msg.type === 'error') {
      p.reject(new CommandError(msg.code, msg.message || msg.code, { command: p.cmd }));
    } else if (p.join) {
      this.joined(p, msg);
    } else {
      const ack = ackFields(msg);
      if (p.cmd === 'view') this.viewed(p.args, ack);
      p.resolve(ack);
    }
  }

  // A view acked: what the frames hold from now on.
  viewed(args, ack) {
    this.viewAck = ack;
    this.emit('view', { ...ack, view: { ...args } });
  }

  // The reply to the view of the connection's URL (it has no id): acked,
  // it is the view; refused, it is forgotten and the refusal returned.
  async urlViewReply(args) {
    try {
      await new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          this.pending.delete(null);
          reject(new ConnectionError('timeout', `view: no reply within ${this.options.timeoutMs} ms`));
        }, this.options.timeoutMs);
        this.pending.set(null, { cmd: 'view', args, resolve, reject, timer });
      });
      return null;
    } catch (e) {
      if (!(e instanceof CommandError)) return null; // a lost connection: the next one tries again
      if (this.lastView === args) this.lastView = null;
      this.aimUrl();
      this.emit('viewrefused', e);
      return e;
    }
  }

  // The last view again, on a new connection; refused (the world changed
  // size), it is forgotten: the whole room comes.
  resendView(args) {
    this.request('view', args, this.options.timeoutMs).catch((e) => {
      if (!(e instanceof CommandError) || this.lastView !== args) return;
      this.lastView = null;
      this.emit('viewrefused', e);
    });
  }

  // An accepted join: what to join again on the next connection; the call
  // resolves when the new room's welcome has come.
  joined(p, msg) {
    const ack = ackFields(msg);
    this.urlViewOk = false; // the URL's view is the first room's
    this.aimUrl();
    this.want = defined({
      ...Object.fromEntries(JOIN_KEYS.map((k) => [k, p.args[k]])), room: ack.room, role: ack.role, rejoin: ack.rejoin,
    });
    this.awaitingWelcome = { resolve: p.resolve, reject: p.reject, ack };
  }

  // ---- commands --------------------------------------------------------------------

  /** Resolves once the client is in its room (rejects if it closes first or after timeoutMs). */
  async whenReady(timeoutMs = this.options.timeoutMs) {
    if (this.state === 'open') return;
    if (this.state === 'closed') throw this.closeError || new ConnectionError('closed', 'the client was closed');
    let timer;
    const late = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new ConnectionError('timeout', `not connected within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      await Promise.race([this.ready.promise, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** What validation needs from the welcome: the world, the registry and the role. */
  get place() {
    const w = this.welcome || {};
    return { world: w.world, params: w.params, role: w.role, mode: w.mode, team: this.team };
  }

  /**
   * Sends command `cmd` with `args` once the client is in its room and
   * resolves to its ack's members (tick and the command's own) or rejects
   * with a CommandError: the server's, or the library's own (local: true)
   * for what the schema refuses. `options`: timeoutMs, validate.
   */
  async command(cmd, args = {}, options = {}) {
    const timeoutMs = options.timeoutMs ?? this.options.timeoutMs;
    await this.whenReady(timeoutMs);
    const validate = options.validate ?? this.options.validate;
    if (validate) validateCommand(cmd, args, this.place);
    if (cmd === 'join') {
      this.lastView = null; // a new room's stream is the whole room until a view
      this.aimUrl();
      return this.joinNow(args, timeoutMs);
    }
    if (cmd === 'view') this.viewing(args, validate);
    return this.request(cmd, args, timeoutMs);
  }

  // A view is version 3's (§12.4), refused as the server would on another
  // version; it is sent again after a reconnection.
  viewing(args, validate) {
    if (validate && this.protocol !== 3) {
      throw new CommandError('bad_arg', `view: this connection speaks version ${this.protocol}; views are ${SUBPROTOCOL_V3}'s`,
        { command: 'view', local: true });
    }
    if (this.protocol === 3) {
      this.lastView = { ...args };
      this.aimUrl();
    }
  }

  /** A join, whether ready or not; resolves to its ack once the room's welcome came. */
  joinNow(args, timeoutMs = this.options.timeoutMs) {
    return this.request('join', args, timeoutMs, true);
  }

  request(cmd, args, timeoutMs, join = false) {
    const max = this.welcome && this.welcome.limits && this.welcome.limits.max_message;
    const text = JSON.stringify({ cmd, id: this.conn.nextId, ...args });
    if (max && new TextEncoder().encode(text).length > max) {
      return Promise.reject(new CommandError('too_large', `${cmd}: the message is longer than ${max} bytes`,
        { command: cmd, local: true }));
    }
    const id = this.conn.send(cmd, args);
    if (id === null) return Promise.reject(new ConnectionError('disconnected', `${cmd}: not connected`));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new ConnectionError('timeout', `${cmd}: no reply within ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(id, { cmd, args, resolve, reject, timer, join });
    });
  }

  // ---- squads (§13) ------------------------------------------------------------------

  /** Squad n's entry in the latest squads message of `team` (default: this player's), or null. */
  squad(n, team = this.team) {
    const msg = this.squads.get(team);
    return (msg && msg.squads.find((e) => e.squad === n)) || null;
  }

  /**
   * The first squads message of `team` (default: this player's; the
   * latest one first) for which predicate(message) is true; rejects with a
   * ConnectionError 'timeout' after timeoutMs.
   */
  waitSquads(predicate, { timeoutMs = this.options.timeoutMs, team = this.team } = {}) {
    return this.waitMessage('squads', `squads message of team ${team}`, () => this.squads.get(team),
      (msg) => msg.team === team && predicate(msg), timeoutMs);
  }

  // ---- room scripts (§14) ------------------------------------------------------------

  /**
   * The first game message (room-wide, or with `team` that team's; the
   * latest one first) for which predicate(message) is true; rejects with
   * a ConnectionError 'timeout' after timeoutMs.
   */
  waitGame(predicate, { timeoutMs = this.options.timeoutMs, team = null } = {}) {
    const what = team === null ? 'game message' : `game message of team ${team}`;
    const latest = () => (team === null ? this.roomGame : this.teamGames.get(team));
    return this.waitMessage('game', what, latest, (msg) => (msg.team ?? null) === team && predicate(msg), timeoutMs);
  }

  // The latest message if `accepts` takes it, else the first `event` it takes.
  waitMessage(event, what, latest, accepts, timeoutMs) {
    const now = latest();
    if (now && accepts(now)) return Promise.resolve(now);
    return new Promise((resolve, reject) => {
      let stop = null;
      const timer = setTimeout(() => {
        stop();
        const last = latest();
        reject(new ConnectionError('timeout', `no ${what} met the condition within ${timeoutMs} ms (last at tick ${last ? last.tick : 'none'})`));
      }, timeoutMs);
      stop = this.on(event, (msg) => {
        let ok;
        try {
          ok = accepts(msg);
        } catch (e) {
          stop();
          clearTimeout(timer);
          reject(e);
          return;
        }
        if (!ok) return;
        stop();
        clearTimeout(timer);
        resolve(msg);
      });
    });
  }

  // ---- snapshots ---------------------------------------------------------------------

  onFrame(data) {
    // Before it is in its room (a new connection is in `default` until
    // its join is answered) the frames are another room's.
    if (!this.inRoom) return;
    const stream = this.stream;
    const tickHz = this.welcome ? this.welcome.tick_hz : 0;
    const vscale = this.welcome && this.welcome.stream ? this.welcome.stream.field.vscale : 1;
    const decoded = this.decoder ? this.decoder.decode(data) : Promise.resolve().then(() => decodeSnapshot(data));
    decoded.catch(() => {}); // handled in turn below
    this.decoding = this.decoding.then(() => decoded).then((frame) => {
      if (stream !== this.stream || this.state === 'closed') return;
      const s = new Snapshot(frame, this.prev, tickHz, { vscale });
      this.prev = s;
      this.latest = s;
      this.counters.snapshots++;
      for (const q of this.queues) {
        const before = q.dropped;
        q.push(s);
        this.counters.dropped += q.dropped - before;
      }
      this.emit('snapshot', s);
    }, (e) => {
      if (stream === this.stream) this.refused(e);
    });
  }

  // A frame that cannot be decoded is counted and a key frame asked for; never handed out.
  refused(e) {
    this.counters.badFrames++;
    this.emit('badframe', e);
    const now = Date.now();
    if (this.protocol === 1 || now - this.keyframeAt < KEYFRAME_EVERY_MS) return;
    this.keyframeAt = now;
    if (this.conn.send('keyframe') !== null) this.counters.keyframesAsked++;
  }

  /**
   * An async iterator of every snapshot from now on, until the client
   * closes; it keeps at most `buffer` unread (the oldest go first, counted
   * in its `dropped`). Reconnections do not end it.
   */
  snapshots({ buffer = this.options.snapshotBuffer } = {}) {
    const q = new SnapshotQueue(this, buffer);
    if (this.state === 'closed') q.end(this.closeError);
    else this.queues.add(q);
    return q;
  }

  /** The next snapshot (rejects after timeoutMs). */
  async nextSnapshot({ timeoutMs = this.options.timeoutMs } = {}) {
    const q = this.snapshots({ buffer: 1 });
    let timer;
    const late = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new ConnectionError('timeout', `no snapshot within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      const { value, done } = await Promise.race([q.next(), late]);
      if (done) throw this.closeError || new ConnectionError('closed', 'the client was closed');
      return value;
    } finally {
      clearTimeout(timer);
      q.return();
    }
  }
}

// One method per command of the schema: c.seek({group, x, y}), c.obstacleAdd(...), ...
for (const name of COMMANDS.keys()) {
  Client.prototype[methodName(name)] = function send(args = {}, options = {}) {
    return this.command(name, args, options);
  };
}

/**
 * Connects to flockd at `url` (a ws, wss, http or https URL; one without a
 * path gets /ws) and resolves to a Client in the room and
 * role asked for. `options`: room, role (default: the role the server gives
 * the connection: admin from loopback when it has no admin token, else
 * player; admin with a token), token, password, name, mode and boids (for a
 * room the join creates), protocol (2, the default; 3: version 3's views
 * when the server has them, else 2; 1), timeoutMs (per
 * command and for connecting, 10000), validate (true), snapshotBuffer (64),
 * backoff ({firstMs, maxMs, jitter}), tls (node: options for `ws`, e.g. {ca}
 * or {rejectUnauthorized: false}). Rejects with a ConnectionError when it
 * cannot connect, or the CommandError of a refused join.
 */
export async function connect(url, options = {}) {
  const WebSocket = options.WebSocket || await webSocketClass();
  const client = new Client(url, options, WebSocket);
  const ms = client.options.timeoutMs;
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new ConnectionError('timeout', `not in the room within ${ms} ms of connecting to ${client.url}`)), ms);
  });
  try {
    await Promise.race([client.start(), late]);
  } catch (e) {
    client.fail(e);
    throw e;
  } finally {
    clearTimeout(timer);
  }
  return client;
}
