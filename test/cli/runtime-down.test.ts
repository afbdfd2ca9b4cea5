import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import { startServer, type AgentView } from '../../src/server/server.js';
import { runWords } from './run-io.js';

// Every read verb with the runtime down exits 3 (the engine's fault) with one line that names the
// runtime at its endpoint: no empty table, no "No resources found" with exit 0. The runtime is an
// endpoint with nothing behind it: a CRI socket path, a Docker host's socket. An agent that is up
// while its runtime is away sends the verbs to the runtime, and they say the same.

const dir = mkdtempSync(join(tmpdir(), 'podrun-runtime-down-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const manifest = join(dir, 'web.yaml');
writeFileSync(manifest, 'apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers:\n  - {name: c, image: busybox}\n');

const VERBS: readonly (readonly string[])[] = [
  ['get', 'pods'],
  ['describe', 'pod', 'web'],
  ['logs', 'web'],
  ['exec', 'web', '--', 'true'],
  ['top', 'pods'],
  ['images', '-f', manifest],
];

const RUNTIMES = [
  {
    name: 'a CRI runtime',
    flags: ['--container-runtime-endpoint', `unix://${dir}/containerd.sock`],
    names: `the container runtime at unix://${dir}/containerd.sock`,
  },
  { name: 'the Docker engine', flags: ['--docker-host', `unix://${dir}/docker.sock`], names: `the Docker engine at unix://${dir}/docker.sock` },
];

function expectRuntimeDown(r: { code: number; out: string; err: string }, names: string, verb: string): void {
  expect(r.code, `${verb}: ${r.err}`).toBe(3);
  expect(r.out, verb).toBe('');
  const lines = r.err.trimEnd().split('\n');
  expect(lines, verb).toHaveLength(1);
  expect(lines[0], verb).toContain(`cannot reach ${names}`);
}

describe('read verbs with the runtime down', () => {
  for (const rt of RUNTIMES)
    it(`exit 3 with one line naming ${rt.name}, no agent running`, async () => {
      const stateDir = mkdtempSync(join(dir, 'state-'));
      for (const verb of VERBS) {
        const r = await runWords(main, ['--state-dir', stateDir, ...rt.flags, ...verb]);
        expectRuntimeDown(r, rt.names, verb.join(' '));
      }
    });

  it('exit 3 with one line naming the runtime when the agent answers that its runtime is away', async () => {
    const stateDir = mkdtempSync(join(dir, 'state-'));
    const rt = RUNTIMES[0]!;
    const none = (): Promise<never> => Promise.reject(new Error('not asked here'));
    // The agent as it is with the runtime away: its cache empty, its last readings none.
    const view: AgentView = {
      healthy: () => false,
      unhealthy: () => `engine unreachable: cri: cannot reach ${rt.names}: connect ENOENT`,
      podList: async () => [],
      events: () => [],
      metrics: none,
      containerMetrics: none,
      node: none,
      statsSummary: async () => ({ node: {}, pods: [] }),
      collect: none,
      collectImages: none,
      deletePods: none,
      pullImages: none,
      applyPods: none,
    };
    const stop = await startServer(view, { stateDir });
    try {
      for (const verb of VERBS) {
        const r = await runWords(main, ['--state-dir', stateDir, ...rt.flags, ...verb]);
        expectRuntimeDown(r, rt.names, verb.join(' '));
      }
    } finally {
      await stop();
    }
  });
});
