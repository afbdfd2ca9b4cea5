import { readdirSync, readFileSync } from 'node:fs';
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
    // gRPC is podrun's own for the CRI client: in a file of its own, loaded only on a CRI runtime.
    const GRPC = 'grpc-grpc-js.cjs';
    expect(readFileSync(join(dir, GRPC), 'utf8')).toContain('grpc-node-js');
    const text = files
      .filter((f) => f !== GRPC)
      .map((f) => readFileSync(join(dir, f), 'utf8'))
      .join('\n');
    // A string from the code of each: present in the bundle only if that code is.
    for (const [what, marker] of [
      // Its user agent (podrun's own client names channel options, such as grpc.max_receive_message_length).
      ['@grpc/grpc-js', 'grpc-node-js'],
      ['ssh2', 'SSH-2.0-'],
      ['protobufjs', 'Long.fromBits'],
      ['tar-fs', 'dmode'],
      ['cpu-features', 'cpu-features.node'],
    ]) expect(text.includes(marker!), what).toBe(false);
  });

  it('runs the CLI as one CommonJS file whose V8 code cache, written at build, V8 takes', () => {
    const dir = join(REPO, 'dist/bundle');
    const { runCachedScript } = createRequire(import.meta.url)(join(dir, 'cached-script.cjs')) as typeof import('../../src/base/cached-script.js');
    for (const name of ['podrun', 'commander', 'js-yaml', 'dockerode', 'pod-validator']) {
      const loaded = runCachedScript(dir, name);
      expect(loaded.cacheRejected, name).toBe(false);
    }
    // node:vm gives such a script no dynamic import(): each one (Node's modules loaded on use) must be a require.
    expect(readFileSync(join(dir, 'podrun.cjs'), 'utf8')).not.toMatch(/\bimport\(/);
    expect(readFileSync(join(REPO, 'bin/podrun'), 'utf8')).toContain("runCachedScript(require('node:path').join(__dirname, '../dist/bundle'), 'podrun')");
  });

  it('declares only dependencies that the code imports', () => {
    const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    const sources = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [readFileSync(join(dir, e.name), 'utf8')] : []));
    const code = sources(join(REPO, 'src')).join('\n');
    for (const dep of Object.keys(pkg.dependencies)) expect(code.includes(`from '${dep}`) || code.includes(`import('${dep}`), dep).toBe(true);
  });
});
