// What a role may do in a room (PROTOCOL.md §5.6, the permission table),
// turned into what the page offers: which controls are enabled, what a
// click on the world sends, what the hint line says. Pure: no DOM, no
// connection; the server still decides, this only keeps the page from
// offering what it would refuse.

export const ROLES = ['viewer', 'player', 'admin'];

/**
 * {role, mode, team, seek, obstacles, admin, playback}: `seek` is 'any'
 * (every group), 'team' (only group `team`) or 'none'; `obstacles` whether
 * it may add and remove obstacles (the server still checks whose they
 * are); `admin` whether it may use the room-wide commands (params, reset,
 * spawn, obstacle_clear); `playback` whether it may pause, resume and step
 * (and in a recording, goto). An unknown role gets a viewer's rights.
 */
export function permissions(role, mode, team = null) {
  const p = { role, mode, team: null, seek: 'none', obstacles: false, admin: false, playback: false };
  if (role === 'admin') return { ...p, seek: 'any', obstacles: true, admin: true, playback: true };
  if (role !== 'player') return p;
  if (mode === 'rts') {
    // An RTS player without a team (should not happen) steers nothing.
    const owns = Number.isInteger(team) && team >= 0;
    return { ...p, team: owns ? team : null, seek: owns ? 'team' : 'none', obstacles: true };
  }
  return { ...p, seek: 'any', obstacles: true };
}

/**
 * What `perm` may do in a room that plays a recording (the welcome's
 * `replay`): watch, and with a playback right pause, resume, step and go
 * to a tick; nothing that would change the world.
 */
export function replayPermissions(perm) {
  return { ...perm, seek: 'none', obstacles: false, admin: false, replay: true };
}

// index.html's control ids and the right each needs; controls not listed
// (fit view, follow, the lobby) only change this page's view.
const NEEDS = {
  'btn-pause': 'playback',
  'btn-resume': 'playback',
  'btn-step': 'playback',
  'replay-tick': 'playback',
  'replay-goto': 'playback',
  'btn-reset': 'admin',
  'btn-spawn': 'admin',
  'spawn-n': 'admin',
  'btn-clear-obstacles': 'admin',
  'params-all': 'admin',
  group: 'pickGroup',
  'btn-clear-target': 'seek',
  radius: 'obstacles',
};

function has(perm, need) {
  if (need === 'admin') return perm.admin;
  if (need === 'playback') return perm.playback;
  if (need === 'obstacles') return perm.obstacles;
  if (need === 'seek') return perm.seek !== 'none';
  return perm.seek === 'any'; // pickGroup: an RTS player's group is its team
}

/** {controlId: enabled} for every control that needs a right. */
export function controlStates(perm) {
  return Object.fromEntries(Object.entries(NEEDS).map(([id, need]) => [id, has(perm, need)]));
}

/** The group `perm` steers when `selected` is picked in the group box. */
export function steeredGroup(perm, selected) {
  return perm.seek === 'team' ? perm.team : selected;
}

/**
 * The command a click at world (x, y) sends, {cmd, args}, or null when the
 * role may not do what the click means. `hit`: the obstacle under the
 * click or null; `place`: shift- or right-click (an obstacle);
 * `group`: the selected group; `radius`: the obstacle radius.
 */
export function clickCommand(perm, { hit, place, x, y, group, radius }) {
  if (hit) return perm.obstacles ? { cmd: 'obstacle_remove', args: { obstacle: hit.id } } : null;
  if (place) return perm.obstacles ? { cmd: 'obstacle_add', args: { x, y, r: radius } } : null;
  if (perm.seek === 'none') return null;
  return { cmd: 'seek', args: { group: steeredGroup(perm, group), x, y } };
}

const VIEW_HINT = 'alt-click or long-press: follow a boid · drag: pan · wheel or pinch: zoom · F: fit';

/** The line of help under the canvas for `perm`. */
export function hintFor(perm) {
  if (perm.replay) {
    const keys = perm.playback ? ' · space: pause/resume · S: step' : '';
    return `playing a recording · ${VIEW_HINT}${keys}`;
  }
  if (perm.admin) {
    return 'click: seek target of the group · shift-click or right-click: obstacle · ' +
      `click an obstacle: remove it · ${VIEW_HINT} · space: pause/resume · S: step`;
  }
  if (perm.seek === 'none') return `viewing only · ${VIEW_HINT}`;
  if (perm.seek === 'team') {
    return 'drag: select units into a squad · right-click: move it (shift: queue) · 1 line, 2 column, 3 wedge, '
      + '4 box, 0 none · S: stop · H: hold · P, click: patrol · click: deselect, or seek with your team '
      + `(group ${perm.team}) · shift-click: obstacle · right-drag: pan · wheel: zoom`;
  }
  return `click: seek target of the group · shift-click or right-click: obstacle · click your obstacle: remove it · ${VIEW_HINT}`;
}
