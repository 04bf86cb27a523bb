// Canvas2D renderer: world background and edges, obstacles, a version 3
// frame's level-of-detail field (per cell: shading by density and a
// stroke of the mean velocity), boids as oriented triangles (one path and
// one fill per group run, so 10k boids are a few dozen canvas calls), the
// fog of war of an rts team, group targets and the highlighted boid.
// Draws only; owns no simulation state.

import { superTileRect } from '../lib/snapshot.js';

const PALETTE = [
  '#4cc9f0', '#f72585', '#b5e48c', '#ffb703', '#9d4edd', '#ff6b35',
  '#06d6a0', '#e9c46a', '#ef476f', '#8ecae6', '#c77dff', '#90be6d',
];

/** The colour group g is drawn in. */
export function groupColor(g) {
  return PALETTE[g % PALETTE.length];
}

const BOID_LENGTH = 9; // world units, nose to tail
const BOID_MIN_PX = 6; // but never shorter than this on screen (CSS px)
const BOID_MAX_PX = 36;
const BATCH = 32; // triangles per fill
const FIELD_RGB = '120, 200, 255';
const FOG = 'rgba(70, 74, 84, 0.62)';

export class Renderer2D {
  constructor(canvas) {
    this.canvas = canvas;
    this.ctx = canvas.getContext('2d', { alpha: false });
    this.dpr = 1;
    this.drawn = 0; // boids drawn by the last frame (inside the view)
    this.fieldCells = 0; // field cells drawn by the last frame
    this.fogged = false; // whether the last frame drew the fog of war
    this.densityRef = 0; // the field's reference density, smoothed across frames
    this.fogCanvas = null;
    this.squadSlots = 0; // formation slots drawn by the last frame
    this.squadWaypoints = 0; // squads' waypoints drawn by the last frame
  }

  /** Matches the backing store to the canvas's CSS size; returns [w, h] in CSS px. */
  resize() {
    const dpr = window.devicePixelRatio || 1;
    const w = Math.max(1, this.canvas.clientWidth);
    const h = Math.max(1, this.canvas.clientHeight);
    const bw = Math.round(w * dpr);
    const bh = Math.round(h * dpr);
    if (this.canvas.width !== bw || this.canvas.height !== bh) {
      this.canvas.width = bw;
      this.canvas.height = bh;
    }
    this.dpr = dpr;
    return [w, h];
  }

  /**
   * Draws one frame. `frame` is a Playout sample (or null), `cam` a Camera,
   * `ui` {highlight: boid index or -1, label: what to call it (its index
   * or id), selectedGroup, preview: {x, y, r} or null, field: a version 3
   * frame whose field to draw or null, fieldAlpha, boidAlpha (0..1), fog:
   * {units: [[x, y, r], ...]} to grey out all but those circles, or null,
   * squads: an rts player's squads to draw (squadui.js overlay(): anchor,
   * waypoints, slots) or null, squadColor, box: [sx0, sy0, sx1, sy1], the
   * selection box being dragged (CSS px), or null}.
   */
  draw(frame, cam, ui) {
    const { ctx, dpr } = this;
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.fillStyle = '#0b0e14';
    ctx.fillRect(0, 0, this.canvas.width, this.canvas.height);
    this.drawn = 0;
    this.fieldCells = 0;
    this.fogged = false;
    this.squadSlots = 0;
    this.squadWaypoints = 0;
    if (!frame) return;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    const s = frame.snap;
    this.drawWorld(cam, s.wrap);
    this.drawObstacles(cam, s.obstacles);
    if (ui.field && ui.fieldAlpha > 0) this.drawField(cam, ui.field, ui.fieldAlpha);
    const alpha = ui.boidAlpha ?? 1;
    ctx.globalAlpha = alpha;
    if (alpha > 0) this.drawBoids(cam, frame, ui.boidScale ?? 1);
    ctx.globalAlpha = 1;
    if (ui.fog) this.drawFog(cam, ui.fog);
    this.drawTargets(cam, s.targets, ui.selectedGroup);
    if (ui.highlight >= 0 && ui.highlight < frame.count) {
      this.drawHighlight(cam, frame.x[ui.highlight], frame.y[ui.highlight], ui.label ?? ui.highlight);
    }
    if (ui.preview) this.drawPreview(cam, ui.preview);
    if (ui.squads) this.drawSquads(cam, ui.squads, ui.squadColor || '#ffffff');
    if (ui.box) this.drawBox(ui.box);
  }

