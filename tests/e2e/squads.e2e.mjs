// End-to-end test of the viewer's squads (PROTOCOL.md §13) for an rts
// player: a real flockd, the page in headless Chromium, driven with the
// mouse and the keyboard, checked through the commands its WebSocket sends,
// the squads messages it gets and window.flockView. A box dragged around
// the team's units selects them into a squad (and pans nothing); the
// squads panel lists it with its units; a right-click moves it there,
// shift+right-click queues a waypoint, and the panel shows the order; 3
// sets a wedge, whose slots are drawn with the waypoints; S stops it, P
// then a click patrols; a click on the ground clears the selection. The
// library's player of another team sees none of it and commands its own
// squads (select by id, formation, order, its squads message); a viewer's page has
// no squads panel and its drag still pans.
//
// usage: node squads.e2e.mjs FLOCKD [BUILD_DIR]
//   screenshot: BUILD_DIR/e2e-squads.png
// Prints one line per check and last "N passed, N failed"; exits 1 on failure.

import { join } from 'node:path';
import {
  ROOT, check, assert, sleep, waitFor, finish, anyFailed, crashed, startFlockd, killServers, launchBrowser,
  view, openViewer, closingChecks, recordCommands, pointAt,
} from './harness.mjs';
import { connect } from '../../client/js/src/index.js';

const [flockdBin, buildDir = join(ROOT, 'build')] = process.argv.slice(2);

const fv = (page, what) => view(page, (w) => JSON.parse(JSON.stringify(window.flockView[w])), what);

/** The page's team's units as the newest frame holds them: [[x, y]]. */
async function teamUnits(page, team) {
  const b = await view(page, () => window.flockView.boids());
  return b.x.map((x, i) => [x, b.y[i], b.group[i]]).filter((p) => p[2] === team).map((p) => [p[0], p[1]]);
}

/** The panel's rows: [{squad, text}]. */
const panelRows = (page) => page.$$eval('#squads-list li', (lis) => lis.map((li) => ({ squad: Number(li.dataset.squad), text: li.textContent })));

async function drag(page, [x0, y0], [x1, y1], steps = 10) {
  await page.mouse.move(x0, y0);
  await page.mouse.down();
  await page.mouse.move(x1, y1, { steps });
  await page.mouse.up();
}

