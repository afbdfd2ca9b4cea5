import { describe, expect, it } from 'vitest';
import { bareId, engineBed } from './engine-beds.js';
import { TEST_IMAGE, unique, until } from './helpers.js';

// A probe's or hook's exec in a container that stopped never ran: each engine says so as data,
// from the container's state (Docker: its 409 to the exec; a CRI runtime: ExecSync refused and
// the container not running), not from its words. A command that exits 126 in a running
// container is that command's failure.
for (const kind of ['docker', 'cri'] as const) {
  const bed = engineBed(kind);
  describe(`${bed.tag} an exec in a container that is not running`, () => {
    it('is said never to have run; a 126 in a running one is an exit', async () => {
      const ns = unique('notrun');
      const name = unique('p');
      const file = bed.world.write(
        `${name}.yaml`,
        `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 0
  containers: [{name: app, image: ${TEST_IMAGE}, command: [sleep, '3600']}]
`,
      );
      const applied = await bed.cli('apply', '-f', file, '--timeout', '60s');
      expect(applied.code, applied.err).toBe(0);
      const app = (await bed.containers(ns, name)).find((c) => c.name === 'app' && c.state === 'running');
      expect(app).toBeDefined();
      const id = bareId(app!.id);
      const rt = await bed.engine();
      expect(await rt.exec(id, ['sh', '-c', 'exit 126'], 10_000)).toEqual({ exitCode: 126, output: '' });
      await rt.stopContainer(id, 0);
      await until('the container to stop', async () =>
        (await bed.containers(ns, name)).some((c) => c.id === app!.id && c.state === 'exited') ? true : undefined,
      );
      expect(await rt.exec(id, ['true'], 10_000)).toMatchObject({ notRun: 'container-not-running' });
      const gone = await bed.cli('delete', 'pod', name, '-n', ns, '--grace-period', '0');
      expect(gone.code, gone.err).toBe(0);
    }, 120_000);
  });
}
