import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { answeringEndpoints } from '../fakes/answering-endpoint.js';
import { main } from '../../src/cli/main.js';
import type { Io } from '../../src/cli/context.js';
import { runWords } from './run-io.js';
import { plainVersion, printVersion } from '../../src/cli/version-start.js';

// bin/podrun answers the plain `podrun version` with version-start.ts instead of the program: for
// any words and environment, what it prints must be what the program prints.

const sockets = answeringEndpoints('podrun-vs-');
const dir = mkdtempSync(join(tmpdir(), 'podrun-vs-'));
afterEach(() => sockets.close());
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** As bin/podrun chooses: version-start.ts when it takes the words, else the program. */
const asBin = (argv: string[], io: Io): Promise<number> => {
  const plain = plainVersion(argv, process.env);
  return plain ? printVersion(plain.client, io) : main(argv, io);
};

/** Runs with these variables set (undefined: unset), and every other PODRUN_* and DOCKER_HOST unset. */
async function withEnv<T>(vars: Record<string, string | undefined>, f: () => Promise<T>): Promise<T> {
  const names = [...new Set([...Object.keys(process.env).filter((n) => n.startsWith('PODRUN_')), 'DOCKER_HOST', ...Object.keys(vars)])];
  const saved = new Map(names.map((n) => [n, process.env[n]]));
  for (const n of names) {
    const v = vars[n];
    if (v === undefined) delete process.env[n];
    else process.env[n] = v;
  }
  try {
    return await f();
  } finally {
    for (const [n, v] of saved) {
      if (v === undefined) delete process.env[n];
      else process.env[n] = v;
    }
  }
}

describe("podrun version's own start", () => {
  it('takes only the plain words, and no PODRUN_* variable', () => {
    const argv = (...w: string[]): string[] => ['node', 'podrun', ...w];
    expect(plainVersion(argv('version'), {})).toEqual({ client: false });
    expect(plainVersion(argv('version', '--client'), { DOCKER_HOST: 'tcp://h:1' })).toEqual({ client: true });
    for (const words of [
      ['version', '--help'],
      ['version', '-h'],
      ['version', '--client', '--client'],
      ['version', 'x'],
      ['version', '--client=true'],
      ['--docker-host', 'unix:///x', 'version'],
      ['--', 'version'],
      ['versions'],
      [],
    ])
      expect(plainVersion(argv(...words), {}), words.join(' ')).toBeUndefined();
    expect(plainVersion(argv('version'), { PODRUN_CONFIG: '/etc/podrun/config.yaml' })).toBeUndefined();
    expect(plainVersion(argv('version'), { PODRUN_CONTAINER_RUNTIME_ENDPOINT: 'unix:///run/containerd/containerd.sock' })).toBeUndefined();
  });

  it("prints what the program prints, whatever the engine's answer and wherever the address comes from", async () => {
    const good = await sockets.endpoint((s) => s.end('HTTP/1.0 200 OK\r\n\r\n{"Version":"27.1.0","ApiVersion":"1.46"}'));
    const failing = await sockets.endpoint((s) => s.end('HTTP/1.0 500 Internal Server Error\r\n\r\n{}'));
    const config = join(dir, 'config.yaml');
    writeFileSync(config, 'apiVersion: podrun.io/v1alpha1\nkind: PodrunConfiguration\ncontainerRuntimeEndpoint: tcp://127.0.0.1:1\n');
    const cases: { words: string[]; env: Record<string, string | undefined>; plain: boolean }[] = [
      { words: ['version'], env: { DOCKER_HOST: good }, plain: true },
      { words: ['version', '--client'], env: { DOCKER_HOST: good }, plain: true },
      { words: ['version'], env: { DOCKER_HOST: failing }, plain: true },
      { words: ['version'], env: { DOCKER_HOST: `unix://${join(dir, 'none.sock')}` }, plain: true },
      { words: ['version'], env: { DOCKER_HOST: 'tcp://127.0.0.1:1' }, plain: true },
      { words: ['version'], env: { DOCKER_HOST: 'https://127.0.0.1:1' }, plain: true },
      { words: ['version'], env: { DOCKER_HOST: '' }, plain: true },
      // (Not the default socket, unset DOCKER_HOST: that would ask this machine's engine, twice.)
      // The program's: a config file naming the engine, a variable it refuses, an address flag, help.
      { words: ['version'], env: { PODRUN_CONFIG: config }, plain: false },
      { words: ['version'], env: { DOCKER_HOST: good, PODRUN_NODE_IP: 'not-an-ip' }, plain: false },
      { words: ['--docker-host', failing, 'version'], env: { DOCKER_HOST: good }, plain: false },
      { words: ['version', '--help'], env: {}, plain: false },
    ];
    for (const c of cases) {
      await withEnv(c.env, async () => {
        const what = `${JSON.stringify(c.env)} ${c.words.join(' ')}`;
        expect(plainVersion(['node', 'podrun', ...c.words], process.env) !== undefined, what).toBe(c.plain);
        expect(await runWords(asBin, c.words), what).toEqual(await runWords(main, c.words));
      });
    }
  });
});
