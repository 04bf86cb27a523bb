// End-to-end test of rooms in the browser viewer: a real flockd with an
// admin token (so a loopback page is not an admin by default), the page in
// headless Chromium, and checks through the rooms panel, the player list,
// the controls and the mouse (PROTOCOL.md §5.6, §6.4, §10). What the page
// sends is read off its WebSocket, what the room does off window.flockView.
//
// usage: node lobby.e2e.mjs FLOCKD [BUILD_DIR]
//   screenshot: BUILD_DIR/e2e-lobby.png
//   browser:    $CHROMIUM, else /usr/bin/chromium
// Prints one line per check and last "N passed, N failed"; exits 1 on failure.

import { join } from 'node:path';
import {
  ROOT, check, assert, sleep, waitFor, finish, anyFailed, crashed, startFlockd, killServers, launchBrowser,
  view, openViewer, pointAt, sameF32, VIEWPORT, closingChecks, recordCommands,
} from './harness.mjs';
import { groupColor } from '../../client/web/js/render2d.js';
import { roomCells } from '../../client/web/js/lobby.js';

const [flockdBin, buildDir = join(ROOT, 'build')] = process.argv.slice(2);
const TOKEN = 'e2e-admin-token';
const ROOM = 'arena';

// Every control that sends a room-wide command (admins only).
const ADMIN_CONTROLS = ['btn-pause', 'btn-resume', 'btn-step', 'btn-reset', 'btn-spawn', 'spawn-n',
  'btn-clear-obstacles', 'params-all'];

/** '#rrggbb' -> 'rgb(r, g, b)', as getComputedStyle writes colours. */
function rgb(hex) {
  const n = parseInt(hex.slice(1), 16);
  return `rgb(${n >> 16}, ${(n >> 8) & 255}, ${n & 255})`;
}

const room = (page) => view(page, () => window.flockView.room);

/** {id: disabled} of the controls named in `ids`, and of every parameter input under "params". */
const disabledStates = (page, ids) => view(page, (list) => {
  const out = Object.fromEntries(list.map((id) => [id, document.getElementById(id).disabled]));
  const inputs = [...document.querySelectorAll('#param-list input')];
  out.params = inputs.length > 0 && inputs.every((i) => i.disabled) ? 'all' : inputs.some((i) => i.disabled) ? 'some' : 'none';
  return out;
}, ids);

async function openLobby(page) {
  if (!(await page.locator('#lobby').isVisible())) await page.locator('#btn-rooms').click();
  await waitFor('the room list', () => page.locator('#room-list tbody tr').count(), 4000);
}

/** The lobby's row of room `name` as text cells, once it shows one. */
async function lobbyRow(page, name) {
  const row = page.locator(`#room-list tr[data-room="${name}"]`);
  await waitFor(`the row of ${name}`, () => row.count(), 5000);
  return (await row.locator('td').allTextContents()).slice(0, 7);
}

async function apiRooms(server) {
  const res = await fetch(`${server.url}api/rooms`);
  assert(res.ok, `GET /api/rooms: HTTP ${res.status}`);
  return res.json();
}

// ---- the checks ---------------------------------------------------------------

