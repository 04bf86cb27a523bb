// Level of detail on screen (PROTOCOL.md §12.6): a version 3 frame at
// sample 0 holds every boid of its view and is drawn as boids; at a sample
// above 0 it holds a sample of them and a field per super-tile, drawn as
// the field with the sample's boids smaller and fainter over it. Between
// the two (a zoom across the server's threshold) neither jumps: the field
// fades in or out over FADE_MS, the last frame that had one drawn while it
// fades out. Pure: no DOM, times come in as arguments.

export const FADE_MS = 400;

export class LodBlend {
  constructor(fadeMs = FADE_MS) {
    this.fadeMs = fadeMs;
    this.mix = null; // 0: boids only, 1: the field
    this.at = null;
    this.field = null; // the last frame with a field
  }

  /** Forgets the field (another room, a new stream). */
  reset() {
    this.mix = null;
    this.at = null;
    this.field = null;
  }

  /**
   * How to draw `frame` (the version 3 frame shown now, or null) at nowMs:
   * {field: the frame whose field to draw or null, fieldAlpha, boidAlpha,
   * boidScale}.
   */
  update(frame, nowMs) {
    const target = frame && frame.sample > 0 ? 1 : 0;
    if (target) this.field = frame;
    if (this.mix === null) this.mix = target;
    const dt = this.at === null ? 0 : Math.max(0, nowMs - this.at);
    this.at = nowMs;
    const step = dt / this.fadeMs;
    this.mix = target > this.mix ? Math.min(target, this.mix + step) : Math.max(target, this.mix - step);
    if (this.mix === 0 && !target) this.field = null;
    return {
      field: this.mix > 0 ? this.field : null,
      fieldAlpha: this.mix,
      boidAlpha: 1 - 0.35 * this.mix,
      boidScale: 1 - 0.35 * this.mix,
    };
  }
}
