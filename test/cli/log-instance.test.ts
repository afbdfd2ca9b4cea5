import { describe, expect, it } from 'vitest';
import { logInstance } from '../../src/cli/logs.js';
import type { ObservedContainer } from '../../src/runtime/observed.js';
import { desired, observedFor } from '../fixtures/pods.js';

const POD = (policy: string) => `apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  restartPolicy: ${policy}
  containers:
  - {name: app, image: busybox:1.36}
`;

/** The pod with `app`'s instances, newest first (as the engine's list is grouped). */
function withInstances(policy: string, instances: Partial<ObservedContainer>[]): ReturnType<typeof observedFor> {
  const d = desired(POD(policy));
  const o = observedFor(d);
  const base = o.containers[0]!;
  o.containers = instances.map((x, i) => ({ ...base, id: `app-${instances.length - i}`, restartCount: instances.length - 1 - i, ...x }));
  return o;
}

const pick = (o: ReturnType<typeof observedFor>, previous: boolean): string | undefined => logInstance(o, 'app', previous)?.c.id;

describe('logInstance: which instance logs reads, as the kubelet picks it', () => {
  it('running: the current instance, and with --previous the one before it', () => {
    const o = withInstances('Always', [{ state: 'running' }, { state: 'exited', exitCode: 3 }]);
    expect(pick(o, false)).toBe('app-2');
    expect(pick(o, true)).toBe('app-1');
  });

  it('in back-off (the next instance not made yet): the instance that just died, for both', () => {
    const o = withInstances('Always', [
      { state: 'exited', exitCode: 3 },
      { state: 'exited', exitCode: 3 },
    ]);
    expect(pick(o, true)).toBe('app-2');
    expect(pick(o, false)).toBe('app-2');
    // After GC kept only it.
    const alone = withInstances('Always', [{ state: 'exited', exitCode: 3 }]);
    expect(pick(alone, true)).toBe('app-1');
  });

  it('the next instance made but never started: the instance that died before it', () => {
    const o = withInstances('Always', [{ state: 'created' }, { state: 'exited', exitCode: 3 }]);
    expect(pick(o, true)).toBe('app-1');
    expect(pick(o, false)).toBe('app-1');
  });

  it('terminated for good (Never, or OnFailure after success): the last instance, and --previous the one before, if any', () => {
    const never = withInstances('Never', [{ state: 'exited', exitCode: 3 }]);
    expect(pick(never, false)).toBe('app-1');
    expect(pick(never, true)).toBeUndefined();
    const done = withInstances('OnFailure', [
      { state: 'exited', exitCode: 0 },
      { state: 'exited', exitCode: 1 },
    ]);
    expect(pick(done, false)).toBe('app-2');
    expect(pick(done, true)).toBe('app-1');
  });

  it('a first instance still running has no previous one', () => {
    const o = withInstances('Always', [{ state: 'running' }]);
    expect(pick(o, true)).toBeUndefined();
  });
});
