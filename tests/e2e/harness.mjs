// What the end-to-end scripts share: a check runner that prints one line
// per check and "N passed, N failed" last, polling, real flockd processes
// on ephemeral loopback ports (killed when the script exits), headless
// Chromium (Debian's, driven by playwright-core) and opening the page.
// Each script is its own process, so the counters are module state.

import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';

export const HERE = dirname(fileURLToPath(import.meta.url));
export const ROOT = resolve(HERE, '..', '..');
export const WEB_ROOT = join(ROOT, 'client', 'web');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];
export const VIEWPORT = { width: 1280, height: 800 };

let passed = 0;
let failed = 0;

/** Whether any check has failed so far. */
export const anyFailed = () => failed > 0;

/** Prints the totals and exits with `code`. */
export function finish(code) {
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(code);
}

export function fatal(message) {
  console.log(`FAIL setup: ${message}`);
  failed++;
  finish(1);
}

/** Runs check `name`; prints ok or FAIL with the error; resolves to whether it passed. */
export async function check(name, fn) {
  const t0 = Date.now();
  try {
    await fn();
    passed++;
    console.log(`ok   ${name} (${Date.now() - t0} ms)`);
    return true;
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}: ${e && e.stack ? e.stack : e}`);
    return false;
  }
}

/** Counts an error that escaped every check, then exits. */
export function crashed(e) {
  console.log(`FAIL unexpected: ${e && e.stack ? e.stack : e}`);
  failed++;
  killServers();
  finish(1);
}

export function assert(cond, message) {
  if (!cond) throw new Error(message);
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Polls fn() (async) until it returns a truthy value; returns that value. */
export async function waitFor(what, fn, timeoutMs = 5000, everyMs = 50) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    last = await fn();
    if (last) return last;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

// ---- flockd -----------------------------------------------------------------

const servers = new Set();

/** Starts flockd binary `bin` with `args`; resolves to {proc, port, url, stop()}. */
export function startFlockd(bin, args, port = 0) {
  return new Promise((resolveStart, reject) => {
    const proc = spawn(bin, ['--port', String(port), '--host', '127.0.0.1', '--web-root', WEB_ROOT, ...args],
      { stdio: ['ignore', 'pipe', 'pipe'] });
    servers.add(proc);
    let stderr = '';
    proc.stderr.on('data', (d) => { stderr += d; });
    const timer = setTimeout(() => reject(new Error(`flockd did not start: ${stderr}`)), 10000);
    proc.on('exit', (code) => {
      servers.delete(proc);
      clearTimeout(timer);
      reject(new Error(`flockd exited with ${code}: ${stderr}`));
    });
    createInterface({ input: proc.stdout }).on('line', (line) => {
      const m = line.match(/flockd listening on (https?):\/\/[^:]+:(\d+)/);
      if (!m) return;
      clearTimeout(timer);
      const p = Number(m[2]);
      resolveStart({
        proc, port: p, url: `${m[1]}://127.0.0.1:${p}/`,
        // Resolves to flockd's exit status (0 after an orderly SIGTERM shutdown).
        stop: () => new Promise((done) => {
          if (proc.exitCode !== null || proc.signalCode !== null) return done(proc.exitCode);
          proc.once('exit', (code) => done(code));
          proc.kill('SIGTERM');
          setTimeout(() => proc.kill('SIGKILL'), 5000).unref();
        }),
      });
    });
  });
}

/**
 * The checks every script ends with: no console errors (those of the
 * phase 'restart' matching a refused connection are expected while flockd
 * is down), and, for each of `servers` ({name, server}), an orderly exit
 * with status 0 on SIGTERM.
 */
export async function closingChecks(consoleLog, servers = []) {
  await check('no console errors (other than refused connections while flockd was down)', async () => {
    const expected = /WebSocket connection to .* failed|net::ERR_[A-Z_]+/;
    const bad = consoleLog.filter((e) => e.phase !== 'restart' || !expected.test(e.text));
    assert(bad.length === 0, `console errors:\n${bad.map((e) => `  [${e.phase}] ${e.text}`).join('\n')}`);
  });
  for (const { name, server } of servers) {
    await check(`${name} shuts down cleanly`, async () => {
      const status = await server.stop();
      assert(status === 0, `flockd exited with ${status}`);
    });
  }
}

export function killServers() {
  for (const p of servers) p.kill('SIGKILL');
}

process.on('exit', killServers);
process.on('SIGINT', () => { killServers(); process.exit(130); });

// ---- browser and page ---------------------------------------------------------

/**
 * Checks that flockd binary `bin` and Chromium exist and playwright-core is
 * installed (a failed setup check and exit otherwise); resolves to the
 * launched browser. `usage`: the script's usage line.
 */
export async function launchBrowser(bin, usage) {
  if (!bin || !existsSync(bin)) fatal(`flockd binary not found: "${bin || ''}" (usage: ${usage})`);
  if (!existsSync(CHROMIUM)) {
    fatal(`Chromium not found at ${CHROMIUM}: install Debian's package (apt-get install -y chromium, or make deps) or set CHROMIUM`);
  }
  let chromium;
  try {
    ({ chromium } = await import('playwright-core'));
  } catch (e) {
    fatal(`playwright-core is not installed in ${HERE}: run "npm ci" there (make deps does) — ${e.message}`);
  }
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
}

/**
 * Records the JSON commands `page` sends over its WebSockets, what it
 * sends by itself left out: its periodic ping and stats, and the view a
 * version 3 page keeps up to date as its camera or budget changes
 * (viewer3.e2e.mjs checks those).
 */
export function recordCommands(page) {
  const sent = [];
  page.on('websocket', (ws) => ws.on('framesent', (f) => {
    if (typeof f.payload !== 'string') return;
    const msg = JSON.parse(f.payload);
    if (msg.cmd !== 'ping' && msg.cmd !== 'stats' && msg.cmd !== 'view') sent.push(msg);
  }));
  return sent;
}

/** Evaluates fn(arg) in the page. */
export const view = (page, fn, arg) => page.evaluate(fn, arg);

/**
 * Opens `url` in a new page of `browser` (or of a browser context, which
 * brings its own viewport); console errors and uncaught exceptions go to
 * `consoleLog` tagged with its current `phase`. `pageOptions` go to
 * browser.newPage (e.g. ignoreHTTPSErrors for a self-signed certificate).
 */
export async function openViewer(browser, url, consoleLog, initScript = null, pageOptions = {}) {
  const page = await browser.newPage({ viewport: VIEWPORT, ...pageOptions });
  if (initScript) await page.addInitScript(initScript); // runs before the page's scripts
  page.on('console', (m) => {
    if (m.type() === 'error') consoleLog.push({ text: m.text(), phase: consoleLog.phase });
  });
  page.on('pageerror', (e) => consoleLog.push({ text: `uncaught: ${e.message}`, phase: consoleLog.phase }));
  await page.goto(url);
  return page;
}

/** Page coordinates (whole pixels) of world point (x, y), and the world point under them. */
export async function pointAt(page, x, y) {
  const [cx, cy] = await view(page, ([wx, wy]) => window.flockView.worldToClient(wx, wy), [x, y]);
  const px = Math.round(cx);
  const py = Math.round(cy);
  const world = await view(page, ([a, b]) => window.flockView.clientToWorld(a, b), [px, py]);
  return { px, py, world };
}

/** Whether a and float32(b) agree to 1e-3: a world point sent as JSON, read back from a snapshot. */
export const sameF32 = (a, b) => Math.abs(a - Math.fround(b)) <= 1e-3;
