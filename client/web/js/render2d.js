// Canvas2D renderer: world background and edges, obstacles, boids as
// oriented triangles (one path and one fill per group run, so 10k boids are
// a few dozen canvas calls), group targets and the highlighted boid.
// Draws only; owns no simulation state.

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

export class Renderer2D {
  constructor(canvas) {
    this.canvas = canvas;
    this.ctx = canvas.getContext('2d', { alpha: false });
    this.dpr = 1;
    this.drawn = 0; // boids drawn by the last frame (inside the view)
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
   * `ui` {highlight: boid index or -1, selectedGroup, preview: {x, y, r} or null}.
   */
  draw(frame, cam, ui) {
    const { ctx, dpr } = this;
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.fillStyle = '#0b0e14';
    ctx.fillRect(0, 0, this.canvas.width, this.canvas.height);
    this.drawn = 0;
    if (!frame) return;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    const s = frame.snap;
    this.drawWorld(cam, s.wrap);
    this.drawObstacles(cam, s.obstacles);
    this.drawBoids(cam, frame);
    this.drawTargets(cam, s.targets, ui.selectedGroup);
    if (ui.highlight >= 0 && ui.highlight < frame.count) {
      this.drawHighlight(cam, frame.x[ui.highlight], frame.y[ui.highlight], ui.highlight);
    }
    if (ui.preview) this.drawPreview(cam, ui.preview);
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
  drawBoids(cam, frame) {
    const { ctx } = this;
    const { x, y, angle } = frame;
    const len = Math.min(BOID_MAX_PX, Math.max(BOID_MIN_PX, BOID_LENGTH * cam.scale));
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
    for (const run of frame.snap.runs) {
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

  drawHighlight(cam, x, y, index) {
    const { ctx } = this;
    const [sx, sy] = cam.worldToScreen(x, y);
    ctx.beginPath();
    ctx.arc(sx, sy, 11, 0, 2 * Math.PI);
    this.haloStroke('#ffd60a');
    this.label(`#${index}`, sx + 13, sy + 16, '#ffd60a');
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
