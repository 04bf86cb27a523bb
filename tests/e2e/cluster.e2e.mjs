// End-to-end test of the viewer on a node of a cluster (server/cluster/CLUSTER.md):
// a real nats-server with JetStream on a free loopback port, two flockd
// nodes joined to it, and the page opened on the node that relays
// `default`. When nats-server stops, the page shows a banner saying the
// room is unavailable (PROTOCOL.md §6.6) while its connection stays open;
// when nats-server comes back, the banner goes and the flock moves again.
//
// usage: node cluster.e2e.mjs FLOCKD
// Prints one line per check and last "N passed, N failed"; exits 1 on failure.

import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  check, assert, waitFor, finish, anyFailed, crashed, startFlockd, killServers, launchBrowser, view, openViewer,
  closingChecks, sleep,
} from './harness.mjs';

const [flockdBin] = process.argv.slice(2);

/** nats-server -js on `port` (-1: one it picks) with its store in dir; resolves to {proc, port}. */
async function startNats(dir, port = -1) {
  const ports = join(dir, 'ports');
  rmSync(ports, { recursive: true, force: true });
  mkdirSync(ports);
  const proc = spawn('nats-server', ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', join(dir, 'store'),
    '--ports_file_dir', ports], { stdio: 'ignore' });
  let url = null;
  await waitFor('nats-server\'s ports file', () => {
    const files = readdirSync(ports).filter((f) => f.endsWith('.ports'));
    const text = files.length ? readFileSync(join(ports, files[0]), 'utf8').trim() : '';
    if (text) url = JSON.parse(text).nats[0];
    return url !== null;
  }, 10000);
  return { proc, port: Number(url.split(':').pop()) };
}

function stopNats(nats) {
  return new Promise((done) => {
    if (nats.proc.exitCode !== null || nats.proc.signalCode !== null) return done();
    nats.proc.once('exit', () => done());
    nats.proc.kill('SIGTERM');
  });
}

/** {room: owner node} as node `server` lists them. */
async function owners(server) {
  const res = await fetch(new URL('/api/rooms', server.url));
  const body = await res.json();
  return Object.fromEntries(body.rooms.map((r) => [r.name, r.node]));
}

async function main() {
  const browser = await launchBrowser(flockdBin, 'node cluster.e2e.mjs FLOCKD');
  const dir = mkdtempSync(join(tmpdir(), 'flockd-e2e-cluster-'));
  const consoleLog = [];
  consoleLog.phase = 'main';
  let nats = null;
  try {
    nats = await startNats(dir);
    const url = `nats://127.0.0.1:${nats.port}`;
    const nodes = {};
    for (const id of ['a', 'b']) {
      nodes[id] = await startFlockd(flockdBin, ['--nats', url, '--node-id', id, '--boids', '300',
        '--checkpoint-every', '1']);
    }
    let relay = null;
    await waitFor('both nodes to agree on the owner of default', async () => {
      const [a, b] = [await owners(nodes.a), await owners(nodes.b)];
      if (!a.default || a.default !== b.default) return false;
      relay = a.default === 'a' ? nodes.b : nodes.a;
      return true;
    }, 10000);
    const page = await openViewer(browser, relay.url, consoleLog);
    await check('the page on the relaying node draws the flock, with no banner', async () => {
      await waitFor('drawn boids', () => view(page, () => window.flockView.frames.drawnBoids >= 300), 8000);
      assert(!(await page.locator('#banner').isVisible()), 'a banner is shown');
      assert(await view(page, () => window.flockView.unavailable) === null, 'the room is said unavailable');
    });
    await check('nats-server stopped: a banner says the room is unavailable, the connection stays', async () => {
      await stopNats(nats);
      await waitFor('the banner', () => page.locator('#banner').isVisible(), 5000);
      const text = await page.locator('#banner').textContent();
      assert(/^Room unavailable: .*NATS/.test(text), `banner: "${text}"`);
      console.log(`     banner: "${text}"`);
      assert(await view(page, () => window.flockView.connected), 'the page lost its connection');
      const tick = await view(page, () => window.flockView.snapshot.tick);
      await sleep(1000);
      assert(await view(page, () => window.flockView.snapshot.tick) === tick, 'frames came without NATS');
    });
    await check('nats-server back: the banner goes and the flock moves again', async () => {
      nats = await startNats(dir, nats.port);
      await waitFor('the banner to go', async () => !(await page.locator('#banner').isVisible()), 15000);
      const tick = await view(page, () => window.flockView.snapshot.tick);
      await waitFor('a newer frame', () => view(page, (t) => window.flockView.snapshot.tick > t, tick), 5000);
      // The news that the room is back may come just after its first frames.
      await waitFor('the page to drop "unavailable"', () => view(page, () => window.flockView.unavailable === null), 5000);
    });
    await closingChecks(consoleLog, [{ name: 'node a', server: nodes.a }, { name: 'node b', server: nodes.b }]);
  } finally {
    await browser.close();
    killServers();
    if (nats) nats.proc.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
  finish(anyFailed() ? 1 : 0);
}

main().catch(crashed);