async function playerChecks(browser, server, consoleLog) {
  const ctx = await browser.newContext({ viewport: VIEWPORT });
  const page = await openViewer(ctx, server.url, consoleLog);
  const sent = recordCommands(page);
  const me = {};

  let ok = await check('the first page connects without joining: default room, a sandbox player when flockd has an admin token', async () => {
    await waitFor('the welcome', () => view(page, () => window.flockView.connected && window.flockView.frames.drawnBoids > 0), 8000);
    const r = await room(page);
    assert(r.room === 'default' && r.mode === 'sandbox' && r.role === 'player', `room ${JSON.stringify(r)}`);
    assert(!sent.some((m) => m.cmd === 'join'), 'the page sent a join');
    assert(!page.url().includes('room='), `address ${page.url()}`);
    assert((await page.locator('#where').textContent()).includes('default'), 'the room is not shown');
    const d = await disabledStates(page, [...ADMIN_CONTROLS, 'group', 'radius', 'btn-clear-target']);
    assert(ADMIN_CONTROLS.every((id) => d[id]) && d.params === 'all', `admin controls enabled: ${JSON.stringify(d)}`);
    assert(!d.group && !d.radius && !d['btn-clear-target'], `seek or obstacle controls disabled: ${JSON.stringify(d)}`);
  });
  if (!ok) return { ctx, page, me };

  await check('a sandbox player\'s click sets the seek target of the group it picked', async () => {
    const p = await pointAt(page, 1200, 700);
    await page.mouse.click(p.px, p.py);
    const t = await waitFor('the target', () => view(page, () => window.flockView.snapshot.targets.find((x) => x.group === 0)), 3000);
    assert(sameF32(t.x, p.world[0]) && sameF32(t.y, p.world[1]), `target ${JSON.stringify(t)}`);
  });

  await check('the room list shows the default room with its mode and counts', async () => {
    await openLobby(page);
    const api = await apiRooms(server);
    assert(api.rooms[0].name === 'default', `first room ${JSON.stringify(api.rooms[0])}`);
    const want = roomCells(api.rooms[0]);
    assert(want[1] === 'sandbox' && want[4] === '300' && want[2].startsWith('1'), `API says ${want}`);
    const cells = await waitFor('the row to match GET /api/rooms', async () => {
      const c = await lobbyRow(page, 'default');
      return JSON.stringify(c) === JSON.stringify(want) && c;
    }, 5000);
    console.log(`     default: ${cells.join(' | ')}`);
  });

  ok = await check('creating an RTS room from the lobby joins it as a player with a team', async () => {
    await page.locator('#join-name').fill('ann');
    await page.locator('#create-name').fill(ROOM);
    await page.locator('#create-mode').selectOption('rts');
    await page.locator('#create-room button[type="submit"]').click();
    const r = await waitFor('the room\'s welcome', async () => {
      const x = await room(page);
      return x.room === ROOM && !x.rejoining && x;
    }, 5000);
    assert(r.mode === 'rts' && r.role === 'player' && r.team >= 1, `room ${JSON.stringify(r)}`);
    const join = sent.find((m) => m.cmd === 'join');
    assert(join && join.room === ROOM && join.mode === 'rts' && join.role === 'player' && join.name === 'ann',
      `join sent ${JSON.stringify(join)}`);
    assert(new URL(page.url()).search === `?room=${ROOM}&role=player`, `address ${page.url()}`);
    assert(!(await page.locator('#lobby').isVisible()), 'the rooms panel stayed open');
    assert((await page.locator('#where').textContent()).includes(`team ${r.team}`), 'the team is not shown');
    await waitFor('the team\'s units', () => view(page, (t) => window.flockView.snapshot && window.flockView.snapshot.runs.some((x) => x.group === t), r.team), 3000);
    Object.assign(me, r);
  });
  if (!ok) return { ctx, page, me };

  await check('the player list shows the own team in the colour its boids are drawn in', async () => {
    const line = page.locator(`#roster-list li[data-client="${me.client}"]`);
    await waitFor('the own line in the player list', () => line.count(), 3000);
    const text = await line.textContent();
    assert(text.includes('ann') && text.includes('(you)') && text.includes(`team ${me.team}`), `line "${text}"`);
    const swatch = await line.locator('.swatch').evaluate((el) => getComputedStyle(el).backgroundColor);
    assert(swatch === rgb(groupColor(me.team)), `swatch ${swatch}, team colour ${groupColor(me.team)}`);
    const roster = await view(page, () => window.flockView.roster);
    assert(roster.room === ROOM && roster.players.some((p) => p.client === me.client && p.team === me.team && p.connected),
      `roster ${JSON.stringify(roster)}`);
    // The renderer draws the team's units in that colour (once the playout delay has passed).
    const countLit = () => view(page, (hex) => {
      const want = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
      const c = document.getElementById('view');
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let n = 0;
      for (let i = 0; i < d.length; i += 4) if (want.every((v, k) => Math.abs(d[i + k] - v) <= 6)) n++;
      return n;
    }, groupColor(me.team));
    let lit = 0;
    await waitFor('boids in the team\'s colour on the canvas', async () => (lit = await countLit()) > 20, 3000)
      .catch((e) => { throw new Error(`${e.message}: ${lit} pixels`); });
  });

  await check('a player\'s click seeks its team\'s group', async () => {
    const before = sent.length;
    const p = await pointAt(page, 500, 400);
    await page.mouse.click(p.px, p.py);
    const t = await waitFor('the team\'s target', () => view(page,
      (g) => window.flockView.snapshot.targets.find((x) => x.group === g), me.team), 3000);
    assert(sameF32(t.x, p.world[0]) && sameF32(t.y, p.world[1]), `target ${JSON.stringify(t)}, clicked ${p.world}`);
    const seeks = sent.slice(before).filter((m) => m.cmd === 'seek');
    assert(seeks.length === 1 && seeks[0].group === me.team, `sent ${JSON.stringify(sent.slice(before))}`);
    const targets = await view(page, () => window.flockView.snapshot.targets);
    assert(targets.every((x) => x.group === me.team), `targets ${JSON.stringify(targets)}`);
  });

  await check('an RTS player\'s param, pause, step, reset and spawn controls are disabled and keys send nothing', async () => {
    const d = await disabledStates(page, [...ADMIN_CONTROLS, 'group', 'radius', 'btn-clear-target']);
    assert(ADMIN_CONTROLS.every((id) => d[id]) && d.params === 'all', `enabled: ${JSON.stringify(d)}`);
    assert(d.group && !d.radius && !d['btn-clear-target'], `group box, radius, clear target: ${JSON.stringify(d)}`);
    assert(Number(await page.locator('#group').inputValue()) === me.team, 'the group box does not show the team');
    const before = sent.length;
    await page.keyboard.press(' ');
    await page.keyboard.press('s');
    await sleep(500);
    assert(sent.length === before, `sent ${JSON.stringify(sent.slice(before))}`);
    assert(!(await view(page, () => window.flockView.snapshot.paused)), 'the room paused');
  });

  await check('a player may place an obstacle', async () => {
    const p = await pointAt(page, 1100, 300);
    await page.mouse.click(p.px, p.py, { button: 'right' });
    const o = await waitFor('the obstacle', () => view(page, () => window.flockView.snapshot.obstacles[0]), 3000);
    assert(sameF32(o.x, p.world[0]) && sameF32(o.y, p.world[1]), `obstacle ${JSON.stringify(o)}`);
  });

  await check('a reload joins the room again and takes the team back', async () => {
    const units = await view(page, (g) => window.flockView.snapshot.runs.find((x) => x.group === g).count, me.team);
    sent.length = 0;
    await page.reload();
    const r = await waitFor('the room after the reload', async () => {
      const x = await view(page, () => window.flockView && window.flockView.room);
      return x && x.room === ROOM && !x.rejoining && x;
    }, 8000);
    assert(r.role === 'player' && r.team === me.team, `room ${JSON.stringify(r)}, was team ${me.team}`);
    const join = sent.find((m) => m.cmd === 'join');
    assert(join && /^[0-9a-f]{32}$/.test(join.rejoin || ''), `join sent ${JSON.stringify(join)}`);
    await waitFor('the team\'s units', () => view(page, ([g, n]) => {
      const run = window.flockView.snapshot && window.flockView.snapshot.runs.find((x) => x.group === g);
      return run && run.count === n;
    }, [me.team, units]), 3000);
    me.client = r.client;
  });

  return { ctx, page, me };
}