async function playerChecks(browser, server, consoleLog) {
  // A player of the library makes the room and has a team of its own.
  const other = await connect(server.url, { room: 'war', role: 'player', mode: 'rts', name: 'lib', protocol: 3 });
  const otherSquads = [];
  other.on('squads', (m) => otherSquads.push(m));
  const page = await openViewer(browser, `${server.url}?room=war&role=player`, consoleLog);
  const sent = recordCommands(page);
  const squadsIn = [];
  page.on('websocket', (ws) => ws.on('framereceived', (f) => {
    if (typeof f.payload === 'string' && f.payload.includes('"squads"')) squadsIn.push(JSON.parse(f.payload));
  }));
  try {
    const me = await waitFor('the team', async () => {
      const r = await fv(page, 'room');
      return r && r.room === 'war' && r.team >= 1 && !r.rejoining && r;
    }, 8000);
    const units = await waitFor('the team\'s units', async () => {
      const u = await teamUnits(page, me.team);
      return u.length >= 30 && u;
    }, 8000);
    let squad = null;
    await check('an rts player\'s page has a squads panel, empty at first', async () => {
      assert(await page.locator('#squads').isVisible(), 'panel hidden');
      const s = await fv(page, 'squads');
      assert(s.active && s.team === me.team && s.selected === null && s.rows.length === 0, JSON.stringify(s));
      assert((await page.locator('#hint').textContent()).includes('drag: select units'), 'hint');
    });
    await check('a box dragged around the team selects its units into a squad and pans nothing', async () => {
      const xs = units.map((u) => u[0]);
      const ys = units.map((u) => u[1]);
      // Units fly on while the mouse moves: a margin of two seconds' flight
      // (a loaded machine's browser takes one for the drag).
      const a = await pointAt(page, Math.max(0, Math.min(...xs) - 200), Math.max(0, Math.min(...ys) - 200));
      const b = await pointAt(page, Math.max(...xs) + 200, Math.max(...ys) + 200);
      const camera = await fv(page, 'view');
      await drag(page, [a.px, a.py], [b.px, b.py]);
      const sel = await waitFor('a select sent', () => sent.find((m) => m.cmd === 'select'), 3000);
      assert(sel.rect && sel.rect.length === 4 && sel.squad === undefined, JSON.stringify(sel));
      // The box from corner to corner, cut at the world's edges.
      const { width, height } = (await fv(page, 'welcome')).world;
      const want = [Math.max(0, a.world[0]), Math.max(0, a.world[1]), Math.min(width, b.world[0]), Math.min(height, b.world[1])];
      const [rx, ry, rw, rh] = sel.rect;
      const got = [rx, ry, rx + rw, ry + rh];
      assert(got.every((v, k) => Math.abs(v - want[k]) < 1), `rect ${sel.rect}: corners ${got}, not ${want}`);
      const s = await waitFor('the squad selected', async () => {
        const q = await fv(page, 'squads');
        return q.selected !== null && q.rows.length === 1 && q;
      }, 4000);
      squad = s.selected;
      assert(s.rows[0].squad === squad && s.rows[0].units >= units.length / 2 && s.rows[0].selected, JSON.stringify(s.rows));
      const rows = await panelRows(page);
      assert(rows.length === 1 && rows[0].squad === squad && rows[0].text.includes(`${s.rows[0].units} units`), JSON.stringify(rows));
      assert(JSON.stringify((await fv(page, 'view')).camera) === JSON.stringify(camera.camera), 'the drag panned the view');
      assert((await fv(page, 'drawn')).box === null, 'the box is still drawn');
    });
    const w = (await fv(page, 'welcome')).world;
    const cx = units.reduce((t, u) => t + u[0], 0) / units.length;
    const cy = units.reduce((t, u) => t + u[1], 0) / units.length;
    // Two points towards the middle of the world, on screen.
    const p1 = await pointAt(page, cx + (w.width / 2 - cx) * 0.5, cy + (w.height / 2 - cy) * 0.5);
    const p2 = await pointAt(page, cx + (w.width / 2 - cx) * 0.8, cy + (w.height / 2 - cy) * 0.8);
    await check('a right-click moves the squad there and the panel shows the order', async () => {
      await page.mouse.click(p1.px, p1.py, { button: 'right' });
      const o = await waitFor('a move sent', () => sent.find((m) => m.cmd === 'move'), 3000);
      assert(o.squad === squad && o.queue === undefined && o.to.length === 1
        && Math.abs(o.to[0][0] - p1.world[0]) < 1 && Math.abs(o.to[0][1] - p1.world[1]) < 1, JSON.stringify(o));
      await waitFor('the panel says move', async () => (await panelRows(page)).some((r) => r.squad === squad && r.text.includes('move')), 4000);
      assert(!sent.some((m) => m.cmd === 'obstacle_add'), 'a right-click with a squad selected placed an obstacle');
    });
    await check('shift+right-click queues a waypoint; 3 sets a wedge whose slots are drawn with the waypoints', async () => {
      await page.keyboard.down('Shift');
      await page.mouse.click(p2.px, p2.py, { button: 'right' });
      await page.keyboard.up('Shift');
      const q = await waitFor('a queued move', () => sent.find((m) => m.cmd === 'move' && m.queue === true), 3000);
      assert(q.squad === squad && Math.abs(q.to[0][0] - p2.world[0]) < 1, JSON.stringify(q));
      await page.keyboard.press('3');
      const f = await waitFor('a formation sent', () => sent.find((m) => m.cmd === 'formation'), 3000);
      assert(f.squad === squad && f.shape === 'wedge', JSON.stringify(f));
      const row = await waitFor('the panel says wedge', async () => (await panelRows(page)).find((r) => r.squad === squad && r.text.includes('wedge')), 4000);
      // A slot per unit and the waypoints ahead, as the latest squads message says.
      let e = null;
      const d = await waitFor('slots drawn', async () => {
        const x = await fv(page, 'drawn');
        e = (await fv(page, 'squads')).latest.squads.find((q) => q.squad === squad);
        return e.formation === 'wedge' && x.squadSlots === e.units && x.squadWaypoints === (e.to || []).length && x;
      }, 4000);
      assert(d.squadSlots > 0 && d.squadWaypoints > 0, `${JSON.stringify(d)} of ${JSON.stringify(e)}`);
      console.log(`     squad ${squad}: ${row.text}; ${d.squadSlots} slots and ${d.squadWaypoints} waypoints drawn`);
      await page.screenshot({ path: join(buildDir, 'e2e-squads.png') });
    });
    await check('S stops the squad; P then a click patrols there; a click on the ground clears the selection', async () => {
      await page.keyboard.press('s');
      await waitFor('a stop', () => sent.find((m) => m.cmd === 'stop' && m.squad === squad), 3000);
      await waitFor('the panel says stop', async () => (await panelRows(page)).some((r) => r.squad === squad && r.text.includes('stop')), 4000);
      await page.keyboard.press('p');
      assert((await fv(page, 'squads')).patrolArmed, 'P armed no patrol');
      await page.mouse.click(p1.px, p1.py);
      const pat = await waitFor('a patrol', () => sent.find((m) => m.cmd === 'patrol'), 3000);
      assert(pat.squad === squad && Math.abs(pat.to[0][0] - p1.world[0]) < 1, JSON.stringify(pat));
      await waitFor('the panel says patrol', async () => (await panelRows(page)).some((r) => r.squad === squad && r.text.includes('patrol')), 4000);
      const seeks = sent.filter((m) => m.cmd === 'seek').length;
      await page.mouse.click(p2.px, p2.py);
      await waitFor('the selection cleared', async () => (await fv(page, 'squads')).selected === null, 2000);
      await sleep(200);
      assert(sent.filter((m) => m.cmd === 'seek').length === seeks, 'the click that cleared the selection also sent a seek');
      assert(!(await panelRows(page)).some((r) => r.text.includes('selected')), 'no row marked');
    });
    await check('the library\'s player selects by id, sets a formation, orders and sees its squads message', async () => {
      const snap = await waitFor('its units', () => other.latest && other.latest.ids && other.latest, 4000);
      const mine = [];
      const theirs = [];
      for (let i = 0; i < snap.count; i++) (snap.group[i] === other.team ? mine : theirs).push(snap.ids[i]);
      const ack = await other.select({ ids: mine.slice(0, 10), squad: 7 });
      assert(ack.squad === 7 && ack.units === 10, JSON.stringify(ack));
      assert((await other.formation({ squad: 7, shape: 'column', spacing: 20 })).squad === 7, 'formation ack');
      await other.move({ squad: 7, to: [[w.width / 2, w.height / 2]] });
      const msg = await other.waitSquads((m) => {
        const e = m.squads.find((q) => q.squad === 7);
        return e && e.do === 'move' && e.formation === 'column';
      }, { timeoutMs: 4000 });
      const e = other.squad(7);
      assert(msg.team === other.team && e.units === 10 && e.spacing === 20, JSON.stringify(e));
      if (theirs.length) {
        const err = await other.select({ ids: [theirs[0]] }).then(() => null, (x) => x);
        assert(err && err.code === 'forbidden' && !err.local, `another team's unit: ${err}`);
      }
      const local = await other.select({ all: true, ids: [1] }).then(() => null, (x) => x); // two selections
      assert(local && local.code === 'bad_arg' && local.local, `two selections: ${local}`);
    });
    await check('the other team\'s player gets no squads message of this team, and this page none of the other\'s', async () => {
      assert(squadsIn.length > 0 && squadsIn.every((m) => m.team === me.team), JSON.stringify(squadsIn.map((m) => m.team)));
      assert(otherSquads.every((m) => m.team === other.team), JSON.stringify(otherSquads.map((m) => m.team)));
    });
  } finally {
    await page.close();
    await other.close();
  }
}

