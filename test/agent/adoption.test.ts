import { describe, expect, it } from 'vitest';
import { Adoption } from '../../src/agent/adoption.js';
import { newPodRecord } from '../../src/agent/pod-record.js';
import { EngineRequestError, kindOfStatus, type EngineErrorKind } from '../../src/runtime/engine-errors.js';
import type { ObservedPod } from '../../src/runtime/observed.js';

// Adopting a container the engine restarts under its own policy: podrun takes the policy over,
// and an engine that cannot change it in place (it says so by the kind of its refusal, whichever
// engine it is) keeps it; any other refusal is an error.

const none = (): undefined => undefined;
const log = { debug: none, info: none, warn: none, error: none };
const pod: ObservedPod = {
  uid: 'u', name: 'p', namespace: 'ns', source: 'file:/p',
  sandboxes: [],
  containers: [{ id: 'c1', dockerName: 'c1', type: 'app', name: 'a', hash: 'h', restartCount: 0, state: 'running', created: 1, image: 'i' }],
};

function engine(refusal?: EngineErrorKind): ConstructorParameters<typeof Adoption>[0] {
  let policy = 'always';
  return {
    restartPolicyOf: async () => policy,
    setRestartPolicy: async (_id, name) => {
      if (refusal) throw new EngineRequestError('update container: no', undefined, refusal);
      policy = name;
    },
  };
}

describe('adoption', () => {
  it('takes over the engine policy, or keeps it where the engine cannot change it, and fails on any other refusal', async () => {
    const taken = newPodRecord();
    await new Adoption(engine(), { finishedAt: none }, log).adopt(taken, pod);
    expect(taken.adopted.get('c1')).toBeUndefined();
    expect(taken.adopted.has('c1')).toBe(true);

    for (const kind of ['unsupported', 'not-found'] as const) {
      const kept = newPodRecord();
      await new Adoption(engine(kind), { finishedAt: none }, log).adopt(kept, pod);
      expect(kept.adopted.get('c1')).toBe('always');
    }
    await expect(new Adoption(engine('failing'), { finishedAt: none }, log).adopt(newPodRecord(), pod)).rejects.toThrow(EngineRequestError);
  });

  it('reads the Docker API statuses as kinds', () => {
    expect([404, 304, 409, 501, 500, 504, 400, undefined].map(kindOfStatus)).toEqual(['not-found', 'unchanged', 'conflict', 'unsupported', 'failing', 'failing', 'refused', 'refused']);
    expect(new EngineRequestError('x', 501).kind).toBe('unsupported');
  });
});