async function viewerAndAdminChecks(browser, server, me, consoleLog) {
  const ctx = await browser.newContext({ viewport: VIEWPORT });
  const page = await openViewer(ctx, server.url, consoleLog);
  const sent = recordCommands(page);
  await waitFor('the welcome', () => view(page, () => window.flockView.connected), 8000);

  await check('the room list shows the RTS room with its player', async () => {
    await openLobby(page);
    const cells = await waitFor('one player in the RTS room', async () => {
      const c = await lobbyRow(page, ROOM);
      return c[2] === '1' && c;
    }, 5000);
    assert(cells[1] === 'rts' && cells[5] === 'no' && Number(cells[4]) > 0, `row ${cells.join(' | ')}`);
  });

  let ok = await check('joining as a viewer disables every control and a click changes nothing', async () => {
    await page.locator(`#room-list tr[data-room="${ROOM}"] button[data-role="viewer"]`).click();
    await waitFor('the room\'s welcome', async () => {
      const x = await room(page);
      return x.room === ROOM && x.role === 'viewer';
    }, 5000);
    assert(new URL(page.url()).search === `?room=${ROOM}&role=viewer`, `address ${page.url()}`);
    await waitFor('a snapshot of the room', () => view(page, (g) => window.flockView.snapshot &&
      window.flockView.snapshot.runs.some((x) => x.group === g), me.team), 3000);
    const d = await disabledStates(page, [...ADMIN_CONTROLS, 'group', 'radius', 'btn-clear-target']);
    assert(Object.entries(d).every(([k, v]) => (k === 'params' ? v === 'all' : v)), `enabled: ${JSON.stringify(d)}`);
    const before = sent.length;
    const s0 = await view(page, () => window.flockView.snapshot);
    const p = await pointAt(page, 300, 800);
    await page.mouse.click(p.px, p.py);
    await page.mouse.click(p.px + 40, p.py, { button: 'right' });
    await page.keyboard.press(' ');
    await sleep(800);
    assert(sent.length === before, `sent ${JSON.stringify(sent.slice(before))}`);
    const s1 = await view(page, () => window.flockView.snapshot);
    assert(JSON.stringify(s1.targets) === JSON.stringify(s0.targets), `targets ${JSON.stringify(s0.targets)} -> ${JSON.stringify(s1.targets)}`);
    assert(JSON.stringify(s1.obstacles) === JSON.stringify(s0.obstacles), 'obstacles changed');
    assert(!s1.paused && s1.tick > s0.tick, 'the room stopped');
  });
  if (!ok) return { ctx, page };

  await check('joining as admin with a wrong token shows the forbidden error and changes nothing', async () => {
    await openLobby(page);
    await page.locator('#join-token').fill('not-the-token');
    await page.locator(`#room-list tr[data-room="${ROOM}"] button[data-role="admin"]`).click();
    await waitFor('the error toast', () => page.locator('#toast').isVisible(), 3000);
    const toast = await page.locator('#toast').textContent();
    const err = await view(page, () => window.flockView.lastError);
    assert(err && err.cmd === 'join' && err.code === 'forbidden', `lastError ${JSON.stringify(err)}`);
    assert(toast.includes('forbidden'), `toast "${toast}"`);
    console.log(`     toast: "${toast}"`);
    const r = await room(page);
    assert(r.room === ROOM && r.role === 'viewer', `room ${JSON.stringify(r)}`);
    assert(new URL(page.url()).search === `?room=${ROOM}&role=viewer`, `address ${page.url()}`);
    assert(await page.locator('#lobby').isVisible(), 'the rooms panel closed');
  });

  await check('joining as admin with the token enables every control; the token stays out of the address', async () => {
    await page.locator('#join-token').fill(TOKEN);
    await page.locator(`#room-list tr[data-room="${ROOM}"] button[data-role="admin"]`).click();
    await waitFor('the admin welcome', async () => (await room(page)).role === 'admin', 5000);
    assert(new URL(page.url()).search === `?room=${ROOM}&role=admin`, `address ${page.url()}`);
    assert(!page.url().includes(TOKEN), 'the token is in the address');
    await waitFor('the controls', async () => {
      const d = await disabledStates(page, ['btn-step', 'btn-reset', 'btn-spawn', 'spawn-n', 'btn-clear-obstacles',
        'params-all', 'group', 'radius', 'btn-clear-target']);
      return Object.entries(d).every(([k, v]) => (k === 'params' ? v === 'none' : !v));
    }, 2000);
    await page.locator('#btn-pause').click();
    await waitFor('a paused snapshot', () => view(page, () => window.flockView.snapshot.paused), 3000);
    await page.locator('#btn-resume').click();
    await waitFor('a running snapshot', () => view(page, () => !window.flockView.snapshot.paused), 3000);
    // The admin steers any group, the player's team too.
    await page.locator('#group').fill('0');
    await page.locator('#group').press('Enter');
    const p = await pointAt(page, 200, 200);
    await page.mouse.click(p.px, p.py);
    await waitFor('group 0\'s target', () => view(page, () => window.flockView.snapshot.targets.some((x) => x.group === 0)), 3000);
  });

  await check('the admin page shows the player in the player list', async () => {
    const line = page.locator(`#roster-list li[data-team="${me.team}"]`);
    await waitFor('the player\'s line', () => line.count(), 3000);
    const text = await line.textContent();
    assert(text.includes('ann') && !text.includes('(you)'), `line "${text}"`);
    const swatch = await line.locator('.swatch').evaluate((el) => getComputedStyle(el).backgroundColor);
    assert(swatch === rgb(groupColor(me.team)), `swatch ${swatch}`);
  });

  return { ctx, page };
}

