// Camera: maps world units to canvas pixels (CSS pixels, origin at the
// canvas's top-left corner). World +y is drawn downward, as in the
// protocol's frame (§3: a quarter turn from +x points along +y). Pure: no DOM.

const MIN_ZOOM = 0.2; // relative to the fitted scale
const MAX_ZOOM = 60;

export class Camera {
  constructor() {
    this.viewW = 1;
    this.viewH = 1;
    this.worldW = 1;
    this.worldH = 1;
    this.scale = 1; // CSS pixels per world unit
    this.cx = 0; // world point at the centre of the view
    this.cy = 0;
    this.fitted = true; // follows the window until the user zooms or pans
  }

  resize(viewW, viewH) {
    this.viewW = Math.max(1, viewW);
    this.viewH = Math.max(1, viewH);
    if (this.fitted) this.fit();
  }

  setWorld(w, h) {
    const changed = w !== this.worldW || h !== this.worldH;
    this.worldW = w;
    this.worldH = h;
    if (changed || this.fitted) this.fit();
  }

  fitScale() {
    return Math.min(this.viewW / this.worldW, this.viewH / this.worldH) * 0.96;
  }

  /** Shows the whole world, centred, and keeps doing so on resize. */
  fit() {
    this.scale = this.fitScale();
    this.cx = this.worldW / 2;
    this.cy = this.worldH / 2;
    this.fitted = true;
  }

  worldToScreen(x, y) {
    return [(x - this.cx) * this.scale + this.viewW / 2, (y - this.cy) * this.scale + this.viewH / 2];
  }

  screenToWorld(sx, sy) {
    return [(sx - this.viewW / 2) / this.scale + this.cx, (sy - this.viewH / 2) / this.scale + this.cy];
  }

  /** Zooms by `factor` keeping the world point under (sx, sy) in place. */
  zoomAt(sx, sy, factor) {
    const [wx, wy] = this.screenToWorld(sx, sy);
    const fit = this.fitScale();
    this.scale = Math.min(fit * MAX_ZOOM, Math.max(fit * MIN_ZOOM, this.scale * factor));
    this.cx = wx - (sx - this.viewW / 2) / this.scale;
    this.cy = wy - (sy - this.viewH / 2) / this.scale;
    this.fitted = false;
  }

  /** Moves the view by a drag of (dx, dy) CSS pixels. */
  panBy(dx, dy) {
    this.cx -= dx / this.scale;
    this.cy -= dy / this.scale;
    this.fitted = false;
  }

  centerOn(x, y) {
    this.cx = x;
    this.cy = y;
  }

  /** The visible world rectangle [x0, y0, x1, y1], grown by `margin` CSS pixels. */
  visibleWorld(margin = 0) {
    const [x0, y0] = this.screenToWorld(-margin, -margin);
    const [x1, y1] = this.screenToWorld(this.viewW + margin, this.viewH + margin);
    return [x0, y0, x1, y1];
  }
}
