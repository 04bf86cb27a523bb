// An rts player's squads in the viewer (PROTOCOL.md §13): what a dragged
// box, a click on the ground, a right-click and the keys mean (the
// commands to send), which squad is selected on this page, the rows of
// the squads panel and what to draw over the world (each squad's
// waypoints and formation slots, from its team's latest `squads` message
// and §13.3's layout). Only the page's own team's squads are kept. Pure:
// no DOM, no connection; main.js sends what it returns.

import { entrySlots } from '../lib/squads.js';

/** Keys that set the selected squad's formation. */
export const FORMATION_KEYS = Object.freeze({
  1: 'line', 2: 'column', 3: 'wedge', 4: 'box', 0: 'none',
});

const ORDER_KEYS = Object.freeze({ s: 'stop', h: 'hold' }); // key -> the order's command

export class SquadControl {
  constructor() {
    this.reset(null);
  }

  /** A new room or role: `team` is the rts player's team, or null (no squads here). */
  reset(team) {
    this.team = Number.isInteger(team) ? team : null;
    this.msg = null; // the team's latest squads message
    this.selected = null; // the squad this page steers, or null
    this.patrolArmed = false; // P was pressed: the next click patrols there
  }

  /** Whether this page steers squads (an rts player with a team). */
  get active() {
    return this.team !== null;
  }

  /** A squads message (§13.5); kept if it is the team's. Returns whether it was. */
  take(msg) {
    if (!this.active || !msg || msg.team !== this.team || !Array.isArray(msg.squads)) return false;
    if (this.msg && msg.tick < this.msg.tick) return false;
    this.msg = msg;
    if (this.selected !== null && !this.entry(this.selected)) this.selected = null; // it ended
    return true;
  }

  /** Squad n's entry in the latest message, or null. */
  entry(n) {
    return (this.msg && this.msg.squads.find((e) => e.squad === n)) || null;
  }

  /** A command's ack: a select names the squad its units went into, now selected. */
  acked(cmd, ack) {
    if (cmd === 'select' && Number.isInteger(ack.squad) && ack.squad > 0) this.selected = ack.squad;
  }

  /**
   * A box dragged from world (x0, y0) to (x1, y1) in a world of w x h: the
   * select of its units into a new squad, or null when it has no area.
   */
  boxSelect(x0, y0, x1, y1, w, h) {
    if (!this.active) return null;
    const left = Math.max(0, Math.min(x0, x1));
    const top = Math.max(0, Math.min(y0, y1));
    const right = Math.min(w, Math.max(x0, x1));
    const bottom = Math.min(h, Math.max(y0, y1));
    if (right - left <= 0 || bottom - top <= 0) return null;
    return { cmd: 'select', args: { rect: [left, top, right - left, bottom - top] } };
  }

  /**
   * A left click on the ground at world (x, y): with P pressed before, the
   * selected squad's patrol there; else the local selection is cleared
   * (returns null: nothing to send).
   */
  groundClick(x, y) {
    if (this.patrolArmed) return this.pointOrder(x, y, false);
    this.selected = null;
    return null;
  }

  /** A right-click at world (x, y): the selected squad's move there (shift: queued), or a patrol after P. */
  pointOrder(x, y, queue) {
    if (!this.active || this.selected === null) return null;
    if (this.patrolArmed) {
      this.patrolArmed = false;
      return { cmd: 'patrol', args: { squad: this.selected, to: [[x, y]] } };
    }
    const args = { squad: this.selected, to: [[x, y]] };
    if (queue) args.queue = true;
    return { cmd: 'move', args };
  }

  /**
   * A key pressed (lower case): the command it sends for the selected
   * squad, {arm: 'patrol'} for P, or null when the key means nothing here.
   */
  key(k) {
    if (!this.active || this.selected === null) return null;
    if (k in FORMATION_KEYS) return { cmd: 'formation', args: { squad: this.selected, shape: FORMATION_KEYS[k] } };
    if (k in ORDER_KEYS) return { cmd: ORDER_KEYS[k], args: { squad: this.selected } };
    if (k === 'p') {
      this.patrolArmed = true;
      return { arm: 'patrol' };
    }
    if (k === 'escape' && this.patrolArmed) {
      this.patrolArmed = false;
      return { arm: null };
    }
    return null;
  }

  /** Selects squad n (a click on its row) if it has units. */
  select(n) {
    if (this.entry(n)) this.selected = n;
  }

  /** The squads panel's rows: {squad, units, order, formation, waypoints, selected}. */
  rows() {
    if (!this.msg) return [];
    return this.msg.squads.map((e) => ({
      squad: e.squad,
      units: e.units,
      order: orderText(e),
      formation: e.formation,
      waypoints: Array.isArray(e.to) ? e.to.length : 0,
      selected: e.squad === this.selected,
    }));
  }

  /** What to draw: per squad {squad, selected, anchor, to: [[x, y]], slots: [[x, y]]} in world units. */
  overlay() {
    if (!this.msg) return [];
    return this.msg.squads.map((e) => ({
      squad: e.squad,
      selected: e.squad === this.selected,
      anchor: e.anchor,
      to: Array.isArray(e.to) ? e.to : [],
      slots: entrySlots(e),
    }));
  }
}

/** An order as the panel says it: 'move (2 waypoints)', 'follow squad 3', 'hold'. */
export function orderText(e) {
  const n = Array.isArray(e.to) ? e.to.length : 0;
  if (e.do === 'move' || e.do === 'patrol') return `${e.do} (${n} waypoint${n === 1 ? '' : 's'})`;
  if (e.do === 'follow') return e.squad_of !== undefined ? `follow squad ${e.squad_of}` : `follow unit ${e.unit}`;
  return e.do;
}