async function restartCheck(admin, server, args, consoleLog) {
  let next = server;
  await check('after flockd restarts the page reconnects and joins its room again, in its mode and role', async () => {
    consoleLog.phase = 'restart';
    const status = await server.stop();
    assert(status === 0, `flockd exited with ${status}`);
    await waitFor('the page to notice', () => view(admin.page, () => !window.flockView.connected), 3000);
    next = await startFlockd(flockdBin, args, server.port);
    // The page keeps showing where it was until a new connection's welcome.
    const r = await waitFor('the room again', async () => {
      const x = await view(admin.page, () => window.flockView.connected && window.flockView.room);
      return x && x.room === ROOM && x.role === 'admin' && !x.rejoining && x;
    }, 15000);
    const last = await view(admin.page, () => window.flockView.connection);
    assert(last.everConnected && last.status === 'open', `connection ${JSON.stringify(last)}`);
    assert(r.mode === 'rts', `room ${JSON.stringify(r)}`);
    assert(new URL(admin.page.url()).search === `?room=${ROOM}&role=admin`, `address ${admin.page.url()}`);
    consoleLog.phase = 'after';
  });
  return next;
}

async function leftCheck(player, admin, me) {
  await check('a player that leaves shows as "(left)" while its team waits', async () => {
    await player.ctx.close();
    const line = admin.page.locator(`#roster-list li[data-team="${me.team}"]`);
    await waitFor('"(left)"', async () => (await line.count()) && (await line.textContent()).includes('(left)'), 5000);
  });
}

