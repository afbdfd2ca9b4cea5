import { describe, expect, it } from 'vitest';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { EngineBed } from './engine-beds.js';
import { TEST_IMAGE, unique, until } from './helpers.js';

/** preStop before the stop signal, and SIGKILL at the end of the grace period, on one engine bed. */
export function terminationSuite(bed: EngineBed): void {
  const ns = unique('term');
  const world = { dir: bed.world.dir, write: (name: string, text: string): string => bed.world.write(name, text), cli: bed.cli };

  describe(`${bed.tag} termination`, () => {
    it('runs preStop before the stop signal', async () => {
      const name = unique('prestop');
      const shared = join(world.dir, unique('shared'));
      mkdirSync(shared);
      const file = world.write(
        `${name}.yaml`,
        `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 3600
  containers:
  - name: c
    image: ${TEST_IMAGE}
    command: [sh, -c, 'trap "echo term >> /shared/log; exit 0" TERM; echo started >> /shared/log; while true; do sleep 0.1; done']
    lifecycle:
      preStop: {exec: {command: [sh, -c, 'echo prestop >> /shared/log; sleep 1']}}
    volumeMounts: [{name: s, mountPath: /shared}]
  volumes: [{name: s, hostPath: {path: ${shared}}}]
`,
      );
      expect((await world.cli('apply', file)).code).toBe(0);
      await until('the container to start', async () => (readFileSync(join(shared, 'log'), 'utf8').includes('started') ? true : undefined));
      // It exited on SIGTERM: waiting out the hour of grace would outlast the test.
      const d = await world.cli('delete', '-f', file);
      expect(d.code, d.err).toBe(0);
      expect(readFileSync(join(shared, 'log'), 'utf8')).toBe('started\nprestop\nterm\n');
    });

    it('ends the grace period with SIGKILL for a container that ignores SIGTERM', async () => {
      const name = unique('stubborn');
      const shared = join(world.dir, unique('shared'));
      mkdirSync(shared);
      const file = world.write(
        `${name}.yaml`,
        `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 3
  containers:
  - name: c
    image: ${TEST_IMAGE}
    command: [sh, -c, 'trap "echo ignored-term >> /shared/log" TERM; echo started >> /shared/log; while true; do sleep 0.1; done']
    volumeMounts: [{name: s, mountPath: /shared}]
  volumes: [{name: s, hostPath: {path: ${shared}}}]
`,
      );
      expect((await world.cli('apply', file)).code).toBe(0);
      await until('the container to start', async () => (readFileSync(join(shared, 'log'), 'utf8').includes('started') ? true : undefined));
      const started = Date.now();
      const d = await world.cli('delete', '-f', file);
      const took = Date.now() - started;
      expect(d.code, d.err).toBe(0);
      expect(readFileSync(join(shared, 'log'), 'utf8')).toBe('started\nignored-term\n');
      // Not before the grace period's end; that the kill came at all, the delete's return shows.
      expect(took).toBeGreaterThanOrEqual(3000);
      expect(await bed.containers(ns, name)).toEqual([]);
    });
  });
}
