// window.flockView: a read-only summary of the viewer's state for tests and
// the browser console: connection, welcome, room and role, roster, newest
// snapshot (copied), the boids as the last frame drew them, frame and
// stream counters, version 3's view, budget, level of detail, fog, the
// followed boid and the minimap, an rts player's squads, a scripted room's game
// panel, and world <-> page coordinate
// conversion. Getters return copies; nothing here changes the viewer.

import { groupCounts } from '../lib/snapshot.js';

// Version 3's own header fields and its parts' count and fields.
function v3Summary(s) {
  return {
    version: 3, fogged: s.fogged, delayed: s.delayed, shift: s.shift, sample: s.sample, seq: s.seq, roomBoids: s.roomBoids,
    rect: [s.rect.x, s.rect.y, s.rect.cols, s.rect.rows], parts: s.parts.length,
    fields: s.parts.filter((p) => p.field).length,
  };
}

function summary(s) {
  if (!s) return null;
  return {
    version: s.version, tick: s.tick, epoch: s.epoch, serverTimeUs: s.serverTimeUs, paused: s.paused, wrap: s.wrap,
    width: s.width, height: s.height, boidCount: s.boidCount,
    runs: (s.runs || groupCounts(s.group)).map((r) => ({ ...r })),
    obstacles: s.obstacles.map((o) => ({ ...o })),
    targets: s.targets.map((t) => ({ ...t })),
    ...(s.version === 3 ? v3Summary(s) : {}),
  };
}

/**
 * The view over the viewer's state that main.js installs as
 * window.flockView. `src` holds the live objects: {app, conn, camera,
 * canvas, renderer, playout, skips, session, roster, snapshotStats(),
 * frameStats()}.
 */