async function viewerChecks(browser, server, consoleLog) {
  const page = await openViewer(browser, `${server.url}?room=war&role=viewer`, consoleLog);
  const sent = recordCommands(page);
  try {
    await check('a viewer\'s page has no squads panel, and its drag pans and sends nothing', async () => {
      await waitFor('the room', async () => {
        const r = await fv(page, 'room');
        return r && r.room === 'war' && r.role === 'viewer' && !r.rejoining;
      }, 8000);
      await waitFor('a frame', async () => (await fv(page, 'snapshot')) !== null, 8000);
      assert(!(await page.locator('#squads').isVisible()), 'squads panel shown to a viewer');
      assert(!(await fv(page, 'squads')).active, 'squads active for a viewer');
      const before = (await fv(page, 'view')).camera;
      const b = await page.locator('#view').boundingBox();
      await drag(page, [b.x + b.width / 2 + 100, b.y + b.height / 2 + 60], [b.x + b.width / 2 - 100, b.y + b.height / 2 - 60]);
      await sleep(200);
      const after = (await fv(page, 'view')).camera;
      assert(JSON.stringify(before) !== JSON.stringify(after), 'the drag did not pan');
      assert(!sent.some((m) => m.cmd === 'select'), 'a viewer sent a select');
    });
  } finally {
    await page.close();
  }
}

async function main() {
  const browser = await launchBrowser(flockdBin, 'node squads.e2e.mjs FLOCKD [BUILD_DIR]');
  const consoleLog = [];
  consoleLog.phase = 'main';
  const server = await startFlockd(flockdBin, ['--boids', '0', '--tick-hz', '30', '--seed', '5']);
  try {
    await playerChecks(browser, server, consoleLog);
    await viewerChecks(browser, server, consoleLog);
    await closingChecks(consoleLog, [{ name: 'flockd', server }]);
  } finally {
    await browser.close();
    killServers();
  }
  finish(anyFailed() ? 1 : 0);
}

main().catch(crashed);
