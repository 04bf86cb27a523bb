// The game panel of a room that runs a script (PROTOCOL.md §14): what the
// script published last, shown without knowing the game. The keys every
// game may use (§14.4) have their places: `phase` the title, `winner` a
// banner once the phase is `ended`, `actions` buttons (each sends
// {"cmd":"game","action":NAME}), `message` a line of text, `ready` a list;
// every other key is a row, a number-valued object (or list of numbers:
// §14.4's by-team lists, indexed by team - 1) a small table, anything
// else nested compact JSON. The room-wide state comes first, then each
// team's kept (a player's own, an admin's every team's); an admin also
// sees the script's status (disabled, and why). Pure: no DOM, no
// connection; main.js draws the model and sends the actions.

const SHOWN_APART = new Set(['phase', 'winner', 'actions', 'message']);
const JSON_CHARS_MAX = 80; // nested JSON longer than this is cut, with an ellipsis

/** One value as a row shows it: strings as they are, objects as compact JSON. */
export function valueText(v) {
  if (v === null || v === undefined) return '–';
  if (typeof v === 'string') return v;
  if (typeof v !== 'object') return String(v);
  const text = JSON.stringify(v);
  return text.length > JSON_CHARS_MAX ? `${text.slice(0, JSON_CHARS_MAX - 1)}…` : text;
}

/** A number-valued object or list as table columns [{head, value}], or null. */
export function numberColumns(v) {
  if (v === null || typeof v !== 'object') return null;
  const entries = Array.isArray(v) ? v.map((n, i) => [String(i + 1), n]) : Object.entries(v);
  if (entries.length === 0 || !entries.every(([, n]) => typeof n === 'number')) return null;
  return entries.map(([head, value]) => ({ head, value: String(value) }));
}

/** The banner of an ended match: "Team 3 wins", "Red wins", "No winner"; else null. */
export function winnerText(state) {
  if (state.phase !== 'ended') return null;
  const w = state.winner;
  if (typeof w === 'number') return `Team ${w} wins`;
  if (typeof w === 'string' && w !== '') return `${w} wins`;
  return 'No winner';
}

// `ready` lists teams or names: a list, never a table.
function readyText(v) {
  const list = Array.isArray(v) ? v : [];
  return list.length ? list.join(', ') : 'none';
}

/**
 * The model of one state (§14.4): {title, banner, message, actions,
 * rows: [{key, text}], tables: [{key, columns: [{head, value}]}]}. A row's
 * and a table's key reads with spaces for underscores.
 */
export function stateModel(state) {
  const s = state !== null && typeof state === 'object' && !Array.isArray(state) ? state : {};
  const rows = [];
  const tables = [];
  for (const [key, v] of Object.entries(s)) {
    if (SHOWN_APART.has(key)) continue;
    const label = key.replace(/_/g, ' ');
    const columns = key === 'ready' ? null : numberColumns(v);
    if (columns) tables.push({ key: label, columns });
    else rows.push({ key: label, text: key === 'ready' ? readyText(v) : valueText(v) });
  }
  return {
    title: typeof s.phase === 'string' ? s.phase : '',
    banner: winnerText(s),
    message: typeof s.message === 'string' ? s.message : '',
    actions: Array.isArray(s.actions) ? s.actions.filter((a) => typeof a === 'string' && a !== '') : [],
    rows,
    tables,
  };
}

/** The script's status as an admin's line: {text, disabled}, or null when there is nothing to say. */
export function scriptLine(msg) {
  if (!msg) return null;
  const why = msg.reason ? `: ${msg.reason}` : '';
  if (msg.status === 'disabled') return { text: `${msg.name ? `script ${msg.name}` : 'script'} disabled${why}`, disabled: true };
  if (msg.status === 'reloaded') return { text: `script reloaded (${msg.hash || '?'})`, disabled: false };
  if (msg.reason) return { text: `script still runs; reload failed${why}`, disabled: false };
  return null;
}

export class GamePanel {
  constructor() {
    this.reset(null);
  }

  /** A new room: `script` is its welcome's script ({name, hash}) or null (no panel). */
  reset(script) {
    this.script = script && typeof script === 'object' ? script : null;
    this.room = null; // the latest room-wide game message
    this.teams = new Map(); // team -> its latest game message
    this.status = null; // the latest script message
  }

  /** Whether the room runs a script: the panel is shown. */
  get active() {
    return this.script !== null;
  }

  /** A game message (§14.4); kept unless older than the one kept. Returns whether it was. */
  take(msg) {
    if (!this.active || !msg || msg.state === null || typeof msg.state !== 'object') return false;
    const team = Number.isInteger(msg.team) ? msg.team : null;
    const kept = team === null ? this.room : this.teams.get(team);
    if (kept && msg.tick < kept.tick) return false;
    if (team === null) this.room = msg;
    else this.teams.set(team, msg);
    return true;
  }

  /** A script message (§14.5, admins). Returns whether it was kept. */
  takeScript(msg) {
    if (!this.active || !msg) return false;
    this.status = msg;
    return true;
  }

  /** The action's command for a button. */
  static action(name) {
    return { cmd: 'game', args: { action: name } };
  }

  /**
   * What the panel shows: {name, room: a stateModel or null, teams:
   * [{team, ...stateModel}] by team, script: scriptLine or null}.
   */
  model() {
    const teams = [...this.teams.keys()].sort((a, b) => a - b)
      .map((team) => ({ team, ...stateModel(this.teams.get(team).state) }));
    return {
      name: this.script ? this.script.name : '',
      room: this.room ? stateModel(this.room.state) : null,
      teams,
      script: scriptLine(this.status),
    };
  }
}
