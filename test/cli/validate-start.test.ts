import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import type { Io } from '../../src/cli/context.js';
import { runWords } from './run-io.js';
import { plainValidate, validatePlain } from '../../src/cli/validate-start.js';

// bin/podrun answers a plain `podrun validate PATH...` with validate-start.ts instead of the
// program: for any words and environment, what it prints and its exit code must be the program's.

const dir = mkdtempSync(join(tmpdir(), 'podrun-vds-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const ROOT = join(import.meta.dirname, '../..');

/** As bin/podrun chooses: validate-start.ts when it takes the words, else the program. */
const asBin = (argv: string[], io: Io): Promise<number> => {
  const paths = plainValidate(argv, {});
  return paths ? validatePlain(paths, io) : main(argv, io);
};

/** A pod asking for what each of the program's policy flags decides, so a default that differs shows. */
function pod(name: string, spec: string): string {
  const path = join(dir, `${name}.yaml`);
  writeFileSync(path, `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}}\nspec:\n${spec}`);
  return path;
}

describe("podrun validate's own start", () => {
  it('takes only the plain words: validate and paths (- for stdin), and no PODRUN_* variable', () => {
    const argv = (...w: string[]): string[] => ['node', 'podrun', ...w];
    expect(plainValidate(argv('validate', 'a.yaml', 'dir', '-'), {})).toEqual(['a.yaml', 'dir', '-']);
    expect(plainValidate(argv('validate', 'a.yaml'), { DOCKER_HOST: 'tcp://h:1' })).toEqual(['a.yaml']);
    for (const words of [
      ['validate'],
      ['validate', '-f', 'a.yaml'],
      ['validate', 'a.yaml', '--help'],
      ['validate', '--', 'a.yaml'],
      ['--allow-privileged', 'false', 'validate', 'a.yaml'],
      ['validate', 'a.yaml', '--allow-privileged=false'],
      ['validates', 'a.yaml'],
      ['apply', 'a.yaml'],
      [],
    ])
      expect(plainValidate(argv(...words), {}), words.join(' ')).toBeUndefined();
    expect(plainValidate(argv('validate', 'a.yaml'), { PODRUN_CONFIG: '/etc/podrun/config.yaml' })).toBeUndefined();
    expect(plainValidate(argv('validate', 'a.yaml'), { PODRUN_ALLOW_PRIVILEGED: 'false' })).toBeUndefined();
  });

  it('prints what the program prints and exits as it does, under the policy its flags default to', async () => {
    const c = (extra: string): string => `  containers:\n  - name: c\n    image: busybox:1.36\n${extra}`;
    const cases = [
      [join(ROOT, 'manifests')],
      [join(ROOT, 'test/fixtures/static-pods'), join(ROOT, 'manifests/web.yaml')],
      [join(ROOT, 'test/fixtures/invalid')],
      [join(ROOT, 'test/fixtures/kitchen-sink.yaml')],
      [join(dir, 'missing.yaml')],
      [pod('privileged', c('    securityContext: {privileged: true}\n'))],
      [pod('host-network', `  hostNetwork: true\n  hostPID: true\n${c('')}`)],
      [pod('host-path', `${c('')}  volumes: [{name: v, hostPath: {path: /srv}}]\n`)],
      [pod('sysctl', `  securityContext: {sysctls: [{name: net.core.somaxconn, value: '1024'}]}\n${c('')}`)],
    ];
    for (const paths of cases) {
      const words = ['validate', ...paths];
      expect(plainValidate(['node', 'podrun', ...words], {}), words.join(' ')).toEqual(paths);
      const program = await runWords(main, words);
      expect(await runWords(asBin, words), words.join(' ')).toEqual(program);
    }
  });
});
