import { describe, expect, it } from 'vitest';
import { criTestBed } from './cri-engine.js';
import { TEST_IMAGE, unique } from './helpers.js';

// A CRI runtime restarts nothing by itself, so `apply` with no agent cannot leave pods to it as it
// does on Docker: it says so once, on stderr, however many pods it applies, and the pods still
// come up (the worker asks the runtime for no restart policy it would drop).
const { cri, world } = criTestBed();

describe('apply with no agent on containerd (CRI)', () => {
  it('says once, for several pods, that restarts and probes need podrun run', async () => {
    const ns = unique('crinote');
    const names = [unique('a'), unique('b'), unique('c')];
    const docs = names.map(
      (name) => `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  containers: [{name: app, image: ${TEST_IMAGE}, command: [sleep, '3600']}]
`,
    );
    const file = world.write(`${ns}.yaml`, docs.join('---\n'));
    const applied = await cri(['apply', '-f', file, '--timeout', '60s']);
    expect(applied.code, `${applied.out}\n${applied.err}`).toBe(0);
    const notes = applied.err.split('\n').filter((l) => l.startsWith('podrun: note:'));
    expect(notes).toHaveLength(1);
    expect(notes[0]).toContain('restarts no container by itself');
    expect(notes[0]).toContain('`podrun run`');
    expect(applied.out).toContain('3 pods ready');

    const gone = await cri(['delete', 'pods', '--all', '-n', ns, '--grace-period', '0']);
    expect(gone.code, gone.err).toBe(0);
  }, 120_000);
});
