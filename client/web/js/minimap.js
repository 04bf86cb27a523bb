// The minimap: the whole room small in a corner, the main view's rectangle
// on it, a click on it moves the main view there.
//
// What it shows comes from whichever stream holds the whole room: the
// page's own while the main view shows the whole world (or always, for an
// rts player: a second connection would be a spectator's, which sees what
// the team's fog hides), else a second version 3 connection of its own
// (MinimapFeed), opened the first time the main view leaves part of the
// world out, that views the whole world at the minimap's width in pixels
// and a small budget: a sample of the boids and the field of the rest.
// MinimapFeed owns that connection; Minimap draws, knows no connection.

import { Connection } from '../lib/connection.js';
import { FrameDecoderV3, SUBPROTOCOL_V3 } from '../lib/decode_v3.js';
import { superTileRect } from '../lib/snapshot.js';
import { groupColor } from './render2d.js';

export const MINIMAP_BUDGET = 6000; // bytes per second of its own connection
const MAX_DOTS = 6000; // boids drawn at most (a stride through more)
const DROP_BYTES = 32768; // a frame bigger than this before the view's ack is dropped undecoded

/**
 * A second connection to the page's server for the minimap: joins `want`
 * ({room}) as a viewer (in `default`, where a new connection starts, it
 * needs no join and is not listed) and views the whole world at `px`
 * pixels across and MINIMAP_BUDGET bytes a second. Each decoded frame
 * goes to onFrame(frame, welcome). The big frames that come before its
 * view is acked (the whole room, every boid: a big room's) are dropped
 * undecoded; a delta on one is refused and a key frame asked for.
 */
export class MinimapFeed {
  constructor(url, { px, onFrame }) {
    this.url = url;
    this.px = px;
    this.onFrame = onFrame;
    this.want = null;
    this.welcome = null;
    this.inRoom = false;
    this.viewId = null; // the view sent, until its ack
    this.decoder = null;
    this.conn = null;
  }

  get open() {
    return Boolean(this.conn);
  }

  /** Follows the page to room `room` (opening the connection the first time). */
  follow(room) {
    this.want = room;
    if (!this.conn) {
      this.conn = new Connection(this.url, {
        onWelcome: (w, fresh) => this.welcomed(w, fresh),
        onSnapshot: (buf) => this.frame(buf),
        onReply: (msg) => { if (msg.id === this.viewId) this.viewId = null; },
      }, [SUBPROTOCOL_V3]);
      this.conn.start();
    } else if (this.welcome && this.welcome.room !== room) {
      this.inRoom = false;
      this.conn.send('join', { room, role: 'viewer' });
    }
  }

  close() {
    if (this.conn) this.conn.stop();
    this.conn = null;
    this.welcome = null;
    this.inRoom = false;
  }

  welcomed(w, fresh) {
    this.welcome = w;
    this.inRoom = false;
    if (w.protocol !== 3) return; // a server without version 3: nothing to show
    this.decoder = new FrameDecoderV3({ cells: w.stream.field.cells });
    if (fresh && w.room !== this.want) {
      this.conn.send('join', { room: this.want, role: 'viewer' });
      return;
    }
    this.inRoom = true;
    const { width, height } = w.world;
    this.viewId = this.conn.send('view', { x: 0, y: 0, w: width, h: height, px: this.px, budget: MINIMAP_BUDGET });
  }

  frame(buf) {
    if (!this.inRoom || !this.decoder || (this.viewId !== null && buf.byteLength > DROP_BYTES)) return;
    const w = this.welcome;
    this.decoder.decode(buf).then((f) => this.onFrame(f, w), () => {
      this.conn.send('keyframe');
    });
  }
}

/** Draws the minimap into `canvas` (CSS size set by the page) and turns clicks into onJump(x, y), world units. */
export class Minimap {
  constructor(canvas, { onJump }) {
    this.canvas = canvas;
    this.ctx = canvas.getContext('2d');
    this.world = null; // {width, height}
    this.frame = null; // what it shows: a decoded frame of either version
    this.source = null; // 'page' or 'own'
    this.delayed = false;
    this.drawnBoids = 0;
    canvas.addEventListener('click', (e) => {
      const p = this.worldAt(e.offsetX, e.offsetY);
      if (p) onJump(p[0], p[1]);
    });
  }