  // Each squad's formation slots (small rings) and the path ahead of it:
  // from its anchor through its waypoints (dashed), each waypoint marked.
  // The selected squad's in yellow, the others in the team's colour.
  drawSquads(cam, squads, color) {
    const { ctx } = this;
    for (const q of squads) {
      this.squadSlots += q.slots.length;
      this.squadWaypoints += q.to.length;
      const c = q.selected ? '#ffd60a' : color;
      const r = Math.max(2, Math.min(6, 2.5 * cam.scale));
      ctx.beginPath();
      for (const [x, y] of q.slots) {
        const [sx, sy] = cam.worldToScreen(x, y);
        ctx.moveTo(sx + r, sy);
        ctx.arc(sx, sy, r, 0, 2 * Math.PI);
      }
      ctx.lineWidth = 1;
      ctx.strokeStyle = c;
      ctx.stroke();
      const [ax, ay] = cam.worldToScreen(q.anchor[0], q.anchor[1]);
      if (q.to.length) {
        ctx.beginPath();
        ctx.moveTo(ax, ay);
        for (const [x, y] of q.to) ctx.lineTo(...cam.worldToScreen(x, y));
        ctx.setLineDash([6, 5]);
        this.haloStroke(c);
        ctx.setLineDash([]);
        ctx.beginPath();
        for (const [x, y] of q.to) {
          const [sx, sy] = cam.worldToScreen(x, y);
          ctx.rect(sx - 4, sy - 4, 8, 8);
        }
        this.haloStroke(c);
      }
      this.label(`squad ${q.squad}`, ax + 8, ay - 8, c);
    }
  }

  drawBox([x0, y0, x1, y1]) {
    const { ctx } = this;
    ctx.fillStyle = 'rgba(255, 214, 10, 0.12)';
    ctx.fillRect(Math.min(x0, x1), Math.min(y0, y1), Math.abs(x1 - x0), Math.abs(y1 - y0));
    ctx.lineWidth = 1;
    ctx.strokeStyle = '#ffd60a';
    ctx.strokeRect(Math.min(x0, x1) + 0.5, Math.min(y0, y1) + 0.5, Math.abs(x1 - x0), Math.abs(y1 - y0));
  }

  /**
   * A version 3 frame's fields (§12.6): each cell shaded by how dense it is
   * against twice the mean density of the cells that hold boids (smoothed
   * from frame to frame, so the shading does not flicker: an even spread
   * is half bright, a flock brighter, a gap dark), with a stroke along its
   * boids' mean velocity. `alpha` fades it in and out.
   */
  drawField(cam, f, alpha) {
    const { ctx } = this;
    let sum = 0;
    const cells = [];
    for (const p of f.parts) {
      if (!p.field) continue;
      const r = superTileRect(p.tx, p.ty, f);
      const n = p.field.cells;
      const cw = r.w / n;
      const ch = r.h / n;
      for (let c = 0; c < n * n; c++) {
        const count = p.field.count[c];
        if (!count) continue;
        const density = count / (cw * ch);
        sum += density;
        cells.push(r.x + (c % n) * cw, r.y + Math.floor(c / n) * ch, cw, ch, density, p.field.vx[c], p.field.vy[c]);
      }
    }
    if (!cells.length) return;
    const ref = (2 * sum) / (cells.length / 7);
    this.densityRef = this.densityRef ? 0.9 * this.densityRef + 0.1 * ref : ref;
    const k = cam.scale;
    const ox = cam.viewW / 2 - cam.cx * k;
    const oy = cam.viewH / 2 - cam.cy * k;
    const strokes = new Path2D();
    ctx.save();
    ctx.beginPath(); // a super-tile at the grid's edge may reach past the world
    ctx.rect(ox, oy, cam.worldW * k, cam.worldH * k);
    ctx.clip();
    for (let i = 0; i < cells.length; i += 7) {
      const sx = cells[i] * k + ox;
      const sy = cells[i + 1] * k + oy;
      const sw = cells[i + 2] * k;
      const sh = cells[i + 3] * k;
      if (sx > cam.viewW || sy > cam.viewH || sx + sw < 0 || sy + sh < 0) continue;
      const shade = Math.min(1, cells[i + 4] / this.densityRef);
      ctx.fillStyle = `rgba(${FIELD_RGB}, ${(0.08 + 0.62 * shade) * alpha})`;
      ctx.fillRect(sx, sy, sw + 0.5, sh + 0.5); // + 0.5: no seams between cells
      const vx = cells[i + 5];
      const vy = cells[i + 6];
      const v = Math.hypot(vx, vy);
      if (v > 0) {
        const len = Math.min(0.45 * Math.min(sw, sh), 4 + v * k * 0.5);
        const cx = sx + sw / 2;
        const cy = sy + sh / 2;
        strokes.moveTo(cx - (vx / v) * len * 0.5, cy - (vy / v) * len * 0.5);
        strokes.lineTo(cx + (vx / v) * len * 0.5, cy + (vy / v) * len * 0.5);
      }
      this.fieldCells++;
    }
    ctx.lineWidth = 1.2;
    ctx.strokeStyle = `rgba(235, 245, 255, ${0.7 * alpha})`;
    ctx.stroke(strokes);
    ctx.restore();
  }