// ---- main -------------------------------------------------------------------------

async function main() {
  const browser = await launchBrowser(flockdBin, 'node lobby.e2e.mjs FLOCKD [BUILD_DIR]');
  const consoleLog = [];
  consoleLog.phase = 'main';
  // Spectators of an rts room see it live (a version 3 page would see it
  // --spectator-delay seconds late: viewer3.e2e.mjs checks that).
  const args = ['--boids', '300', '--capacity', '4000', '--seed', '5', '--admin-token', TOKEN, '--spectator-delay', '0'];
  let server = await startFlockd(flockdBin, args);
  try {
    const player = await playerChecks(browser, server, consoleLog);
    if (player.me.team) {
      const admin = await viewerAndAdminChecks(browser, server, player.me, consoleLog);
      await check('screenshot saved', async () => {
        const path = join(buildDir, 'e2e-lobby.png');
        await openLobby(admin.page);
        await admin.page.screenshot({ path });
        console.log(`     screenshot: ${path}`);
      });
      await leftCheck(player, admin, player.me);
      server = await restartCheck(admin, server, args, consoleLog);
      await admin.ctx.close();
    }
    await closingChecks(consoleLog, [{ name: 'flockd', server }]);
  } finally {
    await browser.close();
    killServers();
  }
  finish(anyFailed() ? 1 : 0);
}

main().catch(crashed);
