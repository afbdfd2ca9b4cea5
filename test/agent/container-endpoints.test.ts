import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { containerEndpoint } from '../../src/agent/container-endpoints.js';
import type { ContainerSample } from '../../src/stats/summary.js';
import { FakeEngine } from '../fakes/fake-engine.js';

// /metrics/cadvisor names each container by its cgroup's path: the engine says where it puts
// them (Docker's docker/<id> or docker-<id>.scope, a CRI runtime its own), not the endpoint.

const sample: ContainerSample = {
  id: 'app1',
  name: 'app',
  type: 'app',
  pod: { name: 'web', namespace: 'demo', uid: 'u-1' },
  image: 'nginx:1.27',
  engineName: 'k8s_app',
  stats: { time: '2026-12-01T10:00:00.000Z', cpu: { usageNs: 1e9 }, memory: { usageBytes: 1e6, workingSetBytes: 1e6 } },
};

describe('the cadvisor endpoint', () => {
  it('names containers as the engine names their cgroups', async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'podrun-endpoints-'));
    try {
      const engine = new FakeEngine({ stateDir });
      const { text } = await containerEndpoint('cadvisor', {
        samples: async () => [sample],
        node: () => Promise.reject(new Error('not asked')),
        cgroups: () => engine.containerCgroups(),
        probes: async () => '',
        fsDevice: async () => undefined,
      });
      expect(text).toMatch(/^container_cpu_usage_seconds_total\{[^}]*id="\/fake\/app1"/m);
      expect(text).not.toContain('/docker/');
    } finally {
      rmSync(stateDir, { recursive: true, force: true });
    }
  });
});
