import { isAscii } from 'node:buffer';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// bin/podrun runs dist/bundle: the engine client's dependencies that podrun never uses (gRPC and
// protobuf for BuildKit, ssh2 for ssh:// engines, tar-fs for build contexts) are left out of it,
// and package.json declares nothing podrun does not import.
const REPO = fileURLToPath(new URL('../..', import.meta.url));

describe('what podrun ships and loads', () => {
  it('leaves the unused engine-client code out of the bundle', () => {
    const dir = join(REPO, 'dist/bundle');
    const files = readdirSync(dir).filter((f) => f.endsWith('.mjs') || f.endsWith('.cjs'));
    // podrun's CRI client speaks gRPC on Node's own HTTP/2 (src/runtime/cri/grpc-h2.ts): no gRPC package at all.
    const text = files.map((f) => readFileSync(join(dir, f), 'utf8')).join('\n');
    // A string from the code of each: present in the bundle only if that code is.
    for (const [what, marker] of [
      // Its user agent.
      ['@grpc/grpc-js', 'grpc-node-js'],
      ['ssh2', 'SSH-2.0-'],
      ['protobufjs', 'Long.fromBits'],
      ['tar-fs', 'dmode'],
      ['cpu-features', 'cpu-features.node'],
    ])
      expect(text.includes(marker!), what).toBe(false);
  });

  it('runs the CLI as one CommonJS file whose V8 code cache, written at build, V8 takes', () => {
    const dir = join(REPO, 'dist/bundle');
    const { runCachedScript } = createRequire(import.meta.url)(join(dir, 'cached-script.cjs')) as typeof import('../../src/base/cached-script.js');
    for (const name of ['podrun', 'commander', 'js-yaml', 'dockerode', 'pod-validator', 'validate']) {
      const loaded = runCachedScript(dir, name);
      expect(loaded.cacheRejected, name).toBe(false);
      // ASCII, so that a start reads its text as Latin-1, not through UTF-8's decoder (sourceText).
      expect(isAscii(readFileSync(join(dir, `${name}.cjs`))), name).toBe(true);
    }
    // node:vm gives such a script no dynamic import(): each one (Node's modules loaded on use) must be a require.
    for (const name of ['podrun.cjs', 'validate.cjs']) expect(readFileSync(join(dir, name), 'utf8'), name).not.toMatch(/\bimport\(/);
    expect(readFileSync(join(REPO, 'bin/podrun'), 'utf8')).toContain("runCachedScript(require('node:path').join(__dirname, '../dist/bundle'), name)");
  });

  it("writes a command's lines without loading Node's stream, net or tty modules, and the same lines", () => {
    // A preload that lists, at exit, the Node modules the process loaded (Node's own record).
    const tmp = mkdtempSync(join(tmpdir(), 'podrun-loads-'));
    try {
      const preload = join(tmp, 'loads.cjs');
      writeFileSync(preload, "process.on('exit', () => require('node:fs').writeFileSync(process.env.LOADS_OUT, process.moduleLoadList.join('\\n')));");
      const out = join(tmp, 'loads.txt');
      const args = ['--state-dir', tmp, '--node-ip', '127.0.0.1', 'validate', join(REPO, 'test/fixtures/static-pods'), join(REPO, 'test/fixtures/invalid')];
      const r = spawnSync(process.execPath, ['-r', preload, join(REPO, 'bin/podrun'), ...args], { env: { ...process.env, LOADS_OUT: out }, encoding: 'utf8' });
      const loaded = readFileSync(out, 'utf8').split('\n');
      // (Node's stream modules still load here: node:crypto, for the pods' uids, brings them.)
      for (const m of ['NativeModule net', 'NativeModule tty', 'NativeModule internal/fs/sync_write_stream', 'NativeModule internal/fs/streams'])
        expect(loaded, m).not.toContain(m);
      // The lines are those of a run whose streams were made (a stderr that is a stream from the start).
      const viaStreams = spawnSync(
        process.execPath,
        ['-e', `process.stdout; process.stderr; require(${JSON.stringify(join(REPO, 'bin/podrun'))})`, '--', join(REPO, 'bin/podrun'), ...args],
        { encoding: 'utf8' },
      );
      expect(r.status).toBe(1);
      expect(r.stderr).toContain('invalid YAML');
      expect([r.status, r.stdout, r.stderr]).toEqual([viaStreams.status, viaStreams.stdout, viaStreams.stderr]);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('answers the plain `podrun version` from its own small file, with the whole program’s lines', () => {
    const tmp = mkdtempSync(join(tmpdir(), 'podrun-version-'));
    try {
      // A preload that lists, at exit, the files the process required.
      const preload = join(tmp, 'required.cjs');
      writeFileSync(preload, "process.on('exit', () => require('node:fs').writeFileSync(process.env.LOADS_OUT, Object.keys(require.cache).join('\\n')));");
      const out = join(tmp, 'required.txt');
      const env = Object.fromEntries(Object.entries(process.env).filter(([n]) => !n.startsWith('PODRUN_')));
      env.DOCKER_HOST = `unix://${join(tmp, 'no-engine.sock')}`;
      const dir = join(REPO, 'dist/bundle');
      const program = `require(${JSON.stringify(join(dir, 'cached-script.cjs'))}).runCachedScript(${JSON.stringify(dir)}, 'podrun').exports.start()`;
      for (const words of [['version'], ['version', '--client']]) {
        const r = spawnSync(process.execPath, ['-r', preload, join(REPO, 'bin/podrun'), ...words], { env: { ...env, LOADS_OUT: out }, encoding: 'utf8' });
        const required = readFileSync(out, 'utf8').split('\n');
        expect(required).toContain(join(dir, 'version.cjs'));
        expect(required).not.toContain(join(dir, 'cached-script.cjs'));
        const whole = spawnSync(process.execPath, ['-e', program, '--', join(REPO, 'bin/podrun'), ...words], { env, encoding: 'utf8' });
        expect(r.stdout).toContain('podrun ');
        expect([r.status, r.stdout, r.stderr]).toEqual([whole.status, whole.stdout, whole.stderr]);
      }
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('answers the plain `podrun validate PATH...` from its own file, with the whole program’s lines', () => {
    const tmp = mkdtempSync(join(tmpdir(), 'podrun-validate-'));
    try {
      // A preload that lists, at exit, the scripts node:vm compiled (how bin/podrun runs its bundles).
      const preload = join(tmp, 'scripts.cjs');
      writeFileSync(
        preload,
        "const vm = require('node:vm'); const S = vm.Script; const seen = []; vm.Script = function (src, o) { seen.push(o.filename); return new S(src, o); }; process.on('exit', () => require('node:fs').writeFileSync(process.env.LOADS_OUT, seen.join('\\n')));",
      );
      const out = join(tmp, 'scripts.txt');
      const env = Object.fromEntries(Object.entries(process.env).filter(([n]) => !n.startsWith('PODRUN_')));
      const dir = join(REPO, 'dist/bundle');
      const program = `require(${JSON.stringify(join(dir, 'cached-script.cjs'))}).runCachedScript(${JSON.stringify(dir)}, 'podrun').exports.start()`;
      const pod = 'apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: busybox:1.36}]}\n';
      for (const [words, input] of [
        [['validate', join(REPO, 'manifests')], ''],
        [['validate', join(REPO, 'test/fixtures/static-pods'), join(REPO, 'test/fixtures/invalid')], ''],
        [['validate', join(tmp, 'missing.yaml')], ''],
        [['validate', '-'], pod],
      ] as const) {
        const r = spawnSync(process.execPath, ['-r', preload, join(REPO, 'bin/podrun'), ...words], {
          env: { ...env, LOADS_OUT: out },
          input,
          encoding: 'utf8',
        });
        const compiled = readFileSync(out, 'utf8').split('\n');
        expect(compiled, words.join(' ')).toContain(join(dir, 'validate.cjs'));
        expect(compiled, words.join(' ')).not.toContain(join(dir, 'podrun.cjs'));
        const whole = spawnSync(process.execPath, ['-e', program, '--', join(REPO, 'bin/podrun'), ...words], { env, input, encoding: 'utf8' });
        expect(r.stdout + r.stderr, words.join(' ')).not.toBe('');
        expect([r.status, r.stdout, r.stderr], words.join(' ')).toEqual([whole.status, whole.stdout, whole.stderr]);
      }
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('ends quietly, with the exit code of cat, when its reader goes away', async () => {
    const tmp = mkdtempSync(join(tmpdir(), 'podrun-epipe-'));
    try {
      // The reader is gone before podrun's first line (15 KiB of them).
      const r = await new Promise<{ code: number | null; err: string }>((resolve) => {
        const p = spawn(join(REPO, 'bin/podrun'), ['--state-dir', tmp, 'explain', 'pod', '--recursive'], { stdio: ['ignore', 'pipe', 'pipe'] });
        let err = '';
        p.stderr.on('data', (c: Buffer) => (err += c.toString()));
        p.stdout.destroy();
        p.on('close', (code) => resolve({ code, err }));
      });
      expect(r).toEqual({ code: 0, err: '' });
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('declares only dependencies that the code imports', () => {
    const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    const sources = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [readFileSync(join(dir, e.name), 'utf8')] : [],
      );
    const code = sources(join(REPO, 'src')).join('\n');
    for (const dep of Object.keys(pkg.dependencies)) expect(code.includes(`from '${dep}`) || code.includes(`import('${dep}`), dep).toBe(true);
  });
});
