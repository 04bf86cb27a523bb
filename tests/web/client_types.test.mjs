// The client library's TypeScript declarations (client/js/index.d.ts,
// written by hand) against the library and the protocol schema: every
// export of src/index.js is declared and nothing else is; every command
// of the schema has its method on Client, taking exactly the schema's
// arguments (optional where the schema does not require them) and
// promising its ack's members; `npm pack` packs what the package needs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import * as library from '../../client/js/src/index.js';

const JS = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'client', 'js');
const dts = readFileSync(join(JS, 'index.d.ts'), 'utf8');
const pkg = JSON.parse(readFileSync(join(JS, 'package.json'), 'utf8'));

const declared = new Set([...dts.matchAll(/^export declare (?:function|class|const) (\w+)/gm)].map((m) => m[1]));

/** The body of `interface NAME ... { }` in the declarations, with what it extends. */
function interfaceBody(name) {
  const m = new RegExp(`^export interface ${name}(?: extends (\\w+))? \\{\\n([\\s\\S]*?)^\\}`, 'm').exec(dts);
  assert.ok(m, `interface ${name} is declared`);
  return (m[1] ? interfaceBody(m[1]) : '') + m[2];
}

/** {name: optional} of the members a type names: object literals, interfaces, & and Record<string, ...>. */
function members(type) {
  const out = {};
  const literal = /\{([^{}]*)\}/g;
  for (const m of type.matchAll(literal)) {
    for (const f of m[1].matchAll(/(\w+)(\??):/g)) out[f[1]] = f[2] === '?';
  }
  for (const name of type.replace(literal, '').match(/\b[A-Z]\w+\b/g) || []) {
    const isRecord = new RegExp(`^export type ${name} = Record<`, 'm').test(dts);
    if (['Promise', 'Record'].includes(name) || isRecord) continue;
    for (const f of interfaceBody(name).matchAll(/^\s+(\w+)(\??):/gm)) out[f[1]] = f[2] === '?';
  }
  return out;
}

test('package.json should point at the module and the declarations', () => {
  assert.equal(pkg.types, './index.d.ts');
  assert.equal(pkg.exports['.'].types, './index.d.ts');
  assert.equal(pkg.exports['.'].default, './src/index.js');
  assert.ok(pkg.files.includes('index.d.ts') && pkg.files.includes('src/'));
});

test('npm pack should pack the module, the declarations and the README', () => {
  const [packed] = JSON.parse(execFileSync('npm', ['pack', '--dry-run', '--json', '--loglevel=error'], { cwd: JS, encoding: 'utf8' }));
  const files = packed.files.map((f) => f.path);
  for (const f of ['package.json', 'README.md', 'index.d.ts', 'src/index.js', 'src/schema.js', 'src/client.js']) {
    assert.ok(files.includes(f), `${f} in ${files}`);
  }
  assert.ok(!files.some((f) => f.startsWith('node_modules')), 'no node_modules');
});

test('every export of the library should be declared, and only those', () => {
  const exported = Object.keys(library).sort();
  assert.deepEqual([...declared].sort(), exported);
});

for (const c of library.schema.commands) {
  const method = library.methodName(c.name);
  test(`Client.${method} should take ${c.name}'s arguments and promise its ack`, () => {
    const m = new RegExp(`^  ${method}\\((args\\??): (.+?), options\\?: CommandOptions\\): Promise<(.+)>;$`, 'm').exec(dts);
    assert.ok(m, `Client.${method} is declared`);
    const required = c.args.filter((a) => a.required);
    // params needs one registry parameter at least.
    assert.equal(m[1] === 'args?', required.length === 0 && !c.registry, 'args are optional exactly when none is required');
    const args = members(m[2]);
    // Any members (open_args: game, §14.2), else none at all.
    if (c.args.length === 0) assert.match(m[2], c.open_args ? /^Record<string, unknown>$/ : /^Record<string, never>$/);
    assert.deepEqual(Object.keys(args).sort(), c.args.map((a) => a.name).sort(), 'argument names');
    for (const a of c.args) assert.equal(args[a.name], !a.required, `${a.name} optional`);
    if (c.registry) assert.match(m[2], /ParamValues/, 'registry parameters');
    const ack = members(m[3]);
    assert.ok('tick' in ack, 'the ack has tick');
    for (const [name, spec] of Object.entries(c.ack)) {
      assert.ok(name in ack, `the ack has ${name}`);
      assert.equal(ack[name], Boolean(spec.optional), `${name} optional`);
    }
  });
}
