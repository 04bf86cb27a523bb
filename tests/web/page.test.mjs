// The page's files as flockd serves them: every module parses, every file
// index.html names exists, imports resolve inside client/web (the client
// library's modules included: client/web/lib is a link to client/js/src),
// and nothing is loaded from another origin (no CDN).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, realpathSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const WEB = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', 'client', 'web');
const JS = join(WEB, 'js');
const LIB = join(WEB, 'lib');
const jsFiles = (dir) => readdirSync(dir).filter((f) => f.endsWith('.js')).map((f) => join(dir, f));
const modules = [...jsFiles(JS), ...jsFiles(LIB)];
const shown = (path) => relative(WEB, path);

test('lib/ should be the client library\'s modules, the viewer\'s only copy of them', () => {
  assert.equal(realpathSync(LIB), resolve(WEB, '..', 'js', 'src'));
  for (const f of ['decoder.js', 'decoder_v2.js', 'connection.js']) {
    assert.ok(existsSync(join(LIB, f)), `lib/${f}`);
    assert.ok(!existsSync(join(JS, f)), `js/${f} is a second copy`);
  }
});

for (const path of modules) {
  test(`${shown(path)} should parse as an ES module`, () => {
    execFileSync(process.execPath, ['--check', path], { stdio: 'pipe' });
  });

  test(`${shown(path)} should import only files of the page`, () => {
    const src = readFileSync(path, 'utf8');
    for (const m of src.matchAll(/^(?:import|export)\s[^;]*?from\s+'([^']+)'/gms)) {
      assert.match(m[1], /^\.\.?\//, `${shown(path)} imports ${m[1]}`);
      const target = resolve(dirname(path), m[1]);
      assert.ok(!relative(WEB, target).startsWith('..'), `${shown(path)} imports ${m[1]}, outside the page`);
      assert.ok(existsSync(target), `${shown(path)} imports missing ${m[1]}`);
    }
  });
}

test('index.html should name only files that exist, all on the same origin', () => {
  const html = readFileSync(join(WEB, 'index.html'), 'utf8');
  const refs = [...html.matchAll(/\b(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
  assert.ok(refs.includes('js/main.js') && refs.includes('css/viewer.css'), refs.join(', '));
  for (const r of refs) {
    if (r.startsWith('data:')) continue;
    assert.doesNotMatch(r, /^[a-z]+:|^\/\//i, `external reference ${r}`);
    assert.ok(existsSync(join(WEB, r)), `missing ${r}`);
  }
  assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/, 'inline script (flockd sends script-src \'self\')');
  assert.doesNotMatch(html, /\sstyle="/, 'inline style (flockd sends style-src \'self\')');
});

test('no file of the page should fetch from another origin', () => {
  for (const f of [...modules, join(WEB, 'css', 'viewer.css')]) {
    assert.doesNotMatch(readFileSync(f, 'utf8'), /https?:\/\//, f);
  }
});
