// WebSocket session with flockd (PROTOCOL.md §1, §5, §6): connects to /ws
// offering flock.v2 then flock.v1 (or the subprotocols it is given, such as
// flock.v3; the
// server takes the first it speaks), hands snapshots and JSON messages to the
// caller, numbers outgoing commands and routes each ack or error back to
// the command it answers. When the connection drops it reconnects with
// capped exponential backoff with jitter (by default 0.5 s doubling to 8 s,
// the viewer's pace) until it is stopped. Owns the socket; knows nothing
// about drawing, rooms or decoding. The viewer (client/web) and the
// library's Client (client.js) both run on it.

import { SUBPROTOCOL } from './decoder.js';
import { SUBPROTOCOL_V2 } from './decoder_v2.js';
import { SUBPROTOCOL_V3 } from './decode_v3.js';

/** The subprotocols offered by default, preferred first. */
export const OFFER = [SUBPROTOCOL_V2, SUBPROTOCOL];

/** The subprotocols to offer for snapshot version `protocol` (1, 2 or 3), preferred first: that version, then the older ones. */
export function offerFor(protocol) {
  if (protocol === 1) return [SUBPROTOCOL];
  if (protocol === 3) return [SUBPROTOCOL_V3, SUBPROTOCOL_V2, SUBPROTOCOL];
  return OFFER;
}

/** The query of a WebSocket URL that asks for `view` (§12.4): view=X,Y,W,H, and px, budget if given. */
export function viewQuery(view) {
  const rect = ['x', 'y', 'w', 'h'].map((k) => view[k]);
  if (!rect.every((v) => typeof v === 'number' && Number.isFinite(v))) {
    throw new TypeError(`a view wants finite numbers x, y, w, h: ${JSON.stringify(view)}`);
  }
  let q = `view=${rect.join(',')}`;
  for (const k of ['px', 'budget']) {
    if (view[k] === undefined || view[k] === null) continue;
    if (!Number.isInteger(view[k])) throw new TypeError(`a view's ${k} is a whole number: ${view[k]}`);
    q += `&${k}=${view[k]}`;
  }
  return q;
}

/** The viewer's pace: 0.5 s doubling to 8 s, each delay within ±20%. */
export const VIEWER_BACKOFF = Object.freeze({ firstMs: 500, maxMs: 8000, jitter: 0.2 });

/**
 * Delay before reconnect attempt `attempt` (1, 2, ...): `firstMs` doubling
 * up to `maxMs`, then spread by ±`jitter` (a fraction) so that clients
 * dropped together do not all come back at once.
 */
