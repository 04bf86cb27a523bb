// The room's player list from `roster` messages (PROTOCOL.md §6.4): one
// line per player or admin with a swatch in its team's colour (the colour
// the renderer draws that group in), its name, its role, and "(left)" for
// an RTS team whose player is gone but may still rejoin; a long list ends
// with how many it leaves out. Viewers are only counted. Shows; sends
// nothing.

import { groupColor } from './render2d.js';

/**
 * The lines roster `msg` shows, in its order: {client, team, color, label,
 * role, left, you}; `self` is this page's client id. color is null for a
 * player without a team (sandbox rooms, admins).
 */
export function rosterRows(msg, self) {
  const players = Array.isArray(msg.players) ? msg.players : [];
  return players.map((p) => {
    const team = Number.isInteger(p.team) ? p.team : null;
    const fallback = p.client ? `client ${p.client}` : `team ${team}`;
    return {
      client: p.client,
      team,
      color: team === null ? null : groupColor(team),
      label: typeof p.name === 'string' && p.name ? p.name : fallback,
      role: typeof p.role === 'string' ? p.role : 'player',
      left: p.connected === false,
      you: self !== null && self !== undefined && p.client === self && p.connected !== false,
    };
  });
}

/** "3 viewers" and the like for the list's heading. */
export function viewersText(n) {
  const k = Number.isInteger(n) ? n : 0;
  return `${k} viewer${k === 1 ? '' : 's'}`;
}

/** The line under a roster cut short: "and 5 more", or null when it lists everyone. */
export function moreText(more) {
  return Number.isInteger(more) && more > 0 ? `and ${more} more` : null;
}

export class RosterList {
  /** `list`: the <ul> to fill; `count`: the element that shows the viewer count. */
  constructor(list, count) {
    this.list = list;
    this.count = count;
    this.last = null; // the latest roster message
  }

  /** Shows roster `msg` with this page's own line marked (`self`: its client id). */
  show(msg, self) {
    this.last = msg;
    this.count.textContent = viewersText(msg.viewers);
    this.list.replaceChildren(...rosterRows(msg, self).map((r) => this.line(r)));
    const more = moreText(msg.more);
    if (more) {
      const li = document.createElement('li');
      li.className = 'more';
      li.textContent = more;
      this.list.append(li);
    }
  }

  line(r) {
    const li = document.createElement('li');
    li.dataset.client = r.client;
    if (r.team !== null) li.dataset.team = r.team;
    const swatch = document.createElement('span');
    swatch.className = r.color ? 'swatch' : 'swatch none';
    if (r.color) swatch.style.background = r.color;
    const name = document.createElement('span');
    name.className = 'who';
    name.textContent = r.label + (r.you ? ' (you)' : '');
    const role = document.createElement('span');
    role.className = 'role';
    role.textContent = (r.team !== null ? `team ${r.team} · ` : '') + r.role + (r.left ? ' (left)' : '');
    li.append(swatch, name, role);
    if (r.left) li.classList.add('left');
    return li;
  }

  clear() {
    this.last = null;
    this.count.textContent = '';
    this.list.replaceChildren();
  }
}
