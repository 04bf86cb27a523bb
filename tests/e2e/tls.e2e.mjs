// End-to-end test of the viewer over TLS: flockd serves https:// and
// wss:// on one port (--tls-cert, --tls-key; a throwaway self-signed
// certificate made with openssl, which the browser is told to accept). The
// page loads over https, opens its WebSocket over wss, draws the flock and
// its commands are acked (docker/README.md, "TLS").
//
// usage: node tls.e2e.mjs FLOCKD
// Prints one line per check and last "N passed, N failed"; exits 1 on failure.

import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  check, assert, waitFor, finish, anyFailed, crashed, startFlockd, killServers, launchBrowser, view, openViewer,
  closingChecks,
} from './harness.mjs';

const [flockdBin] = process.argv.slice(2);

/** A self-signed certificate for 127.0.0.1 in dir: [cert, key]. */
function makeCertificate(dir) {
  const crt = join(dir, 'tls.crt');
  const key = join(dir, 'tls.key');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', crt,
    '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
  return [crt, key];
}

async function main() {
  const browser = await launchBrowser(flockdBin, 'node tls.e2e.mjs FLOCKD');
  const dir = mkdtempSync(join(tmpdir(), 'flockd-e2e-tls-'));
  const consoleLog = [];
  consoleLog.phase = 'main';
  try {
    const [crt, key] = makeCertificate(dir);
    const server = await startFlockd(flockdBin, ['--tls-cert', crt, '--tls-key', key, '--boids', '300']);
    assert(server.url.startsWith('https://'), `flockd says it serves ${server.url}`);
    // Notes every WebSocket the page opens, before its scripts run.
    const noteSockets = () => {
      const Native = window.WebSocket;
      window.socketUrls = [];
      window.WebSocket = class extends Native {
        constructor(url, protocols) {
          super(url, protocols);
          window.socketUrls.push(String(url));
        }
      };
    };
    const page = await openViewer(browser, server.url, consoleLog, noteSockets, { ignoreHTTPSErrors: true });
    await check('the page loads over https and connects over wss', async () => {
      await waitFor('the welcome', () => view(page, () => window.flockView.connected), 8000);
      assert(page.url().startsWith('https://'), `page ${page.url()}`);
      const urls = await view(page, () => window.socketUrls);
      // The first view may ride in the query (PROTOCOL.md §12.4).
      assert(urls.length >= 1 && urls.every((u) => u.split('?')[0] === `wss://127.0.0.1:${server.port}/ws`), `sockets ${urls}`);
    });
    await check('the flock is drawn and the room\'s stats arrive', async () => {
      await waitFor('drawn boids', () => view(page, () => window.flockView.frames.drawnBoids >= 300), 8000);
      await waitFor('a measure', () => view(page, () => window.flockView.stats.flock), 5000);
    });
    await check('a command over wss is acked: pause', async () => {
      await page.locator('#btn-pause').click();
      await waitFor('a paused snapshot', () => view(page, () => window.flockView.snapshot &&
        window.flockView.snapshot.paused), 5000);
    });
    await closingChecks(consoleLog, [{ name: 'flockd', server }]);
  } finally {
    await browser.close();
    killServers();
    rmSync(dir, { recursive: true, force: true });
  }
  finish(anyFailed() ? 1 : 0);
}

main().catch(crashed);
