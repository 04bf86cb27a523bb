// End-to-end test of watching a recording in the browser viewer: a room is
// recorded (flockd --record, commands from flockctl), then played by
// `flockd --replay LOG --serve` to the page in headless Chromium, with no
// live room. Checks the recording's bar, pause, step, goto by the tick box
// and by the slider, that clicks on the world send nothing, and that the
// playback holds at the recording's end (PROTOCOL.md §5.4 goto, §6.1
// replay; server/store/README.md).
//
// usage: node replay.e2e.mjs FLOCKD [BUILD_DIR]
//   flockctl:   BUILD_DIR/client/cli/flockctl
//   screenshot: BUILD_DIR/e2e-replay.png
// Prints one line per check and last "N passed, N failed"; exits 1 on failure.

import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ROOT, check, assert, sleep, waitFor, finish, anyFailed, crashed, startFlockd, killServers, launchBrowser,
  view, openViewer, pointAt, closingChecks, recordCommands,
} from './harness.mjs';

const [flockdBin, buildDir = join(ROOT, 'build')] = process.argv.slice(2);
const flockctl = join(buildDir, 'client', 'cli', 'flockctl');

const snapshot = (page) => view(page, () => window.flockView.snapshot);

/** Records a room for about `seconds` with a few commands; resolves to the log's path. */
async function record(dir, seconds) {
  const server = await startFlockd(flockdBin, ['--boids', '400', '--seed', '3', '--record', dir]);
  const url = `ws://127.0.0.1:${server.port}/ws`;
  const send = (...cmds) => execFileSync(flockctl, ['send', '--url', url, ...cmds.map((c) => JSON.stringify(c))]);
  send({ cmd: 'seek', group: 0, x: 400, y: 300 }, { cmd: 'obstacle_add', x: 800, y: 500, r: 40 });
  await sleep(seconds * 500);
  send({ cmd: 'spawn', n: 50, group: 2, x: 1200, y: 700 }, { cmd: 'params', max_speed: 160 });
  await sleep(seconds * 500);
  const status = await server.stop();
  assert(status === 0, `the recording flockd exited with ${status}`);
  return join(dir, 'default.flog');
}

async function playbackChecks(page, sent) {
  let replay = null;
  const ok = await check('the page shows the recording\'s bar with its ticks, and only playback controls', async () => {
    const w = await waitFor('the welcome and a drawn frame', () => view(page, () => window.flockView.connected &&
      window.flockView.frames.drawnBoids > 0 && window.flockView.welcome), 8000);
    replay = w.replay;
    assert(replay && replay.first_tick === 0 && replay.last_tick > 60, `welcome replay ${JSON.stringify(replay)}`);
    assert(await page.locator('#replay').isVisible(), 'the recording bar is hidden');
    assert((await page.locator('#replay-range').textContent()).includes(String(replay.last_tick)), 'no tick range');
    const off = await view(page, () => ['btn-reset', 'btn-spawn', 'btn-clear-obstacles', 'radius', 'group']
      .filter((id) => !document.getElementById(id).disabled));
    assert(off.length === 0, `world-changing controls enabled: ${off}`);
    const on = await view(page, () => ['btn-step', 'replay-tick', 'replay-goto']
      .every((id) => !document.getElementById(id).disabled));
    assert(on, 'playback controls disabled');
    assert((await page.locator('#hint').textContent()).includes('recording'), 'the hint does not say recording');
  });
  if (!ok) return;

  await check('the recording waits at its first tick until resume, then plays', async () => {
    const s = await snapshot(page);
    assert(s.paused && s.tick === 0, `first snapshot ${JSON.stringify({ tick: s.tick, paused: s.paused })}`);
    await page.locator('#btn-resume').click();
    await waitFor('the playback', async () => (await snapshot(page)).tick > 5, 3000);
  });

  await check('pause holds the playback, and step advances it by one tick', async () => {
    await page.locator('#btn-pause').click();
    const s = await waitFor('a paused snapshot', async () => {
      const x = await snapshot(page);
      return x && x.paused && x;
    }, 3000);
    await sleep(300);
    assert((await snapshot(page)).tick === s.tick, 'the tick moved while paused');
    await page.locator('#btn-step').click();
    await waitFor(`tick ${s.tick + 1}`, async () => (await snapshot(page)).tick === s.tick + 1, 3000);
  });

  await check('goto by the tick box jumps to that tick of the recording', async () => {
    const target = Math.floor(replay.last_tick / 2);
    await page.locator('#replay-tick').fill(String(target));
    await page.locator('#replay-goto').click();
    await waitFor(`tick ${target}`, async () => (await snapshot(page)).tick === target, 5000);
    const g = sent.filter((m) => m.cmd === 'goto').pop();
    assert(g && g.tick === target, `goto sent ${JSON.stringify(g)}`);
  });

  await check('goto by the slider jumps back', async () => {
    const target = 10;
    await page.locator('#replay-slider').fill(String(target));
    await waitFor(`tick ${target}`, async () => (await snapshot(page)).tick === target, 5000);
  });

  await check('a click on the world sends no command in a recording', async () => {
    const before = sent.length;
    const p = await pointAt(page, 800, 500);
    await page.mouse.click(p.px, p.py);
    await sleep(300);
    assert(sent.length === before, `sent ${JSON.stringify(sent.slice(before))}`);
  });

  await check('resume plays to the recording\'s end and holds there, paused', async () => {
    await page.locator('#replay-tick').fill(String(replay.last_tick - 20));
    await page.locator('#replay-goto').click();
    await page.locator('#btn-resume').click();
    const s = await waitFor('the end', async () => {
      const x = await snapshot(page);
      return x.paused && x.tick === replay.last_tick && x;
    }, 5000);
    assert(s.obstacles.length === 1, `obstacles ${JSON.stringify(s.obstacles)}`);
  });
}

async function main() {
  const browser = await launchBrowser(flockdBin, 'node replay.e2e.mjs FLOCKD [BUILD_DIR]');
  const dir = mkdtempSync(join(tmpdir(), 'flockd-e2e-replay-'));
  const consoleLog = [];
  consoleLog.phase = 'main';
  try {
    const log = await record(dir, 3);
    const server = await startFlockd(flockdBin, ['--replay', log, '--serve']);
    const page = await openViewer(browser, server.url, consoleLog);
    const sent = recordCommands(page);
    await playbackChecks(page, sent);
    await check('screenshot saved', async () => {
      const path = join(buildDir, 'e2e-replay.png');
      await page.screenshot({ path });
      console.log(`     screenshot: ${path}`);
    });
    await closingChecks(consoleLog, [{ name: 'the replaying flockd', server }]);
  } finally {
    await browser.close();
    killServers();
    rmSync(dir, { recursive: true, force: true });
  }
  finish(anyFailed() ? 1 : 0);
}

main().catch(crashed);
