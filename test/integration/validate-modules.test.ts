import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN, PAUSE_IMAGE, TEST_IMAGE, unique } from './helpers.js';

// What a command loads is paid at every start (issue 33): `validate` reads no pod uid, so it must
// not load node:crypto, which only uids (and apply's set id) hash with. No engine is asked.
const dir = mkdtempSync(join(tmpdir(), 'podrun-validate-modules-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('validate loads only what it uses', () => {
  it('never loads node:crypto for pods that name no uid', () => {
    const preload = join(dir, 'loaded.cjs');
    writeFileSync(
      preload,
      "process.on('exit', () => process.stderr.write(`\\nloaded: ${process.moduleLoadList.filter((m) => / crypto$/.test(m)).join(',')}\\n`));\n",
    );
    const pod = join(dir, 'p.yaml');
    writeFileSync(pod, 'apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: modules}\nspec:\n  containers: [{name: c, image: busybox:1}]\n');
    const r = spawnSync(process.execPath, ['--require', preload, BIN, '--state-dir', join(dir, 'state'), 'validate', pod], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain('valid');
    expect(r.stderr).toMatch(/\nloaded: \n/);
  });
});

describe('get and apply load no HTTP stack, logger or timing module they do not use', () => {
  // They read the engine over a plain socket (src/base/plain-get.ts); apply's driver logs nothing
  // (pino brought worker_threads), and its relist clock is not performance.now() (perf_hooks); the
  // engine client (dockerode) is run on its first call, which a read never makes. The engine is
  // asked only to list: no pod of this state dir exists. Apply's list is on its way (connected, so
  // its request written) before the manifests are read, so the engine answers while they are parsed.
  it('lists and plans without node:http, worker_threads, perf_hooks or dockerode, and lists before it reads', () => {
    const preload = join(dir, 'loaded-engine.cjs');
    writeFileSync(
      preload,
      [
        "const fs = require('node:fs'); const net = require('node:net'); const seen = [];",
        'const read = fs.readFileSync; fs.readFileSync = function (p, ...a) { if (String(p).endsWith("/dockerode.cjs")) seen.push("dockerode"); return read.call(this, p, ...a); };',
        'const open = fs.openSync; fs.openSync = function (p, ...a) { if (String(p).endsWith(".yaml") && !seen.includes("manifest")) seen.push("manifest"); return open.call(this, p, ...a); };',
        'const connect = net.Socket.prototype.connect; net.Socket.prototype.connect = function (...a) { this.once("connect", () => seen.push("connected")); return connect.apply(this, a); };',
        "process.on('exit', () => process.stderr.write(`\\nloaded: ${process.moduleLoadList.filter((m) => / (http|https|worker_threads|perf_hooks)$/.test(m)).join(',')}\\nseen: ${seen.join(',')}\\n`));",
      ].join('\n'),
    );
    const ns = unique('modules');
    const pod = join(dir, 'q.yaml');
    writeFileSync(pod, `apiVersion: v1\nkind: Pod\nmetadata: {name: q, namespace: ${ns}}\nspec:\n  containers: [{name: c, image: ${TEST_IMAGE}}]\n`);
    const run = (...args: string[]) =>
      spawnSync(
        process.execPath,
        ['--require', preload, BIN, '--state-dir', join(dir, 'state-engine'), '--pause-image', PAUSE_IMAGE, '--node-ip', '127.0.0.1', ...args],
        { encoding: 'utf8' },
      );
    const got = run('get', 'pods', '-n', ns);
    expect(got.status, got.stderr).toBe(0);
    expect(got.stderr).toMatch(/\nloaded: \nseen: connected\n/);
    const planned = run('apply', '--dry-run', pod);
    expect(planned.status, planned.stderr).toBe(0);
    expect(planned.stdout).toContain('q');
    expect(planned.stderr).toMatch(/\nloaded: \nseen: connected,manifest\n/);
  });
});
