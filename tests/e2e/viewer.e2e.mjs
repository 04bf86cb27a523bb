// End-to-end test of the browser viewer on protocol version 2 (the page
// opened with ?protocol=2; version 3's views are viewer3.e2e.mjs's): a
// real flockd on a loopback port, the page it serves at / opened in
// headless Chromium (Debian's, driven by playwright-core), and checks
// through the mouse, the DOM, the canvas pixels and the page's read-only
// window.flockView. Also measures the render loop at 1k and 10k boids and
// the snapshot decode time.
//
// usage: node viewer.e2e.mjs FLOCKD [BUILD_DIR] [--functional | --timing]
//   --functional: only the checks through the page (no frame-time bounds)
//   --timing:     only the render-loop measurements, which need the machine
//                 to themselves (ctest runs that part alone)
//   screenshot: $FLOCK_E2E_SCREENSHOT, else BUILD_DIR/e2e-viewer.png
//   browser:    $CHROMIUM, else /usr/bin/chromium
// Prints one line per check and last "N passed, N failed"; exits 1 on failure.

import { mkdirSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import {
  ROOT, check, assert, sleep, waitFor, finish, anyFailed, crashed, startFlockd, killServers, launchBrowser, view,
  openViewer, pointAt, sameF32, closingChecks,
} from './harness.mjs';

const USAGE = 'node viewer.e2e.mjs FLOCKD [BUILD_DIR] [--functional | --timing]';
const options = process.argv.slice(2).filter((a) => a.startsWith('--'));
const [flockdBin, buildDir = join(ROOT, 'build')] = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const badOption = options.find((o) => o !== '--functional' && o !== '--timing');
// Both parts unless one is chosen.
const runFunctional = !options.includes('--timing');
const runTiming = !options.includes('--functional');
const screenshotPath = process.env.FLOCK_E2E_SCREENSHOT || join(buildDir, 'e2e-viewer.png');
// The page as it speaks version 2 (by default it speaks version 3).
const V2 = '?protocol=2';

/** Distance on the torus (wrap) or the plane (contain). */
function dist(ax, ay, bx, by, w, h, wrap) {
  let dx = Math.abs(ax - bx);
  let dy = Math.abs(ay - by);
  if (wrap) {
    dx = Math.min(dx, w - dx);
    dy = Math.min(dy, h - dy);
  }
  return Math.hypot(dx, dy);
}

async function meanDistance(page, group, tx, ty) {
  const [b, s] = await Promise.all([view(page, () => window.flockView.boids()), view(page, () => window.flockView.snapshot)]);
  let sum = 0;
  let n = 0;
  for (let i = 0; i < b.x.length; i++) {
    if (b.group[i] !== group) continue;
    sum += dist(b.x[i], b.y[i], tx, ty, s.width, s.height, s.wrap);
    n++;
  }
  return n ? sum / n : NaN;
}

// Mean frame work (ms), frame interval (ms) and decode time (ms per
// snapshot) over `ms` of steady running.
async function measure(page, ms) {
  const snap = () => view(page, () => ({ f: window.flockView.frames, s: window.flockView.stats }));
  const a = await snap();
  await sleep(ms);
  const b = await snap();
  const frames = b.f.count - a.f.count;
  const intervals = b.f.intervals - a.f.intervals;
  const decodes = b.s.decodeCount - a.s.decodeCount;
  return {
    frames,
    workMs: (b.f.workMs - a.f.workMs) / frames,
    intervalMs: (b.f.intervalMs - a.f.intervalMs) / intervals,
    fps: (1000 * intervals) / (b.f.intervalMs - a.f.intervalMs),
    decodeMs: (b.s.decodeMsTotal - a.s.decodeMsTotal) / decodes,
    snapshotRate: b.s.rate,
    bytesPerSec: b.s.bytesPerSec,
    drawn: b.f.drawnBoids,
    skipped: b.s.framesSkipped - a.s.framesSkipped,
    holds: b.f.playoutHolds - a.f.playoutHolds,
  };
}

// ---- the checks ---------------------------------------------------------------

async function functionalChecks(browser, consoleLog) {
  // A small capacity so that a spawn from the page is refused (error display).
  const args = ['--boids', '1000', '--capacity', '1500', '--seed', '7'];
  let server = await startFlockd(flockdBin, args);
  const page = await openViewer(browser, `${server.url}${V2}`, consoleLog);
  let ok = await check('the page connects and draws every boid', async () => {
    await waitFor('the welcome and a drawn frame', () => view(page,
      () => window.flockView.connected && window.flockView.frames.drawnBoids === 1000), 8000);
    const w = await view(page, () => window.flockView.welcome);
    assert(w.protocol === 2 && w.world.width === 1600, `welcome ${JSON.stringify(w).slice(0, 200)}`);
    const st = await view(page, () => window.flockView.stats);
    assert(st.protocol === 2 && st.badSnapshots === 0, `stats ${JSON.stringify(st)}`);
    assert(!(await page.locator('#banner').isVisible()), 'the connection banner is still shown');
  });
  if (!ok) return { page, server };

  await check('boids are on the canvas and move between frames', async () => {
    const lit = await view(page, () => {
      const c = document.getElementById('view');
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let n = 0;
      for (let i = 0; i < d.length; i += 4) if (d[i + 2] > 180 && d[i + 1] > 150 && d[i] < 140) n++; // group 0: #4cc9f0
      return n;
    });
    assert(lit > 1500, `only ${lit} boid-coloured pixels`);
    const a = await view(page, () => window.flockView.drawnPositions(50));
    await sleep(250);
    const b = await view(page, () => window.flockView.drawnPositions(50));
    const moved = a.filter((p, i) => Math.hypot(p[0] - b[i][0], p[1] - b[i][1]) > 0.5).length;
    assert(moved > 40, `only ${moved} of 50 boids moved in 250 ms`);
    // Between two frames too (interpolation): consecutive frames differ.
    const c = await view(page, () => new Promise((r) => {
      const p0 = window.flockView.drawnPositions(20);
      requestAnimationFrame(() => requestAnimationFrame(() => r([p0, window.flockView.drawnPositions(20)])));
    }));
    const steps = c[0].filter((p, i) => p[0] !== c[1][i][0] || p[1] !== c[1][i][1]).length;
    assert(steps > 10, `only ${steps} of 20 boids changed from one frame to the next`);
  });

  await check('the stats panel shows snapshot rate, bytes, ping, and plots tick time and the flock\'s measures', async () => {
    await waitFor('the room\'s stats with a measure', () => view(page, () => window.flockView.stats.flock), 5000);
    await sleep(300);
    const text = (id) => page.locator(`#${id}`).textContent();
    const rate = parseFloat(await text('st-rate'));
    assert(rate > 10 && rate < 30, `snapshot rate "${await text('st-rate')}"`);
    assert(/[kM]?B\/s/.test(await text('st-bytes')) && parseFloat(await text('st-bytes')) > 0, 'bytes/s');
    assert(/^\d+(\.\d)? ms$/.test(await text('st-ping')), `ping "${await text('st-ping')}"`);
    assert(/ms$/.test(await text('st-tickms')), `tick time "${await text('st-tickms')}"`);
    const flock = await view(page, () => window.flockView.stats.flock);
    const pol = /^(\d\.\d{3}) local, (\d\.\d\d) global$/.exec(await text('st-pol'));
    assert(pol && Number(pol[1]) >= 0 && Number(pol[1]) <= 1, `polarization "${await text('st-pol')}"`);
    assert(/^\d+\.\d \(\d+\.\d\d × separation\)$/.test(await text('st-nn')), `spacing "${await text('st-nn')}"`);
    assert(/^\d+\.\d \(\d\.\d\d × max\)$/.test(await text('st-speed')), `speed "${await text('st-speed')}"`);
    assert(/^\d+ \(\d+\.\d % of boids\)$/.test(await text('st-mills')), `mills "${await text('st-mills')}"`);
    assert(/^\d+, largest \d+, \d+ flocks$/.test(await text('st-clusters')), `clusters "${await text('st-clusters')}"`);
    assert(flock.boids > 0 && flock.local_polarization <= 1, `flock ${JSON.stringify(flock)}`);
    // The plots are drawn: each sparkline has painted pixels once it has two samples.
    await sleep(2200);
    const painted = await view(page, () => ['spark-tick', 'spark-pol', 'spark-global', 'spark-nn', 'spark-speed']
      .map((id) => {
        const c = document.getElementById(id);
        const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        return px.some((v, i) => i % 4 === 3 && v > 0);
      }));
    assert(painted.every(Boolean), `sparklines painted: ${painted}`);
    assert(/^\d+$/.test(await text('st-skipped')), `skipped "${await text('st-skipped')}"`);
    assert((await text('st-version')) === 'v2', `snapshot "${await text('st-version')}"`);
    const perBoid = parseFloat(await text('st-bpb'));
    assert(perBoid > 0 && perBoid < 5, `per boid "${await text('st-bpb')}"`);
    assert(/^0 asked, 0 mismatches$/.test(await text('st-keyframes')), `key frames "${await text('st-keyframes')}"`);
  });

  const target = { x: 400, y: 300 };
  await check('a click sets the group\'s seek target and the group heads there', async () => {
    const p = await pointAt(page, target.x, target.y);
    await page.mouse.click(p.px, p.py);
    const t = await waitFor('the target in a snapshot', () => view(page,
      () => window.flockView.snapshot.targets.find((x) => x.group === 0)), 3000);
    assert(sameF32(t.x, p.world[0]) && sameF32(t.y, p.world[1]),
      `target (${t.x}, ${t.y}), clicked (${p.world[0]}, ${p.world[1]})`);
    target.x = t.x;
    target.y = t.y;
    const d0 = await meanDistance(page, 0, t.x, t.y);
    await sleep(4000);
    const d1 = await meanDistance(page, 0, t.x, t.y);
    console.log(`     group 0 mean distance to its target: ${d0.toFixed(1)} -> ${d1.toFixed(1)} in 4 s`);
    assert(d1 < 0.8 * d0, `mean distance went from ${d0} to ${d1}`);
  });

  const spot = { x: 1150, y: 650 };
  await check('shift-click places an obstacle that the snapshots then carry', async () => {
    const p = await pointAt(page, spot.x, spot.y);
    const r = await view(page, () => window.flockView.obstacleRadius);
    await page.keyboard.down('Shift');
    await page.mouse.click(p.px, p.py);
    await page.keyboard.up('Shift');
    const o = await waitFor('the obstacle in a snapshot', () => view(page, () => window.flockView.snapshot.obstacles[0]), 3000);
    assert(sameF32(o.x, p.world[0]) && sameF32(o.y, p.world[1]) && o.r === r, `obstacle ${JSON.stringify(o)}`);
  });

  await check('right-click places an obstacle too', async () => {
    const p = await pointAt(page, 1400, 200);
    await page.mouse.click(p.px, p.py, { button: 'right' });
    await waitFor('the second obstacle', () => view(page, () => window.flockView.snapshot.obstacles.length === 2), 3000);
    const o = await view(page, () => window.flockView.snapshot.obstacles[1]);
    assert(sameF32(o.x, p.world[0]) && sameF32(o.y, p.world[1]), `obstacle ${JSON.stringify(o)}`);
  });

  await check('alt-click on a boid highlights it', async () => {
    const [[x, y]] = await view(page, () => window.flockView.drawnPositions(1));
    const [cx, cy] = await view(page, ([a, b]) => window.flockView.worldToClient(a, b), [x, y]);
    await page.keyboard.down('Alt');
    await page.mouse.click(cx, cy);
    await page.keyboard.up('Alt');
    const h = await view(page, () => window.flockView.highlight);
    assert(h >= 0, `highlight ${h}`);
    assert((await page.locator('#follow-index').inputValue()) === String(h), 'the follow index box');
  });

  await check('follow keeps the highlighted boid in the middle of the view', async () => {
    await page.locator('#follow').check();
    await sleep(400);
    const h = await view(page, () => window.flockView.highlight);
    const [x, y] = await view(page, (i) => window.flockView.drawnBoid(i), h);
    const [cx, cy] = await view(page, ([a, b]) => window.flockView.worldToClient(a, b), [x, y]);
    const box = await page.locator('#view').boundingBox();
    const off = Math.hypot(cx - (box.x + box.width / 2), cy - (box.y + box.height / 2));
    assert(off < 2, `followed boid ${off.toFixed(1)} px from the centre`);
    await page.locator('#follow').uncheck();
    await page.locator('#btn-fit').click();
  });

  await check('the wheel zooms about the cursor, a drag pans and sends nothing', async () => {
    const at = async (x, y) => view(page, ([a, b]) => window.flockView.worldToClient(a, b), [x, y]);
    const before = await view(page, () => window.flockView.stats.acks);
    const targets = JSON.stringify(await view(page, () => window.flockView.snapshot.targets));
    const [x0, y0] = await at(800, 500);
    const span0 = (await at(900, 500))[0] - x0;
    await page.mouse.move(x0, y0);
    await page.mouse.wheel(0, -400);
    await waitFor('the zoom', async () => (await at(900, 500))[0] - (await at(800, 500))[0] > 1.5 * span0, 2000);
    const [x1, y1] = await at(800, 500);
    assert(Math.hypot(x1 - x0, y1 - y0) < 1, `the point under the cursor moved to (${x1}, ${y1})`);
    await page.mouse.down();
    await page.mouse.move(x0 + 60, y0 + 30, { steps: 6 });
    await page.mouse.up();
    const [x2, y2] = await at(800, 500);
    assert(Math.abs(x2 - x1 - 60) < 1 && Math.abs(y2 - y1 - 30) < 1, `panned by (${x2 - x1}, ${y2 - y1})`);
    await sleep(300);
    assert(JSON.stringify(await view(page, () => window.flockView.snapshot.targets)) === targets, 'a drag moved a target');
    const acks = await view(page, () => window.flockView.stats.acks);
    assert(acks === before, 'a drag sent commands'); // the periodic ping and stats are not counted
    await page.locator('#btn-fit').click();
    const [x3, y3] = await at(800, 500);
    assert(Math.hypot(x3 - x0, y3 - y0) < 1, 'Fit view did not restore the view');
  });

  await check('a refused command shows its error message on screen', async () => {
    await page.locator('#spawn-n').fill('1000');
    await page.locator('#btn-spawn').click();
    await waitFor('the error toast', () => page.locator('#toast').isVisible(), 3000);
    const msg = await page.locator('#toast').textContent();
    const err = await view(page, () => window.flockView.lastError);
    assert(err && err.code === 'capacity' && err.cmd === 'spawn', `lastError ${JSON.stringify(err)}`);
    assert(msg.includes('capacity') && msg.includes(err.message), `toast "${msg}"`);
    await waitFor('the toast to go away', async () => !(await page.locator('#toast').isVisible()), 6000, 200);
  });

  await check('a second group spawned from the page gets its own seek target', async () => {
    await page.locator('#group').fill('1');
    await page.locator('#group').press('Enter');
    await page.locator('#spawn-n').fill('200');
    await page.locator('#btn-spawn').click();
    await waitFor('group 1 in the runs', () => view(page,
      () => window.flockView.snapshot.runs.some((r) => r.group === 1 && r.count === 200)), 3000);
    const p = await pointAt(page, 1300, 800);
    await page.mouse.click(p.px, p.py);
    const t = await waitFor('group 1\'s target', () => view(page,
      () => window.flockView.snapshot.targets.find((x) => x.group === 1)), 3000);
    assert(sameF32(t.x, p.world[0]) && sameF32(t.y, p.world[1]), `target ${JSON.stringify(t)}`);
    const t0 = await view(page, () => window.flockView.snapshot.targets.find((x) => x.group === 0));
    assert(t0 && t0.x === target.x && t0.y === target.y, 'group 0\'s target moved');
  });

  await check(`screenshot saved to ${screenshotPath}`, async () => {
    mkdirSync(dirname(screenshotPath), { recursive: true });
    await page.screenshot({ path: screenshotPath });
    assert(existsSync(screenshotPath), 'no file');
  });

  await check('clicking an obstacle removes it', async () => {
    const o = await view(page, () => window.flockView.snapshot.obstacles[0]);
    const [cx, cy] = await view(page, ([a, b]) => window.flockView.worldToClient(a, b), [o.x + o.r / 3, o.y]);
    await page.mouse.click(Math.round(cx), Math.round(cy));
    await waitFor('the obstacle to be gone', () => view(page,
      (id) => !window.flockView.snapshot.obstacles.some((x) => x.id === id), o.id), 3000);
  });

  await check('pause, step and resume buttons drive the room', async () => {
    await page.locator('#btn-pause').click();
    const t0 = await waitFor('paused snapshots', () => view(page,
      () => window.flockView.snapshot.paused && window.flockView.snapshot.tick), 3000);
    await sleep(300);
    const t1 = await view(page, () => window.flockView.snapshot.tick);
    assert(t1 === t0, `tick moved while paused: ${t0} -> ${t1}`);
    assert(await page.locator('#btn-pause').isDisabled(), 'pause button enabled while paused');
    await page.locator('#btn-step').click();
    await waitFor('the step', () => view(page, (t) => window.flockView.snapshot.tick === t + 1, t1), 3000);
    await page.locator('#btn-resume').click();
    await waitFor('running snapshots', () => view(page,
      (t) => !window.flockView.snapshot.paused && window.flockView.snapshot.tick > t + 3, t1), 3000);
  });

  await check('a parameter slider sends params and is acked', async () => {
    const before = await view(page, () => window.flockView.stats);
    const box = page.locator('#param-list input[name="max_speed"]');
    await box.fill('150');
    await box.press('Enter');
    const slider = page.locator('#param-list input[type="range"][data-param="max_speed"]');
    await waitFor('the slider to follow', async () => (await slider.inputValue()) === '150', 2000);
    await sleep(500);
    const after = await view(page, () => window.flockView.stats);
    assert(after.errors === before.errors, `errors ${before.errors} -> ${after.errors}`);
    assert(after.acks > before.acks, 'no ack');
  });

  await check('reset clears targets and obstacles and restarts the tick', async () => {
    const e0 = await view(page, () => window.flockView.snapshot.epoch);
    await page.locator('#btn-reset').click();
    await waitFor('a reset snapshot', () => view(page, (e) => {
      const s = window.flockView.snapshot;
      return s.epoch !== e && s.targets.length === 0 && s.obstacles.length === 0 && s.tick < 60;
    }, e0), 3000);
    const v = await page.locator('#param-list input[name="max_speed"]').inputValue();
    assert(v === '100', `max_speed box shows ${v} after reset`);
  });

  await check('the page says it reconnects when flockd restarts, and does', async () => {
    consoleLog.phase = 'restart';
    const port = server.port;
    const status = await server.stop();
    assert(status === 0, `flockd exited with ${status} on SIGTERM`);
    await waitFor('the reconnect banner', async () => {
      const b = page.locator('#banner');
      return (await b.isVisible()) && /reconnect/i.test(await b.textContent());
    }, 3000);
    console.log(`     banner: "${await page.locator('#banner').textContent()}"`);
    await sleep(1500); // a few failed attempts: the backoff grows
    server = await startFlockd(flockdBin, args, port);
    await waitFor('the new connection', () => view(page,
      () => window.flockView.connected && window.flockView.frames.drawnBoids === 1000), 15000);
    await waitFor('the banner to go', async () => !(await page.locator('#banner').isVisible()), 2000);
    consoleLog.phase = 'after';
  });

  return { page, server };
}

// Before the page's scripts: a WebSocket whose binary messages are
// corrupted while window.corruptFrames > 0 (one byte of the deflate body
// flipped), as a broken proxy or a decoder bug would hand them over.
const CORRUPTER = () => {
  const Native = window.WebSocket;
  window.corruptFrames = 0;
  window.WebSocket = class extends Native {
    set onmessage(fn) {
      super.onmessage = (e) => {
        if (window.corruptFrames > 0 && typeof e.data !== 'string' && e.data.byteLength > 200) {
          window.corruptFrames--;
          const b = new Uint8Array(e.data.slice(0));
          b[100 + ((b.length - 100) >> 1)] ^= 0x55;
          fn(new MessageEvent('message', { data: b.buffer }));
          return;
        }
        fn(e);
      };
    }

    get onmessage() {
      return super.onmessage;
    }
  };
};

async function recoveryChecks(browser, consoleLog) {
  const server = await startFlockd(flockdBin, ['--boids', '1000', '--seed', '3']);
  consoleLog.phase = 'corrupt';
  const page = await openViewer(browser, `${server.url}${V2}`, consoleLog, CORRUPTER);
  const stats = () => view(page, () => window.flockView.stats);
  try {
    await check('a refused version 2 frame is not drawn: the page asks for a key frame and carries on', async () => {
      await waitFor('frames drawn', () => view(page, () => window.flockView.frames.drawnBoids === 1000), 8000);
      await sleep(500);
      const before = await stats();
      await view(page, () => { window.corruptFrames = 1; });
      await waitFor('the refusal', async () => (await stats()).badSnapshots > before.badSnapshots, 3000);
      await waitFor('a key frame asked for', async () => (await stats()).keyframesAsked >= 1, 3000);
      await sleep(1000); // the key frame and the deltas on it
      const a = await stats();
      const tickA = (await view(page, () => window.flockView.snapshot)).tick;
      await sleep(1000);
      const b = await stats();
      const tickB = (await view(page, () => window.flockView.snapshot)).tick;
      assert(b.badSnapshots === a.badSnapshots, `still refusing: ${a.badSnapshots} -> ${b.badSnapshots}`);
      assert(b.decodeCount - a.decodeCount >= 10 && tickB > tickA, `stalled: ${JSON.stringify([a, b])}`);
      const d = await view(page, () => window.flockView.boids());
      const s = await view(page, () => window.flockView.snapshot);
      const inside = d.x.every((x, i) => x >= 0 && x < s.width && d.y[i] >= 0 && d.y[i] < s.height);
      assert(inside && d.x.length === 1000, 'the drawn state is not a valid world');
      assert((await page.locator('#st-keyframes').textContent()).startsWith(`${b.keyframesAsked} asked`), 'panel');
    });
    await check('frames refused in a row ask for key frames at most twice a second', async () => {
      const a = await stats();
      await view(page, () => { window.corruptFrames = 40; }); // two seconds at 20 Hz
      await waitFor('the corrupted frames', () => view(page, () => window.corruptFrames === 0), 5000);
      const b = await stats();
      const asked = b.keyframesAsked - a.keyframesAsked;
      assert(b.badSnapshots - a.badSnapshots >= 35, `refused ${b.badSnapshots - a.badSnapshots}`);
      assert(asked >= 2 && asked <= 6, `${asked} key frames asked in about 2 s`);
      await waitFor('frames again', async () => (await stats()).decodeCount > b.decodeCount + 5, 3000);
    });
    await check('?protocol=1 takes version 1 snapshots', async () => {
      const p1 = await openViewer(browser, `${server.url}?protocol=1`, consoleLog);
      try {
        await waitFor('frames drawn', () => view(p1, () => window.flockView.frames.drawnBoids === 1000), 8000);
        const w = await view(p1, () => window.flockView.welcome);
        const st = await view(p1, () => window.flockView.stats);
        assert(w.protocol === 1 && st.protocol === 1 && st.badSnapshots === 0, JSON.stringify(st));
      } finally {
        await p1.close();
      }
    });
  } finally {
    await page.close();
    const status = await server.stop();
    consoleLog.phase = 'after';
    await check('flockd shuts down cleanly after the corrupted frames', async () => {
      assert(status === 0, `flockd exited with ${status}`);
    });
  }
}

async function perfRun(browser, n, consoleLog) {
  const server = await startFlockd(flockdBin, ['--boids', String(n), '--capacity', '16384']);
  const page = await openViewer(browser, `${server.url}${V2}`, consoleLog);
  try {
    await waitFor(`${n} boids drawn`, () => view(page, (k) => window.flockView.frames.drawnBoids === k, n), 10000);
    await sleep(2000); // warm up the JIT and the playout clock
    const m = await measure(page, 5000);
    const shot = screenshotPath.replace(/(\.png)?$/, `-${n / 1000}k.png`);
    await page.screenshot({ path: shot });
    console.log(`     screenshot: ${shot}`);
    return m;
  } finally {
    await page.close();
    await server.stop();
  }
}

// ---- main -------------------------------------------------------------------------

async function functionalPart(browser, consoleLog) {
  const { page, server } = await functionalChecks(browser, consoleLog);
  await page.close();
  await check('flockd shuts down cleanly after the session', async () => {
    const status = await server.stop();
    assert(status === 0, `flockd exited with ${status}`);
  });
}

async function timingPart(browser, consoleLog) {
  const perf = {};
  for (const n of [1000, 10000]) {
    await check(`render loop and decode at ${n} boids`, async () => {
      const m = await perfRun(browser, n, consoleLog);
      perf[n] = m;
      console.log(`     ${n} boids: frame work ${m.workMs.toFixed(2)} ms, frame interval ${m.intervalMs.toFixed(2)} ms ` +
        `(${m.fps.toFixed(1)} fps), decode ${m.decodeMs.toFixed(3)} ms/snapshot, ` +
        `${m.snapshotRate.toFixed(1)} snapshots/s, ${(m.bytesPerSec / 1e3).toFixed(0)} kB/s, ` +
        `skipped ${m.skipped}, playout holds ${m.holds}`);
      assert(m.drawn === n, `drew ${m.drawn} boids`);
      assert(m.frames > 50, `only ${m.frames} frames in 5 s`);
      assert(m.holds <= 0.05 * m.frames, `${m.holds} of ${m.frames} frames ran out of snapshots`);
    });
  }
  if (perf[1000] && perf[10000]) {
    console.log(`PERF frame_ms_1k=${perf[1000].workMs.toFixed(2)} frame_ms_10k=${perf[10000].workMs.toFixed(2)} ` +
      `fps_1k=${perf[1000].fps.toFixed(1)} fps_10k=${perf[10000].fps.toFixed(1)} ` +
      `decode_ms_1k=${perf[1000].decodeMs.toFixed(3)} decode_ms_10k=${perf[10000].decodeMs.toFixed(3)}`);
  }
}

async function main() {
  if (badOption || (!runFunctional && !runTiming)) fatal(`bad options ${options.join(' ')} (usage: ${USAGE})`);
  const browser = await launchBrowser(flockdBin, USAGE);
  const consoleLog = [];
  consoleLog.phase = 'main';
  try {
    if (runFunctional) await functionalPart(browser, consoleLog);
    if (runFunctional) await recoveryChecks(browser, consoleLog);
    if (runTiming) await timingPart(browser, consoleLog);
    await closingChecks(consoleLog);
  } finally {
    await browser.close();
    killServers();
  }
  finish(anyFailed() ? 1 : 0);
}

main().catch(crashed);
