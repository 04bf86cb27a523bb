// End-to-end test of a scripted room in the viewer (PROTOCOL.md §14): a
// real flockd running the flockwars sample in its default rts room, the
// page in headless Chromium as a player beside a player of the JS library.
// The page's game panel shows the lobby and a "ready" button; a click on
// it sends {"cmd":"game","action":"ready"}, which the script acks; with the
// library's player ready too the panel goes through the countdown to
// "playing" and the page's team gets its units (spawned by the script, not
// at join); when the time limit an admin set runs out the panel shows the
// winner's banner and a "rematch" button. A viewer's page shows the panel
// with no buttons; a sandbox room's page has no panel.
//
// usage: node game.e2e.mjs FLOCKD [BUILD_DIR]
//   screenshot: BUILD_DIR/e2e-game.png
// Prints one line per check and last "N passed, N failed"; exits 1 on failure.

import { join } from 'node:path';
import {
  ROOT, check, assert, waitFor, finish, anyFailed, crashed, startFlockd, killServers, launchBrowser,
  view, openViewer, closingChecks, recordCommands,
} from './harness.mjs';
import { connect } from '../../client/js/src/index.js';

const [flockdBin, buildDir = join(ROOT, 'build')] = process.argv.slice(2);
const TOKEN = 's3cret';

const panelText = (page) => page.locator('#game').textContent();
const buttons = (page) => page.$$eval('#game-state .actions button', (bs) => bs.map((b) => b.textContent));

async function playerChecks(browser, server, consoleLog) {
  const admin = await connect(server.url, { room: 'default', role: 'admin', token: TOKEN, protocol: 3 });
  await admin.command('game', { action: 'units', n: 40 });
  await admin.command('game', { action: 'time_limit', seconds: 4 });
  const page = await openViewer(browser, `${server.url}?room=default&role=player`, consoleLog);
  const sent = recordCommands(page);
  const lib = await connect(server.url, { room: 'default', role: 'player', name: 'lib', protocol: 3 });
  try {
    const me = await waitFor('the page\'s team', async () => {
      const r = await view(page, () => window.flockView.room);
      return r && r.team >= 1 && r;
    }, 8000);
    await check('a scripted room\'s page shows the game panel in the lobby with a ready button', async () => {
      await waitFor('the panel', () => page.locator('#game').isVisible(), 5000);
      await waitFor('the lobby', async () => (await panelText(page)).includes('lobby'), 5000);
      assert((await page.locator('#game-name').textContent()).includes('flockwars'), 'script name');
      assert((await buttons(page)).includes('ready'), JSON.stringify(await buttons(page)));
      const boids = await view(page, () => window.flockView.boids().x.length);
      assert(boids === 0, `units before the match: ${boids}`);
    });
    await check('a click on ready sends the game action, and the match starts when both are ready', async () => {
      await page.locator('#game-state .actions button', { hasText: /^ready$/ }).click();
      const cmd = await waitFor('a game command sent', () => sent.find((m) => m.cmd === 'game'), 3000);
      assert(cmd.action === 'ready', JSON.stringify(cmd));
      await lib.command('game', { action: 'ready' });
      await waitFor('countdown or playing', async () => /countdown|playing/.test(await panelText(page)), 5000);
      await waitFor('playing', async () => (await panelText(page)).includes('playing'), 8000);
    });
    await check('the script spawned the page\'s team its units at the start', async () => {
      await waitFor('the team\'s units', async () => {
        const b = await view(page, () => window.flockView.boids());
        return b.group.filter((g) => g === me.team).length === 40;
      }, 5000);
    });
    await check('at the time limit the panel shows the winner and a rematch button', async () => {
      await waitFor('ended', async () => (await panelText(page)).includes('ended'), 12000);
      const banner = await page.locator('#game-state .winner').textContent();
      assert(/team \d/i.test(banner), banner);
      assert((await buttons(page)).includes('rematch'), JSON.stringify(await buttons(page)));
      await page.screenshot({ path: join(buildDir, 'e2e-game.png') });
    });
    await check('a viewer\'s page shows the game without buttons to press', async () => {
      const vp = await openViewer(browser, `${server.url}?room=default&role=viewer`, consoleLog);
      try {
        await waitFor('the panel', async () => (await vp.locator('#game').isVisible()) &&
          (await panelText(vp)).includes('ended'), 10000);
        const b = await buttons(vp);
        assert(b.length === 0, `a viewer's buttons: ${JSON.stringify(b)}`);
      } finally {
        await vp.close();
      }
    });
  } finally {
    lib.close();
    admin.close();
    await page.close();
  }
}

async function sandboxChecks(browser, server, consoleLog) {
  await check('a room without a script has no game panel', async () => {
    const page = await openViewer(browser, `${server.url}?room=plain&role=player`, consoleLog);
    try {
      await waitFor('joined', async () => {
        const r = await view(page, () => window.flockView.room);
        return r && r.room === 'plain';
      }, 8000);
      assert(!(await page.locator('#game').isVisible()), 'panel shown');
    } finally {
      await page.close();
    }
  });
}

async function main() {
  const browser = await launchBrowser(flockdBin, 'node game.e2e.mjs FLOCKD [BUILD_DIR]');
  const consoleLog = [];
  consoleLog.phase = 'main';
  const server = await startFlockd(flockdBin, [
    '--room-mode', 'rts', '--room-script', 'flockwars', '--scripts-dir', join(ROOT, 'server', 'scripts'),
    '--boids', '0', '--max-teams', '4', '--edges', 'contain', '--admin-token', TOKEN, '--tick-hz', '30',
  ]);
  try {
    await playerChecks(browser, server, consoleLog);
    await sandboxChecks(browser, server, consoleLog);
    await closingChecks(consoleLog, [{ name: 'flockd', server }]);
  } finally {
    await browser.close();
    killServers();
  }
  finish(anyFailed() ? 1 : 0);
}

main().catch(crashed);
