import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { EngineBed } from './engine-beds.js';
import { TEST_IMAGE, unique, until } from './helpers.js';
import { container, supervisedDirectory, untilPod } from './lifecycle-helpers.js';

// A CRI runtime writes each container's log where podrun says and never removes it: removing it is
// the kubelet's job (removeContainerLog with the container, the pod's log directory with the pod),
// and so podrun's. Run on containerd 1.6 and 2 (the Docker engines keep their logs themselves).
export function criLogFilesSuite(bed: EngineBed): void {
  const { ns, write } = supervisedDirectory(bed, 'logfiles', ['--crash-backoff-initial', '1s', '--crash-backoff-max', '2s']);
  // engine-beds.ts gives a CRI bed's agent and CLI this --pod-logs-dir.
  const logs = join(bed.world.dir, 'pod-logs');

  describe(`${bed.tag} container log files`, () => {
    it("a crash loop keeps only the logs of the instances the runtime still holds; the pod's log directory goes with the pod", async () => {
      const name = unique('loop');
      write(name, `  containers: [{name: c, image: ${TEST_IMAGE}, command: [sh, -c, 'echo run-$(cat /proc/sys/kernel/random/uuid); exit 1']}]\n`);
      const p = await untilPod(bed, ns, name, 'four restarts', (x) => (container(x, 'c')?.restartCount ?? 0) >= 4, 90_000);
      const podDir = join(logs, `${ns}_${name}_${p.metadata.uid ?? ''}`);
      const held = async (): Promise<string[]> =>
        (await bed.containers(ns, name))
          .filter((c) => c.type !== 'sandbox')
          .map((c) => `${c.restartCount}.log`)
          .sort();
      // Each removal by GC took its log: between two restarts (GC keeps the newest dead instance,
      // for `logs -p`, and the next one may be made already) the logs are those of the instances
      // left, not one per restart.
      await until(
        'one log per instance held, two at most',
        async () => {
          const files = readdirSync(join(podDir, 'c')).sort();
          const now = await held();
          return files.length <= 2 && JSON.stringify(files) === JSON.stringify(now) ? files : undefined;
        },
        30_000,
      );
      expect((await bed.cli('logs', name, '-n', ns, '-p')).out).toMatch(/run-[0-9a-f-]{36}/);

      rmSync(join(bed.world.dir, 'manifests', `${name}.yaml`));
      await until('the pod gone', async () => ((await bed.containers(ns, name)).length === 0 ? true : undefined), 60_000);
      await until('its log directory gone', async () => (existsSync(podDir) ? undefined : true), 30_000);
    }, 180_000);
  });
}
