import { describe, expect, it } from 'vitest';
import { metricGrown } from './agent-helpers.js';
import type { EngineBed } from './engine-beds.js';
import { freePort, until } from './helpers.js';

// The runtime stopped under a running agent and started again (an upgrade of containerd, a
// crash): meanwhile /healthz answers 503 saying which runtime, where, and what failed, and every
// read verb exits 3 with one line naming the runtime (`top` printed "No resources found" from the
// agent's empty readings, exit 0); once the runtime answers again the agent dials it within a
// relist period and is healthy. Its dials are counted here by its own runtime-call metric; per
// period, with a fake clock, on the fake engine (test/pleg/cache.test.ts).

export function runtimeReturnSuite(bed: EngineBed): void {
  describe(`the agent while its runtime is away and back ${bed.tag}`, () => {
    it('says why /healthz fails, read verbs exit 3 naming the runtime, healthy again once the runtime answers', async () => {
      const runtime = bed.runtime;
      if (!runtime) throw new Error('this suite stops its bed runtime: a CRI bed');
      const port = await freePort();
      const healthz = (): Promise<{ status: number; body: string }> =>
        fetch(`http://127.0.0.1:${port}/healthz`).then(
          async (r) => ({ status: r.status, body: await r.text() }),
          () => ({ status: 0, body: '' }),
        );
      const manifest = bed.world.write(
        'runtime-return.yaml',
        'apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers:\n  - {name: c, image: busybox}\n',
      );
      const verbs = [
        ['get', 'pods'],
        ['describe', 'pod', 'web'],
        ['logs', 'web'],
        ['exec', 'web', '--', 'true'],
        ['top', 'pods'],
        ['images', '-f', manifest],
      ];
      const agent = bed.agent(['--http-port', String(port)]);
      try {
        await agent.started();
        await until('healthz ok', async () => ((await healthz()).status === 200 ? true : undefined));

        await runtime.stop();
        // The body names the runtime (containerd, as it said its name), its endpoint and the dial's error.
        const down = await until('healthz to say the runtime is away', async () => {
          const h = await healthz();
          return h.status === 503 && h.body.includes('cannot reach') ? h.body : undefined;
        });
        expect(down).toMatch(/^engine unreachable: containerd: cannot reach the container runtime at /);
        expect(down).toContain(runtime.endpoint);
        for (const verb of verbs) {
          const r = await bed.bin(verb);
          expect(r.code, `${verb.join(' ')}: ${r.err}`).toBe(3);
          expect(r.out, verb.join(' ')).toBe('');
          const lines = r.err.trimEnd().split('\n');
          expect(lines, verb.join(' ')).toHaveLength(1);
          expect(lines[0], verb.join(' ')).toContain(`cannot reach the container runtime at ${runtime.endpoint}`);
        }

        // The agent dials the runtime once a relist period while it is away, each dial a list that
        // fails: counted, they are the outage's periods (a back-off doubling to 10 s made six in 30 s).
        await metricGrown(agent, 'podrun_runtime_operations_errors_total', 8, { labels: ['operation_type="list_containers"'], timeoutMs: 30_000 });

        await runtime.start();
        // A dial a second: generous room for a loaded machine, far under what a back-off would take to matter.
        await until('healthz ok again', async () => ((await healthz()).status === 200 ? true : undefined), 30_000);
        expect(agent.proc.exitCode).toBeNull();
      } catch (err) {
        throw new Error(`${(err as Error).message}\nagent log:\n${agent.logs().slice(-4000)}`);
      } finally {
        await agent.stop();
      }
    }, 240_000);
  });
}