export function makeFlockView(src) {
  const {
    app, conn, camera, canvas, renderer, playout, skips, session, roster, snapshotStats, frameStats,
    budget, viewSender, minimap, minimapFeed, intro, currentView, squadUi, gamePanel,
  } = src;
  const clientRect = () => canvas.getBoundingClientRect();
  return Object.freeze({
    get connected() { return conn.open; },
    get connection() { return conn.state; },
    /**
     * An rts player's squads (§13): {active, team, selected, patrolArmed,
     * latest: the team's latest squads message or null, rows: the panel's}.
     */
    get squads() {
      return {
        active: squadUi.active, team: squadUi.team, selected: squadUi.selected, patrolArmed: squadUi.patrolArmed,
        latest: squadUi.msg ? JSON.parse(JSON.stringify(squadUi.msg)) : null, rows: squadUi.rows(),
      };
    },
    /** A scripted room's game panel (§14): {active, model: what it shows (gameui.js), or null}. */
    get game() {
      return { active: gamePanel.active, model: gamePanel.active ? gamePanel.model() : null };
    },
    get welcome() { return app.welcome ? JSON.parse(JSON.stringify(app.welcome)) : null; },
    /** {room, mode, role, team, client, rejoining}, or null before the first welcome. */
    get room() { return session.here ? { ...session.here, rejoining: session.rejoining } : null; },
    /** What the page's role may do here: roles.js permissions (replayPermissions in a recording). */
    get permissions() { return { ...app.perm }; },
    /** Why the room cannot be reached now (§6.6), or null while it is available. */
    get unavailable() { return app.unavailable; },
    /** The room's latest roster message (§6.4), or null. */
    get roster() { return roster.last ? JSON.parse(JSON.stringify(roster.last)) : null; },
    get snapshot() { return summary(app.latest); },
    /** The newest snapshot's boids: {x, y, heading, group, and in version 3 id} as plain arrays. */
    boids() {
      const s = app.latest;
      if (!s) return null;
      const out = { x: Array.from(s.x), y: Array.from(s.y), heading: Array.from(s.heading), group: Array.from(s.group) };
      if (s.id) out.id = Array.from(s.id);
      return out;
    },
    /** Version 3: [x, y, angle] of the boid with id `id` as the last frame drew it, or null. */
    drawnBoidById(id) {
      const f = app.frame;
      if (!f || !f.id) return null;
      for (let i = 0; i < f.count; i++) if (f.id[i] === id) return [f.x[i], f.y[i], f.angle[i]];
      return null;
    },
    /**
     * Version 3: the latest view's ack, the view the camera shows now, the
     * last one sent (with its budget) and when the last 32 were sent
     * (performance.now()).
     */
    get view() {
      return {
        ack: app.viewAck ? { ...app.viewAck } : null, camera: currentView(), sent: viewSender.sent ? { ...viewSender.sent } : null,
        sentTimes: [...viewSender.times],
      };
    },
    /**
     * Version 3: the budget the page asks for and what it measured it can
     * take (bytes per second), what lowered that last, and how late the
     * last second's frames came (ms, Playout.lateness()).
     */
    get budget() {
      return { bytes: budget.budget, limit: budget.limit, why: budget.why, lateMs: playout.lateness(performance.now()) };
    },
    /** What the last frame drew: the level of detail's sample and blend, field cells, fog, squads' slots and waypoints, the box dragged. */
    get drawn() {
      return {
        ...app.lod, fieldCells: renderer.fieldCells, fogged: renderer.fogged, fogUnits: app.fogUnits, boids: renderer.drawn,
        squadSlots: renderer.squadSlots, squadWaypoints: renderer.squadWaypoints, box: app.squadBox ? [...app.squadBox] : null,
      };
    },
    /** The followed boid's id (version 3), or null. */
    get followId() { return app.followId; },
    get minimap() {
      const r = minimap.canvas.getBoundingClientRect();
      return { source: minimap.source, ownConnection: minimapFeed.open, drawnBoids: minimap.drawnBoids,
        delayed: minimap.delayed, rect: [r.left, r.top, r.width, r.height] };
    },
    /** Whether the first visit's line is shown. */
    get intro() { return !intro.el.hidden; },
    /** The first n boid positions the last frame drew. */
    drawnPositions(n = 16) {
      const f = app.frame;
      if (!f) return [];
      return Array.from({ length: Math.min(n, f.count) }, (_, i) => [f.x[i], f.y[i], f.angle[i]]);
    },
    /** [x, y, angle] of boid i as the last frame drew it, or null. */
    drawnBoid(i) {
      const f = app.frame;
      return f && i >= 0 && i < f.count ? [f.x[i], f.y[i], f.angle[i]] : null;
    },
    get frames() {
      const fr = app.frames;
      return { count: fr.count, workMs: fr.workMs, lastWorkMs: fr.lastWorkMs, intervals: fr.intervals,
        intervalMs: fr.intervalMs, drawnBoids: renderer.drawn, playoutHolds: playout.holds, ...frameStats() };
    },
    get stats() {
      return { ...snapshotStats(), rttMs: app.rttMs, framesSkipped: skips.skipped, tickMs: app.tickMs,
        flock: app.flock, decodeCount: app.decode.count, decodeMsTotal: app.decode.totalMs,
        acks: app.acks, errors: app.errors, badSnapshots: app.badSnapshots, protocol: conn.version, framesDropped: app.framesDropped,
        wireBytes: app.wire.bytes, wireBoids: app.wire.boids, keyframesAsked: app.keyframes.asked,
        hashMismatches: app.keyframes.hashMismatches };
    },
    get lastError() { return app.lastError ? { ...app.lastError } : null; },
    get group() { return app.group; },
    get highlight() { return app.highlight; },
    get follow() { return app.follow; },
    get obstacleRadius() { return app.radius; },
    /** Page (client) coordinates of world point (x, y). */
    worldToClient(x, y) {
      const [sx, sy] = camera.worldToScreen(x, y);
      const r = clientRect();
      return [r.left + sx, r.top + sy];
    },
    /** World point under page (client) coordinates (cx, cy). */
    clientToWorld(cx, cy) {
      const r = clientRect();
      return camera.screenToWorld(cx - r.left, cy - r.top);
    },
  });
}
