// The bar a room that plays a recording shows (the welcome's `replay`,
// PROTOCOL.md §6.1): where the playback is, and going to a tick with the
// slider or the tick box (the `goto` command, §5.4). Pause, resume and
// step are the usual buttons. Hidden in a live room.
//
// DOM only through the elements handed in; commands go out through `send`.

/** Clamps a wanted tick into the recording's [first, last], whole. */
export function gotoTick(value, replay) {
  const t = Math.round(Number(value));
  if (!Number.isFinite(t)) return replay.first_tick;
  return Math.min(replay.last_tick, Math.max(replay.first_tick, t));
}

export class ReplayBar {
  /**
   * `els`: {section, slider, tick, go, range}; `send(cmd, args)` sends a
   * command.
   */
  constructor(els, send) {
    this.els = els;
    this.send = send;
    this.replay = null;
    this.dragging = false;
    // A tick typed in the box and not sent yet: the playback does not
    // overwrite it, even once the box loses focus to the Go button.
    this.typed = false;
    els.slider.addEventListener('input', () => {
      this.dragging = true;
      els.tick.value = els.slider.value;
    });
    els.slider.addEventListener('change', () => {
      this.dragging = false;
      this.go(els.slider.value);
    });
    els.go.addEventListener('click', () => this.go(els.tick.value));
    els.tick.addEventListener('input', () => {
      this.typed = true;
    });
    els.tick.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') this.go(els.tick.value);
    });
  }

  /** Shows the bar for welcome member `replay` ({first_tick, last_tick}), or hides it (null). */
  show(replay) {
    this.replay = replay && Number.isInteger(replay.first_tick) && Number.isInteger(replay.last_tick) ? replay : null;
    const { section, slider, tick, range } = this.els;
    section.hidden = !this.replay;
    if (!this.replay) return;
    for (const el of [slider, tick]) {
      el.min = this.replay.first_tick;
      el.max = this.replay.last_tick;
    }
    range.textContent = `ticks ${this.replay.first_tick}–${this.replay.last_tick}`;
  }

  /**
   * Follows the playback: the newest snapshot's tick (not while the slider
   * is held; the tick box neither while it has focus nor while it holds a
   * tick typed and not sent).
   */
  update(tick) {
    if (!this.replay || this.dragging) return;
    this.els.slider.value = tick;
    if (document.activeElement !== this.els.tick && !this.typed) this.els.tick.value = tick;
  }

  /** Sends goto for `value`, clamped into the recording. */
  go(value) {
    if (!this.replay) return;
    this.typed = false;
    this.send('goto', { tick: gotoTick(value, this.replay) });
  }
}