  /**
   * The fog of war (an rts team's frames): the world greyed out but for a
   * circle of sight around each of the team's units, `fog.units` [[x, y,
   * r], ...] in world units.
   */
  drawFog(cam, fog) {
    const w = Math.max(1, Math.round(cam.viewW));
    const h = Math.max(1, Math.round(cam.viewH));
    if (!this.fogCanvas) this.fogCanvas = document.createElement('canvas');
    const fc = this.fogCanvas;
    if (fc.width !== w || fc.height !== h) {
      fc.width = w;
      fc.height = h;
    }
    const g = fc.getContext('2d');
    g.globalCompositeOperation = 'source-over';
    g.clearRect(0, 0, w, h);
    const [x0, y0] = cam.worldToScreen(0, 0);
    g.fillStyle = FOG;
    g.fillRect(x0, y0, cam.worldW * cam.scale, cam.worldH * cam.scale);
    g.globalCompositeOperation = 'destination-out';
    g.beginPath();
    for (const [x, y, r] of fog.units) {
      const [sx, sy] = cam.worldToScreen(x, y);
      const sr = r * cam.scale;
      g.moveTo(sx + sr, sy);
      g.arc(sx, sy, sr, 0, 2 * Math.PI);
    }
    g.fillStyle = '#000';
    g.fill();
    this.ctx.drawImage(fc, 0, 0, w, h);
    this.fogged = true;
  }

  drawWorld(cam, wrap) {
    const { ctx } = this;
    const [x0, y0] = cam.worldToScreen(0, 0);
    const w = cam.worldW * cam.scale;
    const h = cam.worldH * cam.scale;
    ctx.fillStyle = '#121826';
    ctx.fillRect(x0, y0, w, h);
    ctx.lineWidth = 1.5;
    ctx.strokeStyle = wrap ? '#3a4a6b' : '#8a9bbd';
    ctx.setLineDash(wrap ? [8, 6] : []); // dashed: the edges wrap around
    ctx.strokeRect(x0, y0, w, h);
    ctx.setLineDash([]);
  }

  drawObstacles(cam, obstacles) {
    if (!obstacles.length) return;
    const { ctx } = this;
    ctx.beginPath();
    for (const o of obstacles) {
      const [sx, sy] = cam.worldToScreen(o.x, o.y);
      const r = o.r * cam.scale;
      ctx.moveTo(sx + r, sy);
      ctx.arc(sx, sy, r, 0, 2 * Math.PI);
    }
    ctx.fillStyle = 'rgba(150, 160, 185, 0.35)';
    ctx.fill();
    ctx.lineWidth = 1.5;
    ctx.strokeStyle = '#c0c8da';
    ctx.stroke();
  }

