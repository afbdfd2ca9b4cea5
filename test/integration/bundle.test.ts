import { readdirSync, readFileSync } from 'node:fs';
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
    const chunks = readdirSync(dir)
      .filter((f) => f.endsWith('.mjs'))
      .map((f) => readFileSync(join(dir, f), 'utf8'));
    // gRPC is podrun's own for the CRI client: in the chunks that hold it, and in no other.
    const cri = chunks.filter((c) => c.includes('runtime.v1.RuntimeService') || c.includes('grpc.max_receive_message_length'));
    expect(cri.some((c) => c.includes('grpc.max_receive_message_length'))).toBe(true);
    expect(chunks.find((c) => c.includes('#!') || c.includes("from 'commander'"))?.includes('grpc.max_receive_message_length') ?? false).toBe(false);
    const text = chunks.filter((c) => !cri.includes(c)).join('\n');
    // A string from the code of each: present in the bundle only if that code is.
    for (const [what, marker] of [
      ['@grpc/grpc-js', 'grpc.max_receive_message_length'],
      ['ssh2', 'SSH-2.0-'],
      ['protobufjs', 'Long.fromBits'],
      ['tar-fs', 'dmode'],
      ['cpu-features', 'cpu-features.node'],
    ]) expect(text.includes(marker!), what).toBe(false);
  });

  it('declares only dependencies that the code imports', () => {
    const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    const sources = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [readFileSync(join(dir, e.name), 'utf8')] : []));
    const code = sources(join(REPO, 'src')).join('\n');
    for (const dep of Object.keys(pkg.dependencies)) expect(code.includes(`from '${dep}`) || code.includes(`import('${dep}`), dep).toBe(true);
  });
});
