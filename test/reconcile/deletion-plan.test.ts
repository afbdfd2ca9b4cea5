import { describe, expect, it } from 'vitest';
import type { Pod } from '../../src/manifest/types.js';
import { deletionPlan, graceOverride } from '../../src/reconcile/deletion-plan.js';
import type { ObservedContainer, ObservedPod, ObservedSandbox } from '../../src/runtime/observed.js';

// The deletion plan on plain data: the order of the stops, each container's grace, what is removed.

function container(name: string, type: ObservedContainer['type'], o: Partial<ObservedContainer> = {}): ObservedContainer {
  return { id: `id-${name}`, engineName: name, type, name, hash: 'h', restartCount: 0, state: 'running', created: 1, image: 'i', ...o };
}

const spec: Pod = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'p', namespace: 'ns' },
  spec: {
    terminationGracePeriodSeconds: 20,
    initContainers: [
      { name: 'setup', image: 'i' },
      { name: 'proxy', image: 'i', restartPolicy: 'Always' },
      { name: 'logs', image: 'i', restartPolicy: 'Always' },
    ],
    containers: [
      { name: 'web', image: 'i' },
      { name: 'worker', image: 'i' },
    ],
  },
};

function pod(containers: ObservedContainer[], sandboxState: ObservedSandbox['state'] = 'ready'): ObservedPod {
  const sandbox: ObservedSandbox = { id: 'id-POD', state: sandboxState, attempt: 0, hash: 'h', createdAt: 1, engineName: 'POD', image: 'i' };
  return { uid: 'u1', name: 'p', namespace: 'ns', source: 'apply:x', spec, sandboxes: [sandbox], containers };
}

const names = (steps: { name: string }[][]): string[][] => steps.map((s) => s.map((c) => c.name).sort());

describe('deletionPlan: the order', () => {
  it('stops the main containers together, then the sidecars one at a time, the last declared first, then the sandbox', () => {
    const o = pod([
      container('setup', 'init', { state: 'exited' }),
      container('proxy', 'init'),
      container('logs', 'init'),
      container('web', 'app'),
      container('worker', 'app'),
    ]);
    const plan = deletionPlan(o);
    expect(names(plan.steps)).toEqual([['web', 'worker'], ['logs'], ['proxy']]);
    expect(plan.sandboxes).toEqual(['id-POD']);
  });

  it('stops a regular init container still running with the main containers, and nothing that has exited', () => {
    const o = pod([container('setup', 'init'), container('web', 'app', { state: 'exited' })]);
    expect(names(deletionPlan(o).steps)).toEqual([['setup']]);
  });

  it('has no step for a pod with nothing running, and no sandbox to stop when it has stopped', () => {
    const o = pod([container('web', 'app', { state: 'exited' })], 'notready');
    const plan = deletionPlan(o);
    expect(plan.steps).toEqual([]);
    expect(plan.sandboxes).toEqual([]);
  });

  it('removes every container, dead ones included, then the sandboxes, and waits for the engine to list nothing', () => {
    const o = pod([container('web', 'app', { state: 'exited' }), container('worker', 'app')]);
    const plan = deletionPlan(o);
    expect(plan.remove).toEqual(['id-web', 'id-worker', 'id-POD']);
    expect(plan.waitFor).toBe('engine-lists-nothing');
  });
});

describe('deletionPlan: the grace per container', () => {
  it("gives each container the grace it was made with, else the pod's", () => {
    const o = pod([container('web', 'app', { graceSeconds: 7 }), container('worker', 'app')]);
    const plan = deletionPlan(o);
    expect(plan.steps[0]!.map((c) => [c.name, c.graceSeconds, c.exact])).toEqual([
      ['web', 7, false],
      ['worker', 20, false],
    ]);
    expect(plan.graceSeconds).toBe(20);
  });

  it("an override replaces every container's, taken exactly", () => {
    const o = pod([container('web', 'app', { graceSeconds: 7 }), container('proxy', 'init')]);
    const plan = deletionPlan(o, 3);
    expect(plan.steps.flat().map((c) => [c.name, c.graceSeconds, c.exact])).toEqual([
      ['web', 3, true],
      ['proxy', 3, true],
    ]);
    expect(plan.graceSeconds).toBe(3);
  });

  it("the kubelet's 30 s for a pod whose spec the engine does not tell", () => {
    const o: ObservedPod = { ...pod([container('web', 'app')]) };
    delete o.spec;
    expect(deletionPlan(o).steps[0]![0]!.graceSeconds).toBe(30);
  });
});

describe("graceOverride: delete's flags", () => {
  it('--force is 0, --now is 1, --grace-period is itself, none is none', () => {
    expect(graceOverride({ force: true, gracePeriod: 5 })).toBe(0);
    expect(graceOverride({ now: true })).toBe(1);
    expect(graceOverride({ gracePeriod: 5 })).toBe(5);
    expect(graceOverride({ gracePeriod: 0 })).toBe(0);
    expect(graceOverride({})).toBeUndefined();
  });
});