  // Boids are listed group by group (§4.3), so each run is one colour.
  // Triangles are filled in batches of BATCH: Skia's path filling grows
  // faster than linearly with the number of subpaths (one 10k-triangle
  // path costs ~200 ms in software, batches of 32 about 3 ms).
  // `size` scales the triangles (a sample's boids over a field are smaller).
  drawBoids(cam, frame, size = 1) {
    const { ctx } = this;
    const { x, y, angle } = frame;
    const len = size * Math.min(BOID_MAX_PX, Math.max(BOID_MIN_PX, BOID_LENGTH * cam.scale));
    const nose = len * 0.6;
    const tail = len * 0.4;
    const half = len * 0.3;
    const k = cam.scale;
    const ox = cam.viewW / 2 - cam.cx * k;
    const oy = cam.viewH / 2 - cam.cy * k;
    const maxX = cam.viewW + len;
    const maxY = cam.viewH + len;
    let i = 0;
    let drawn = 0;
    for (const run of frame.runs || frame.snap.runs) {
      const end = i + run.count;
      ctx.fillStyle = groupColor(run.group);
      ctx.beginPath();
      let batch = 0;
      for (; i < end; i++) {
        const sx = x[i] * k + ox;
        const sy = y[i] * k + oy;
        if (sx < -len || sy < -len || sx > maxX || sy > maxY) continue;
        const c = Math.cos(angle[i]);
        const s = Math.sin(angle[i]);
        ctx.moveTo(sx + c * nose, sy + s * nose);
        ctx.lineTo(sx - c * tail - s * half, sy - s * tail + c * half);
        ctx.lineTo(sx - c * tail + s * half, sy - s * tail - c * half);
        ctx.closePath();
        drawn++;
        if (++batch === BATCH) {
          ctx.fill();
          ctx.beginPath();
          batch = 0;
        }
      }
      if (batch) ctx.fill();
    }
    this.drawn = drawn;
  }

  // Targets sit where the group crowds, so each is drawn over a dark halo.
  drawTargets(cam, targets, selectedGroup) {
    const { ctx } = this;
    for (const t of targets) {
      const [sx, sy] = cam.worldToScreen(t.x, t.y);
      const size = t.group === selectedGroup ? 16 : 12;
      ctx.beginPath();
      ctx.arc(sx, sy, size * 0.6, 0, 2 * Math.PI);
      ctx.moveTo(sx - size, sy);
      ctx.lineTo(sx + size, sy);
      ctx.moveTo(sx, sy - size);
      ctx.lineTo(sx, sy + size);
      this.haloStroke('#ffffff');
      ctx.beginPath();
      ctx.arc(sx, sy, 3.5, 0, 2 * Math.PI);
      ctx.fillStyle = groupColor(t.group);
      ctx.fill();
      this.label(`target g${t.group}`, sx + size + 3, sy - size + 2, groupColor(t.group));
    }
  }

  drawHighlight(cam, x, y, label) {
    const { ctx } = this;
    const [sx, sy] = cam.worldToScreen(x, y);
    ctx.beginPath();
    ctx.arc(sx, sy, 11, 0, 2 * Math.PI);
    this.haloStroke('#ffd60a');
    this.label(`#${label}`, sx + 13, sy + 16, '#ffd60a');
  }

  // Strokes the current path in `color` over a dark halo, so it shows on
  // any background.
  haloStroke(color) {
    const { ctx } = this;
    ctx.lineWidth = 5;
    ctx.strokeStyle = 'rgba(0, 0, 0, 0.75)';
    ctx.stroke();
    ctx.lineWidth = 2;
    ctx.strokeStyle = color;
    ctx.stroke();
  }

  label(text, x, y, color) {
    const { ctx } = this;
    ctx.font = '12px system-ui, sans-serif';
    ctx.lineWidth = 3;
    ctx.strokeStyle = 'rgba(0, 0, 0, 0.8)';
    ctx.strokeText(text, x, y);
    ctx.fillStyle = color;
    ctx.fillText(text, x, y);
  }

  drawPreview(cam, p) {
    const { ctx } = this;
    const [sx, sy] = cam.worldToScreen(p.x, p.y);
    ctx.lineWidth = 1;
    ctx.strokeStyle = 'rgba(200, 210, 230, 0.7)';
    ctx.setLineDash([4, 4]);
    ctx.beginPath();
    ctx.arc(sx, sy, p.r * cam.scale, 0, 2 * Math.PI);
    ctx.stroke();
    ctx.setLineDash([]);
  }
}
