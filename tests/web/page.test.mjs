// The page's files as flockd serves them: every module parses, every file
// index.html names exists, imports resolve inside client/web, and nothing
// is loaded from another origin (no CDN).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const WEB = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', 'client', 'web');
const JS = join(WEB, 'js');
const modules = readdirSync(JS).filter((f) => f.endsWith('.js'));

for (const f of modules) {
  test(`js/${f} should parse as an ES module`, () => {
    execFileSync(process.execPath, ['--check', join(JS, f)], { stdio: 'pipe' });
  });

  test(`js/${f} should import only files of the page`, () => {
    const src = readFileSync(join(JS, f), 'utf8');
    for (const m of src.matchAll(/^import\s[^;]*?from\s+'([^']+)'/gms)) {
      assert.match(m[1], /^\.\//, `${f} imports ${m[1]}`);
      assert.ok(existsSync(join(JS, m[1])), `${f} imports missing ${m[1]}`);
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
  for (const f of [...modules.map((m) => join(JS, m)), join(WEB, 'css', 'viewer.css')]) {
    assert.doesNotMatch(readFileSync(f, 'utf8'), /https?:\/\//, f);
  }
});