export function backoffDelay(attempt, rnd = Math.random, backoff = VIEWER_BACKOFF) {
  const { firstMs, maxMs, jitter } = backoff;
  const base = Math.min(maxMs, firstMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(base * (1 - jitter + 2 * jitter * rnd()));
}

/** The snapshot version of subprotocol `p` the server took: 3, 2, or 1 (also when it took none). */
export function versionOf(p) {
  if (p === SUBPROTOCOL_V3) return 3;
  return p === SUBPROTOCOL_V2 ? 2 : 1;
}

export class Connection {
  /**
   * `handlers`: onWelcome(msg, fresh) (fresh: the first welcome of this
   * socket; later ones follow a join), onSnapshot(arrayBuffer, arrivalMs),
   * onReply(msg, request) for acks and errors (request: {cmd, sentAt} or
   * null), onMessage(msg) for other types, onState(state) whenever `state`
   * changes (see the getter), onClose({code, reason, gaveUp}) when a socket
   * closes (gaveUp: no retry follows). `protocols`: the subprotocols to
   * offer, preferred first. `options`: `WebSocket`, the class to use (the
   * platform's by default; in node the `ws` package's), `socketOptions`, a
   * third argument for its constructor (e.g. `ws`'s TLS options),
   * `backoff` ({firstMs, maxMs, jitter}, VIEWER_BACKOFF by default) and
   * `retryFirst` (default true): whether to keep trying before the first
   * welcome, rather than give up at the first failure.
   */
  constructor(url, handlers, protocols = OFFER, options = {}) {
    this.url = url;
    this.h = handlers;
    this.protocols = protocols;
    this.WebSocket = options.WebSocket || globalThis.WebSocket;
    this.socketOptions = options.socketOptions;
    this.backoff = options.backoff || VIEWER_BACKOFF;
    this.retryFirst = options.retryFirst !== false;
    this.version = null; // the snapshot version the server took, from the socket
    this.ws = null;
    this.nextId = 1;
    this.pending = new Map(); // id -> {cmd, sentAt}
    this.attempt = 0; // failed attempts since the last welcome
    this.retryAt = 0;
    this.timer = null;
    this.stopped = false;
    this.everConnected = false;
    this.welcomed = false; // this socket has had its first welcome
    this.status = 'connecting';
  }

  /**
   * {status, attempt, retryAt, everConnected}: status is 'connecting',
   * 'open' (welcome received), 'waiting' (a retry is scheduled at retryAt,
   * performance.now() time) or 'closed' (stopped, no retry follows).
   */
  get state() {
    return { status: this.status, attempt: this.attempt, retryAt: this.retryAt, everConnected: this.everConnected };
  }

  get open() {
    return this.status === 'open';
  }

  setStatus(status) {
    this.status = status;
    if (this.h.onState) this.h.onState(this.state);
  }

  start() {
    this.stopped = false;
    this.connect();
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    if (this.ws) this.ws.close(1000); // its close event says 'closed'
    else this.setStatus('closed');
  }

  connect() {
    this.setStatus('connecting');
    const ws = this.socketOptions === undefined ? new this.WebSocket(this.url, this.protocols)
      : new this.WebSocket(this.url, this.protocols, this.socketOptions);
    ws.binaryType = 'arraybuffer';
    this.ws = ws;
    this.welcomed = false;
    ws.onmessage = (e) => this.receive(e.data);
    ws.onclose = (e) => this.lost(ws, e);
    // A failed connection also fires close, which schedules the retry.
    ws.onerror = () => {};
  }

  lost(ws, e = {}) {
    if (ws !== this.ws) return;
    this.ws = null;
    this.pending.clear();
    const gaveUp = this.stopped || (!this.everConnected && !this.retryFirst);
    if (this.h.onClose) this.h.onClose({ code: e.code, reason: e.reason, gaveUp });
    if (gaveUp) {
      this.stopped = true;
      this.setStatus('closed');
      return;
    }
    this.attempt++;
    const delay = backoffDelay(this.attempt, Math.random, this.backoff);
    this.retryAt = performance.now() + delay;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.connect(), delay);
    this.setStatus('waiting');
  }

  receive(data) {
    if (typeof data !== 'string') {
      if (this.status === 'open') this.h.onSnapshot(data, performance.now());
      return;
    }
    let msg;
    try {
      msg = JSON.parse(data);
    } catch {
      return; // not ours to judge; the protocol has no reply for it
    }
    if (!msg || typeof msg !== 'object') return;
    if (msg.type === 'welcome') {
      const fresh = !this.welcomed;
      this.version = this.ws ? versionOf(this.ws.protocol) : 1;
      this.welcomed = true;
      this.attempt = 0;
      this.everConnected = true;
      this.setStatus('open');
      this.h.onWelcome(msg, fresh);
    } else if (msg.type === 'ack' || msg.type === 'error') {
      const req = this.pending.get(msg.id) || null;
      this.pending.delete(msg.id);
      this.h.onReply(msg, req);
    } else if (this.h.onMessage) {
      this.h.onMessage(msg); // types this client does not know are ignored (§2)
    }
  }

  /**
   * Sends command `cmd` with `args`; returns its id, or null when not
   * connected (nothing is sent then).
   */
  send(cmd, args = {}) {
    // readyState too: a socket the peer closed is CLOSED before its close
    // event runs, and a send then only logs an error.
    if (!this.ws || this.status !== 'open' || this.ws.readyState !== 1) return null;
    const id = this.nextId++;
    this.pending.set(id, { cmd, sentAt: performance.now() });
    this.ws.send(JSON.stringify({ cmd, id, ...args }));
    return id;
  }
}