  /** The width in pixels its own connection views the world at. */
  get px() {
    return Math.max(1, Math.round(this.canvas.clientWidth || 160));
  }

  setWorld(width, height) {
    this.world = { width, height };
    this.frame = null;
  }

  /** Shows frame `f` (any version) of stream `source`. */
  show(f, source) {
    this.frame = f;
    this.source = source;
    this.delayed = Boolean(f && f.delayed);
  }

  // Pixels per world unit, and the offsets that centre the world.
  fit() {
    const w = this.canvas.clientWidth;
    const h = this.canvas.clientHeight;
    const k = Math.min(w / this.world.width, h / this.world.height);
    return { k, ox: (w - this.world.width * k) / 2, oy: (h - this.world.height * k) / 2, w, h };
  }

  worldAt(sx, sy) {
    if (!this.world) return null;
    const { k, ox, oy } = this.fit();
    const x = (sx - ox) / k;
    const y = (sy - oy) / k;
    if (x < 0 || y < 0 || x > this.world.width || y > this.world.height) return null;
    return [x, y];
  }

  /** Draws the room and `view` ({x, y, w, h}, world units: the main view's). */
  draw(view) {
    const { canvas, ctx } = this;
    const dpr = window.devicePixelRatio || 1;
    const bw = Math.round(canvas.clientWidth * dpr);
    const bh = Math.round(canvas.clientHeight * dpr);
    if (canvas.width !== bw || canvas.height !== bh) {
      canvas.width = bw;
      canvas.height = bh;
    }
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, canvas.clientWidth, canvas.clientHeight);
    this.drawnBoids = 0;
    if (!this.world || !bw || !bh) return;
    const { k, ox, oy } = this.fit();
    ctx.fillStyle = '#121826';
    ctx.fillRect(ox, oy, this.world.width * k, this.world.height * k);
    const f = this.frame;
    ctx.save();
    ctx.beginPath();
    ctx.rect(ox, oy, this.world.width * k, this.world.height * k);
    ctx.clip();
    if (f && f.parts && f.sample > 0) this.drawField(f, k, ox, oy);
    if (f) this.drawBoids(f, k, ox, oy);
    ctx.restore();
    if (view) {
      ctx.lineWidth = 1.5;
      ctx.strokeStyle = '#ffd60a';
      ctx.strokeRect(ox + view.x * k, oy + view.y * k, Math.max(2, view.w * k), Math.max(2, view.h * k));
    }
  }

  drawField(f, k, ox, oy) {
    const { ctx } = this;
    let top = 0;
    for (const p of f.parts) if (p.field) for (const c of p.field.count) top = Math.max(top, c);
    if (!top) return;
    for (const p of f.parts) {
      if (!p.field) continue;
      const r = superTileRect(p.tx, p.ty, f);
      const n = p.field.cells;
      for (let c = 0; c < n * n; c++) {
        const count = p.field.count[c];
        if (!count) continue;
        ctx.fillStyle = `rgba(120, 200, 255, ${0.15 + 0.6 * Math.sqrt(count / top)})`;
        ctx.fillRect(ox + (r.x + (c % n) * (r.w / n)) * k, oy + (r.y + Math.floor(c / n) * (r.h / n)) * k,
          (r.w / n) * k + 0.5, (r.h / n) * k + 0.5);
      }
    }
  }

  drawBoids(f, k, ox, oy) {
    const { ctx } = this;
    const n = f.boidCount;
    const stride = Math.max(1, Math.ceil(n / MAX_DOTS));
    let color = -1;
    for (let i = 0; i < n; i += stride) {
      if (f.group[i] !== color) {
        color = f.group[i];
        ctx.fillStyle = groupColor(color);
      }
      ctx.fillRect(ox + f.x[i] * k - 0.75, oy + f.y[i] * k - 0.75, 1.5, 1.5);
      this.drawnBoids++;
    }
  }
}
