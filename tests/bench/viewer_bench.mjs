#!/usr/bin/env node
// viewer_bench.mjs FLOCKD [BUILD_DIR] [--boids N] [--seconds S] [--warmup W] — the
// viewer on protocol version 3 in headless Chromium (1280 x 800) on a big
// room: flockd --boids N (250,000 by default) --capacity N' --tick-hz 30
// --snapshot-hz 20. Measured for S seconds (5) after W seconds (5), at full
// zoom-out and then zoomed to 1:1 (one world unit a pixel: exact boids):
// frames drawn per second, KB/s received (the frames' bytes), decode and
// draw time, the level of detail the server chose, what was drawn; a
// screenshot of each (BUILD_DIR/bench-viewer-far.png, -1to1.png). The
// targets at full zoom-out: at most 40 KB/s, at least 30 fps, the flock's
// shape visible. Run by hand (`make bench-viewer`); prints one line per
// measure and a JSON line last. Measures what it sees: nothing is tuned
// to pass.
import { join } from 'node:path';

import {
  ROOT, sleep, waitFor, startFlockd, killServers, launchBrowser, view, openViewer,
} from '../e2e/harness.mjs';

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(name);
  return at >= 0 ? Number(args[at + 1]) : fallback;
};
const [bin, buildDir = join(ROOT, 'build')] = args.filter((a, i) => !a.startsWith('--') && !(i > 0 && args[i - 1].startsWith('--')));
const BOIDS = option('--boids', 250000);
const SECONDS = option('--seconds', 5);
const WARMUP = option('--warmup', 5);

const state = (page) => view(page, () => ({
  frames: window.flockView.frames, stats: window.flockView.stats, view: window.flockView.view,
  snapshot: window.flockView.snapshot, drawn: window.flockView.drawn, budget: window.flockView.budget,
}));

// What the page did over `seconds`.
async function measure(page, seconds) {
  const a = await state(page);
  await sleep(seconds * 1000);
  const b = await state(page);
  const frames = b.frames.count - a.frames.count;
  const decodes = b.stats.decodeCount - a.stats.decodeCount;
  const s = b.snapshot;
  return {
    fps: Number(((1000 * (b.frames.intervals - a.frames.intervals)) / (b.frames.intervalMs - a.frames.intervalMs)).toFixed(1)),
    kb_per_s: Number(((b.stats.wireBytes - a.stats.wireBytes) / seconds / 1000).toFixed(1)),
    snapshots_per_s: Number((decodes / seconds).toFixed(1)),
    decode_ms: Number(((b.stats.decodeMsTotal - a.stats.decodeMsTotal) / Math.max(1, decodes)).toFixed(2)),
    draw_ms: Number(((b.frames.workMs - a.frames.workMs) / Math.max(1, frames)).toFixed(2)),
    shift: s.shift,
    sample: s.sample,
    frame_boids: s.boidCount,
    room_boids: s.roomBoids,
    field_cells: b.drawn.fieldCells,
    drawn_boids: b.drawn.boids,
    budget: Math.round(b.budget.bytes),
    budget_lowered_by: b.budget.why,
    view_w: Math.round(b.view.camera.w),
    px: b.view.camera.px,
  };
}

function show(name, m, shot) {
  console.log(`${name}: ${m.fps} fps, ${m.kb_per_s} KB/s, ${m.snapshots_per_s} snapshots/s, decode ${m.decode_ms} ms, `
    + `draw ${m.draw_ms} ms a frame; shift ${m.shift}, sample ${m.sample}: ${m.frame_boids} of ${m.room_boids} boids `
    + `in the frames, ${m.drawn_boids} drawn, ${m.field_cells} field cells; view ${m.view_w} units at ${m.px} px; `
    + `budget ${m.budget} B/s${m.budget_lowered_by ? ` (lowered for ${m.budget_lowered_by})` : ''}; screenshot ${shot}`);
}

async function main() {
  if (!bin) {
    console.error('usage: viewer_bench.mjs FLOCKD [BUILD_DIR] [--boids N] [--seconds S] [--warmup W]');
    process.exit(2);
  }
  const capacity = 2 ** Math.ceil(Math.log2(BOIDS + 1));
  const server = await startFlockd(bin, ['--boids', String(BOIDS), '--capacity', String(capacity), '--tick-hz', '30',
    '--snapshot-hz', '20']);
  const browser = await launchBrowser(bin, 'viewer_bench.mjs FLOCKD [BUILD_DIR]');
  const log = [];
  const result = { boids: BOIDS };
  try {
    const page = await openViewer(browser, server.url, log);
    await page.evaluate(() => localStorage.setItem('flockd.intro.dismissed', '1'));
    await page.reload();
    await waitFor('a frame of the view', async () => {
      const s = await view(page, () => window.flockView.snapshot);
      const a = await view(page, () => window.flockView.view.ack);
      return s && a && s.tick > a.tick;
    }, 60000, 200);
    await sleep(WARMUP * 1000); // the whole room's first frames before the view was acked, the JIT
    const far = await measure(page, SECONDS);
    const farShot = join(buildDir, 'bench-viewer-far.png');
    await page.screenshot({ path: farShot });
    show('full zoom-out', far, farShot);
    result.far = far;

    // One world unit a pixel: the wheel zooms by exp(-deltaY * 0.0015) about the cursor.
    const { camera, ack: farAck } = await view(page, () => window.flockView.view);
    const box = await page.locator('#view').boundingBox();
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await page.mouse.wheel(0, -Math.log(camera.w / camera.px) / 0.0015);
    await waitFor('the 1:1 view\'s frames', async () => {
      const s = await view(page, () => window.flockView.snapshot);
      const a = await view(page, () => window.flockView.view.ack);
      return a.tick > farAck.tick && s.tick > a.tick;
    }, 20000, 200);
    await sleep(2000);
    const near = await measure(page, SECONDS);
    const nearShot = join(buildDir, 'bench-viewer-1to1.png');
    await page.screenshot({ path: nearShot });
    show('1:1', near, nearShot);
    result.one_to_one = near;
    const ok = far.kb_per_s <= 40 && far.fps >= 30;
    console.log(`targets at full zoom-out (<= 40 KB/s, >= 30 fps): ${ok ? 'met' : 'NOT met'}`);
    if (log.length) console.log(`console errors: ${log.map((e) => e.text).join('; ')}`);
  } finally {
    await browser.close();
    await server.stop();
    killServers();
  }
  console.log(JSON.stringify(result));
}

main().catch((e) => {
  console.error(e);
  killServers();
  process.exit(1);
});
