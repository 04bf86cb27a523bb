// The Node scripting example and the client library's trial against real
// flockd processes: client/examples/steer.mjs tours its waypoints and
// leaves the room as it found it (no boids of its group, no obstacle, no
// target, the group's parameters as they were), also when it fails and
// when it gets SIGINT half way; the trial in client/js/README.md runs as
// written there (for 3 s instead of 20) and prints its polarizations.
// Nothing here judges time: a waypoint is awaited with steer.mjs's own
// deadline (120 s each), and the checks read the room once the script is
// done.
//
// usage: node examples.e2e.mjs FLOCKD
// Prints one line per check and last "N passed, N failed"; exits 1 on failure.

import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  ROOT, check, assert, finish, anyFailed, crashed, startFlockd, killServers,
} from './harness.mjs';
import { connect } from '../../client/js/src/index.js';

const [flockdBin] = process.argv.slice(2);
const STEER = join(ROOT, 'client', 'examples', 'steer.mjs');
const GROUP = 3;

/** Runs node with `args`; `onLine(line, child)` sees its output as it comes. Resolves to {status, out, err}. */
function run(args, onLine = () => {}) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => {
      out += d;
      for (const line of String(d).split('\n')) if (line) onLine(line, child);
    });
    child.stderr.on('data', (d) => { err += d; });
    child.on('exit', (code, signal) => resolve({ status: code ?? signal, out, err }));
  });
}

/** What a room shows of group g: its boids, obstacles, target and parameters (as a fresh welcome lists them). */
async function roomState(url, g) {
  const c = await connect(url, { role: 'viewer' });
  // The first frame may be one encoded before the script's last commands
  // were applied; one of a later tick than the welcome's shows them.
  let s;
  do s = await c.nextSnapshot(); while (s.tick <= c.welcome.tick);
  const state = {
    boids: s.of(g).count, obstacles: s.obstacles.length, target: s.targets.some((t) => t.group === g),
    params: { ...c.welcome.values, ...(c.welcome.groups || {})[g] },
  };
  await c.close();
  return state;
}

function assertLeftAsFound(before, after, what) {
  assert(after.boids === before.boids, `${what}: ${after.boids} boids of group ${GROUP} left, ${before.boids} before`);
  assert(after.obstacles === before.obstacles, `${what}: ${after.obstacles} obstacles, ${before.obstacles} before`);
  assert(!after.target, `${what}: group ${GROUP} still has a target`);
  assert(JSON.stringify(after.params) === JSON.stringify(before.params),
    `${what}: group ${GROUP}'s parameters ${JSON.stringify(after.params)}, before ${JSON.stringify(before.params)}`);
}

async function steerTour() {
  const server = await startFlockd(flockdBin, ['--boids', '300']);
  await check('steer.mjs tours every waypoint and leaves the room as it found it', async () => {
    const before = await roomState(server.url, GROUP);
    const r = await run([STEER, '--url', server.url.replace('http', 'ws'), '--waypoints', '3', '--group', String(GROUP)]);
    assert(r.status === 0, `exit ${r.status}: ${r.err}`);
    const reached = [...r.out.matchAll(/reached waypoint (\d)\/3/g)].map((m) => Number(m[1]));
    assert(reached.join() === '1,2,3', `reached ${reached.join()}:\n${r.out}`);
    assert(/removed obstacle \d+/.test(r.out) && /despawned 40 boids/.test(r.out), r.out);
    assertLeftAsFound(before, await roomState(server.url, GROUP), 'after the tour');
  });
  await server.stop();
}

async function steerFailures() {
  const server = await startFlockd(flockdBin, ['--boids', '200']);
  const url = server.url.replace('http', 'ws');
  await check('steer.mjs that cannot reach a waypoint in time exits 1 and cleans up', async () => {
    const before = await roomState(server.url, GROUP);
    const r = await run([STEER, '--url', url, '--timeout', '0.3', '--group', String(GROUP)]);
    assert(r.status === 1 && /not reached/.test(r.err), `exit ${r.status}: ${r.err}`);
    assertLeftAsFound(before, await roomState(server.url, GROUP), 'after the failure');
  });
  await check('steer.mjs interrupted with SIGINT half way exits 130 and cleans up', async () => {
    const before = await roomState(server.url, GROUP);
    let sent = false;
    const r = await run([STEER, '--url', url, '--group', String(GROUP)], (line, child) => {
      if (!sent && /reached waypoint 1\//.test(line)) {
        sent = true;
        child.kill('SIGINT');
      }
    });
    assert(sent && r.status === 130, `exit ${r.status} (SIGINT sent: ${sent}): ${r.err}\n${r.out}`);
    assert(/despawned 40 boids/.test(r.out), r.out);
    assertLeftAsFound(before, await roomState(server.url, GROUP), 'after SIGINT');
  });
  await check('steer.mjs exits 3 when it cannot connect and 2 on a bad option', async () => {
    const r = await run([STEER, '--url', 'ws://127.0.0.1:1/ws']);
    assert(r.status === 3 && /cannot connect/.test(r.err), `exit ${r.status}: ${r.err}`);
    const u = await run([STEER, '--group', '256']);
    assert(u.status === 2, `exit ${u.status}: ${u.err}`);
  });
  await server.stop();
}

async function trial() {
  const server = await startFlockd(flockdBin, ['--boids', '100']);
  const dir = mkdtempSync(join(tmpdir(), 'flockd-trial-'));
  await check('the trial in client/js/README.md runs as written (3 s instead of 20) in 25 lines at most', async () => {
    const readme = readFileSync(join(ROOT, 'client', 'js', 'README.md'), 'utf8');
    const m = /<!-- trial -->\n```js\n([\s\S]*?)```\n<!-- \/trial -->/.exec(readme);
    assert(m, 'no trial block in the README');
    const lines = m[1].trimEnd().split('\n');
    assert(lines.length <= 25, `${lines.length} lines`);
    const lib = pathToFileURL(join(ROOT, 'client', 'js', 'src', 'index.js')).href;
    const script = m[1].replace("from 'flockd-client'", `from '${lib}'`)
      .replace('const SECONDS = 20;', 'const SECONDS = 3;')
      .replace("'ws://localhost:8080'", `'${server.url.replace('http', 'ws')}'`);
    assert(script.includes('SECONDS = 3;') && script.includes(lib), 'the trial was not adapted');
    writeFileSync(join(dir, 'trial.mjs'), script);
    const r = await run([join(dir, 'trial.mjs')]);
    assert(r.status === 0, `exit ${r.status}: ${r.err}`);
    const p = /^(\d+) snapshots; polarization (\d\.\d\d) before, (\d\.\d\d) after$/m.exec(r.out);
    assert(p && Number(p[1]) >= 40, `output: ${r.out}`);
    console.log(`     ${r.out.trim()}`);
  });
  rmSync(dir, { recursive: true, force: true });
  await server.stop();
}

async function main() {
  if (!flockdBin) {
    console.log('usage: node examples.e2e.mjs FLOCKD');
    process.exit(2);
  }
  await Promise.all([steerTour(), steerFailures(), trial()]);
  killServers();
  finish(anyFailed() ? 1 : 0);
}

main().catch(crashed);
