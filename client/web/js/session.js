// The room this page is in and the room it asks for (PROTOCOL.md §5.6).
// The choice lives in the page's URL (?room=NAME&role=ROLE) so a reload or
// a reconnect joins again: the join goes out right after the first welcome
// of each connection. What a re-join needs besides lives in sessionStorage,
// never in the URL: the admin token, room passwords, RTS rejoin tokens, each
// room's mode (so a room gone with a restarted server comes back as it was)
// and the player's name. No DOM: storage, sending and URL updates come in from
// the caller.

import { ROLES, permissions } from './roles.js';

const ROOM_NAME = /^[A-Za-z0-9_-]{1,32}$/;
const KEY = {
  token: 'flockd.token',
  name: 'flockd.name',
  password: (room) => `flockd.password.${room}`,
  mode: (room) => `flockd.mode.${room}`,
  rejoin: (room) => `flockd.rejoin.${room}`,
};

/** Whether `name` may name a room: 1..32 of [A-Za-z0-9_-]. */
export function validRoomName(name) {
  return typeof name === 'string' && ROOM_NAME.test(name);
}

/** {room, role} from a URL query string, or null when it names no valid room. Role defaults to viewer. */
export function parseChoice(search) {
  const q = new URLSearchParams(search);
  const room = q.get('room');
  if (!validRoomName(room)) return null;
  const role = ROLES.includes(q.get('role')) ? q.get('role') : 'viewer';
  return { room, role };
}

/** The query string showing `choice` ({room, role} or null); other members of `search` stay. */
export function choiceSearch(search, choice) {
  const q = new URLSearchParams(search);
  q.delete('room');
  q.delete('role');
  if (choice) {
    q.set('room', choice.room);
    q.set('role', choice.role);
  }
  const s = q.toString();
  return s ? `?${s}` : '';
}

/** Where welcome `w` (§6.1) puts the connection: {room, mode, role, team, client}. */
export function placeOf(w) {
  return {
    room: typeof w.room === 'string' ? w.room : 'default',
    mode: w.mode === 'rts' ? 'rts' : 'sandbox',
    // A server from before rooms names no role and lets everyone do everything.
    role: typeof w.role === 'string' ? w.role : 'admin',
    team: Number.isInteger(w.team) ? w.team : null,
    client: Number.isInteger(w.client) ? w.client : null,
  };
}

export class RoomSession {
  /**
   * `storage`: a Storage such as sessionStorage; `send(cmd, args)`: sends a
   * command, returns its id or null when not connected; `onChoice(choice)`:
   * the URL should now show `choice` ({room, role} or null); `choice`: the
   * one the page was opened with.
   */
  constructor({ storage, send, onChoice, choice = null }) {
    this.storage = storage;
    this.send = send;
    this.onChoice = onChoice;
    this.choice = choice;
    this.here = null; // placeOf(the latest welcome)
    this.pending = null; // {id, args, auto} of the join awaiting its reply
    this.granted = null; // the latest join ack: {room, role, team, client}
  }

  get name() {
    return this.storage.getItem(KEY.name) || '';
  }

  /** Whether a join sent on its own (after a fresh welcome) still awaits its reply. */
  get rejoining() {
    return Boolean(this.pending && this.pending.auto);
  }

  /** What the page may offer now: a viewer's rights while it is still re-joining. */
  get permissions() {
    if (!this.here || this.rejoining) return permissions('viewer');
    return permissions(this.here.role, this.here.mode, this.here.team);
  }

  /**
   * Takes in welcome `w`; `fresh`: the first welcome of this connection.
   * Returns true when it sent the join that the page's choice asks for.
   */
  welcome(w, fresh) {
    this.here = placeOf(w);
    if (typeof w.mode === 'string') this.storage.setItem(KEY.mode(this.here.room), this.here.mode);
    const g = this.granted;
    if (this.here.team === null && g && g.room === this.here.room && g.role === this.here.role) {
      this.here.team = g.team; // a welcome without team: the ack named it
    }
    if (!fresh) return false;
    this.pending = null; // a join sent on the previous connection gets no reply
    const c = this.choice;
    if (!c || (c.room === this.here.room && c.role === this.here.role)) return false;
    const mode = this.storage.getItem(KEY.mode(c.room));
    return this.join(mode ? { ...c, mode } : c, { auto: true }) !== null;
  }

  /**
   * Sends a join for `req`: {room, role, mode?, password?, token?, name?}
   * (mode only to create a room; name, when given, is kept for later joins).
   * Returns the command id, or null when not connected.
   */
  join(req, { auto = false } = {}) {
    if (req.name !== undefined) this.storage.setItem(KEY.name, req.name);
    const args = this.joinArgs(req);
    const id = this.send('join', args);
    if (id !== null) this.pending = { id, args, auto };
    return id;
  }

  /** The join command's arguments for `req`, the stored secrets filled in. */
  joinArgs(req) {
    const get = (k) => this.storage.getItem(k) || '';
    const args = { room: req.room, role: req.role };
    if (req.mode) args.mode = req.mode;
    if (this.name) args.name = this.name;
    const token = req.role === 'admin' ? req.token || get(KEY.token) : '';
    if (token) args.token = token;
    const password = req.password || (req.role === 'player' ? get(KEY.password(req.room)) : '');
    if (password) args.password = password;
    const rejoin = req.role === 'player' ? get(KEY.rejoin(req.room)) : '';
    if (rejoin) args.rejoin = rejoin;
    return args;
  }

  /**
   * Takes in an ack or error. When it answers the pending join, returns
   * {joined, args, auto} (joined: accepted; args: what was sent; auto: a
   * re-join), else null. A refused re-join drops the choice: the page stays
   * where the server left it.
   */
  reply(msg) {
    const p = this.pending;
    if (!p || msg.id !== p.id) return null;
    this.pending = null;
    const joined = msg.type === 'ack';
    if (joined) this.accepted(msg, p.args);
    else if (msg.code === 'forbidden') this.forget(p.args);
    if (!joined && p.auto) {
      this.choice = null;
      this.onChoice(null);
    }
    return { joined, args: p.args, auto: p.auto };
  }

  accepted(msg, args) {
    const room = typeof msg.room === 'string' ? msg.room : args.room;
    const role = typeof msg.role === 'string' ? msg.role : args.role;
    const put = (k, v) => { if (v) this.storage.setItem(k, v); };
    if (role === 'admin') put(KEY.token, args.token);
    if (role === 'player') put(KEY.password(room), args.password);
    if (typeof msg.rejoin === 'string') put(KEY.rejoin(room), msg.rejoin);
    this.granted = { room, role, team: Number.isInteger(msg.team) ? msg.team : null, client: msg.client };
    this.choice = { room, role };
    this.onChoice(this.choice);
  }

  // A secret the server refused is not kept for the next re-join.
  forget(args) {
    const drop = (k, v) => { if (v && this.storage.getItem(k) === v) this.storage.removeItem(k); };
    if (args.role === 'admin') drop(KEY.token, args.token);
    if (args.role === 'player') drop(KEY.password(args.room), args.password);
  }
}
