// The rooms panel: while open it fetches GET /api/rooms (PROTOCOL.md §10)
// every couple of seconds and lists each room's mode, players, viewers,
// boids, whether players need a password and, on a node of a cluster, the
// node that ticks it (the column shows only then), with buttons to join as
// viewer, player or admin; a form creates a room. Joining is the caller's
// business: the panel hands onJoin({room, role, mode?, password?, token?,
// name}) what the user asked for and never touches the connection.

import { ROLES } from './roles.js';
import { validRoomName } from './session.js';

const POLL_MS = 2000;

/** The cells of one room's row: [name, mode, players, viewers, boids, password, node]. */
export function roomCells(r) {
  const n = (v) => (Number.isFinite(v) ? String(v) : '–');
  const admins = Number.isFinite(r.admins) && r.admins > 0 ? ` + ${r.admins} admin` : '';
  return [String(r.name), String(r.mode), n(r.players) + admins, n(r.viewers), n(r.boids), r.password ? 'yes' : 'no',
    typeof r.node === 'string' ? r.node : ''];
}

async function loadRooms() {
  const res = await fetch('/api/rooms', { cache: 'no-store' });
  if (!res.ok) throw new Error(`HTTP ${res.status}`);
  return res.json();
}

export class Lobby {
  /**
   * `root`: the panel (index.html's #lobby); `onJoin(req)`: the user asked
   * to join; `load()`: resolves to the room list (default: GET /api/rooms).
   */
  constructor(root, { onJoin, load = loadRooms }) {
    this.root = root;
    this.onJoin = onJoin;
    this.load = load;
    this.timer = null;
    this.rows = new Map(); // room name -> <tr>
    this.current = null; // the room this page is in
    this.$ = (sel) => root.querySelector(sel);
    this.$('#lobby-close').addEventListener('click', () => this.close());
    this.$('#create-room').addEventListener('submit', (e) => {
      e.preventDefault();
      this.create();
    });
  }

  get isOpen() {
    return !this.root.hidden;
  }

  open() {
    if (this.isOpen) return;
    this.root.hidden = false;
    this.refresh();
    this.timer = setInterval(() => this.refresh(), POLL_MS);
  }

  close() {
    this.root.hidden = true;
    clearInterval(this.timer);
    this.timer = null;
  }

  toggle() {
    if (this.isOpen) this.close();
    else this.open();
  }

  async refresh() {
    let data;
    try {
      data = await this.load();
    } catch (e) {
      this.status(`room list unavailable: ${e.message}`);
      return;
    }
    if (!this.isOpen) return;
    this.show(data);
  }

  status(text) {
    this.$('#lobby-status').textContent = text;
  }

  /** Shows room list `data` ({rooms, max_rooms, create}), updating rows in place. */
  show(data) {
    const rooms = Array.isArray(data.rooms) ? data.rooms : [];
    const body = this.$('#room-list tbody');
    const seen = new Set();
    this.$('#room-list').classList.toggle('cluster', rooms.some((r) => typeof r.node === 'string'));
    rooms.forEach((r, i) => {
      seen.add(r.name);
      const tr = this.rows.get(r.name) || this.row(r.name);
      roomCells(r).forEach((text, k) => { tr.cells[k].textContent = text; });
      tr.classList.toggle('here', r.name === this.current);
      // The server's order; rows already in place are not moved (a click may be on its way).
      if (body.children[i] !== tr) body.insertBefore(tr, body.children[i] || null);
    });
    for (const [name, tr] of this.rows) {
      if (seen.has(name)) continue;
      tr.remove();
      this.rows.delete(name);
    }
    const full = Number.isFinite(data.max_rooms) && rooms.length >= data.max_rooms;
    const canCreate = data.create !== false && !full;
    this.$('#create-room button').disabled = !canCreate;
    this.status(`${rooms.length} room${rooms.length === 1 ? '' : 's'}` +
      (canCreate ? '' : data.create === false ? ' · creating rooms is off' : ' · no room left to create'));
  }

  row(name) {
    const tr = document.createElement('tr');
    tr.dataset.room = name;
    for (let i = 0; i < 7; i++) tr.insertCell();
    tr.cells[6].className = 'node';
    const join = tr.insertCell();
    join.className = 'join';
    for (const role of ROLES) {
      const b = document.createElement('button');
      b.type = 'button';
      b.dataset.role = role;
      b.textContent = role;
      b.title = `join ${name} as ${role}`;
      b.addEventListener('click', () => this.join({ room: name, role }));
      join.append(b);
    }
    this.rows.set(name, tr);
    return tr;
  }

  /** Marks the row of `room`, the room this page is now in. */
  setCurrent(room) {
    this.current = room;
    for (const [name, tr] of this.rows) tr.classList.toggle('here', name === room);
  }

  join(req) {
    const full = { ...req, name: this.$('#join-name').value.trim() };
    if (req.role === 'player' && !full.password) full.password = this.$('#join-password').value;
    if (req.role === 'admin') full.token = this.$('#join-token').value;
    this.onJoin(full);
  }

  create() {
    const room = this.$('#create-name').value.trim();
    if (!validRoomName(room)) {
      this.status('a room name is 1 to 32 letters, digits, _ or -');
      return;
    }
    const mode = this.$('#create-mode').value;
    this.join({ room, role: 'player', mode, password: this.$('#create-password').value });
  }

  /** Puts the caret in the admin token box (after a refused admin join). */
  askToken() {
    this.open();
    this.$('#join-token').focus();
  }

  /** Sets the name box (the name kept from an earlier join). */
  setName(name) {
    this.$('#join-name').value = name;
  }
}
