// The line a first-time visitor sees over the view: what this is and what
// to try, with a button that dismisses it for good (remembered in
// localStorage). Takes its element and storage from the page.

export const INTRO_KEY = 'flockd.intro.dismissed';

export const INTRO_TEXT = 'A flock of boids simulated live by flockd; everyone here sees the same one. '
  + 'Drag to pan, scroll or pinch to zoom (far out: how dense the flock is and where it flies), '
  + 'alt-click or long-press a boid to follow it, click the minimap to jump.';

export class Intro {
  /** `el`: the line's container (its text and a close button are made here); `storage`: localStorage. */
  constructor(el, storage) {
    this.el = el;
    this.storage = storage;
    const text = document.createElement('span');
    text.textContent = INTRO_TEXT;
    const close = document.createElement('button');
    close.type = 'button';
    close.id = 'intro-close';
    close.textContent = '×';
    close.title = 'Dismiss';
    close.setAttribute('aria-label', 'Dismiss');
    close.addEventListener('click', () => this.dismiss());
    el.replaceChildren(text, close);
    el.hidden = this.dismissed;
  }

  get dismissed() {
    try {
      return this.storage.getItem(INTRO_KEY) === '1';
    } catch {
      return false; // storage refused (private mode): show it
    }
  }

  dismiss() {
    this.el.hidden = true;
    try {
      this.storage.setItem(INTRO_KEY, '1');
    } catch {
      // not remembered: it shows again next time
    }
  }
}
