import { describe, expect, it } from 'vitest';
import { computePodActions, hasActions, planApply } from '../../src/reconcile/plan.js';
import { desired, observedFor } from '../fixtures/pods.js';

const TWO = (policy = 'Always', image = 'busybox:1.36') => `apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  restartPolicy: ${policy}
  containers:
  - {name: a, image: ${image}, ports: [{containerPort: 80, hostPort: 8080}]}
  - {name: b, image: busybox:1.36}
`;

const INIT = (policy: string) => `apiVersion: v1
kind: Pod
metadata: {name: i}
spec:
  restartPolicy: ${policy}
  initContainers:
  - {name: first, image: busybox:1.36}
  - {name: sidecar, image: busybox:1.36, restartPolicy: Always}
  - {name: second, image: busybox:1.36}
  containers:
  - {name: app, image: busybox:1.36}
`;

describe('computePodActions', () => {
  it('creates the sandbox and every container for a new pod', () => {
    const a = computePodActions(desired(TWO()), undefined);
    expect(a).toMatchObject({ killPod: false, createSandbox: true, sandboxAttempt: 0, containersToKill: [] });
    expect(a.containersToStart.map((s) => [s.name, s.type, s.restartCount])).toEqual([
      ['a', 'app', 0],
      ['b', 'app', 0],
    ]);
  });

  it('does nothing at all for a pod running as specified', () => {
    const d = desired(TWO());
    expect(hasActions(computePodActions(d, observedFor(d)))).toBe(false);
  });

  it('replaces only the container whose spec changed', () => {
    const before = desired(TWO());
    const after = desired(TWO('Always', 'busybox:1.37'));
    const obs = observedFor(before);
    const a = computePodActions(after, obs);
    expect(a.createSandbox).toBe(false);
    expect(a.containersToKill).toEqual([{ id: obs.containers[0]!.id, name: 'a', reason: 'container spec changed' }]);
    expect(a.containersToStart).toEqual([{ name: 'a', type: 'app', restartCount: 1, reason: 'container spec changed' }]);
  });

  it('recreates the whole pod when a sandbox-level field changes', () => {
    const before = desired(TWO());
    const after = desired(TWO().replace('hostPort: 8080', 'hostPort: 9090'));
    const a = computePodActions(after, observedFor(before));
    expect(a).toMatchObject({ killPod: true, createSandbox: true, sandboxAttempt: 1 });
    expect(a.reason).toMatch(/pod-level spec changed/);
    expect(a.containersToStart.map((s) => [s.name, s.restartCount])).toEqual([
      ['a', 1],
      ['b', 1],
    ]);
  });

  it('recreates the pod when its sandbox died', () => {
    const d = desired(TWO());
    const a = computePodActions(d, observedFor(d, {}, { state: 'notready' }));
    expect(a).toMatchObject({ killPod: true, createSandbox: true, reason: 'sandbox is not running' });
  });

  it("gives a NOTREADY sandbox a new sandbox, its attempt one more, as the kubelet's podSandboxChanged; a READY one none", () => {
    const d = desired(TWO());
    // NOTREADY, though the engine restarts it itself (Docker's policy after `apply`): not ready is not ready.
    for (const sandbox of [
      { state: 'notready' as const, attempt: 4 },
      { state: 'notready' as const, attempt: 4, engineRestarting: true as const },
    ]) {
      const a = computePodActions(d, observedFor(d, {}, sandbox));
      expect(a).toMatchObject({ killPod: true, createSandbox: true, sandboxAttempt: 5, reason: 'sandbox is not running' });
      expect(a.containersToStart.map((s) => [s.name, s.restartCount])).toEqual([
        ['a', 1],
        ['b', 1],
      ]);
    }
    expect(hasActions(computePodActions(d, observedFor(d, {}, { state: 'ready', attempt: 4 })))).toBe(false);
    // Two READY sandboxes: a new one as well (readySandboxCount > 1).
    const two = observedFor(d, {}, { attempt: 4 });
    two.sandboxes.push({ ...two.sandboxes[0]!, id: 'older', attempt: 3 });
    expect(computePodActions(d, two)).toMatchObject({ createSandbox: true, sandboxAttempt: 5, reason: 'more than one sandbox is running' });
  });

  it('restarts exited containers by restartPolicy, as the kubelet does', () => {
    const cases: [string, number, boolean][] = [
      ['Always', 0, true],
      ['Always', 1, true],
      ['OnFailure', 0, false],
      ['OnFailure', 1, true],
      ['Never', 0, false],
      ['Never', 1, false],
    ];
    for (const [policy, exitCode, restarts] of cases) {
      const d = desired(TWO(policy));
      const a = computePodActions(d, observedFor(d, { b: { state: 'exited', exitCode, restartCount: 2 } }));
      expect([policy, exitCode, a.containersToStart]).toEqual([
        policy,
        exitCode,
        restarts ? [{ name: 'b', type: 'app', restartCount: 3, reason: `exited with code ${exitCode}` }] : [],
      ]);
    }
  });

  it('kills running containers that left the spec and duplicate instances', () => {
    const d = desired(TWO());
    const obs = observedFor(d);
    obs.containers.push({ ...obs.containers[1]!, id: 'old-b', restartCount: -1 });
    obs.containers.push({ ...obs.containers[1]!, id: 'gone', name: 'c' });
    const a = computePodActions(d, obs);
    expect(a.containersToKill).toEqual([
      { id: 'old-b', name: 'b', reason: 'duplicate instance' },
      { id: 'gone', name: 'c', reason: 'not in the pod spec any more' },
    ]);
  });

  it('runs init containers one at a time, keeps sidecars running, then starts the app', () => {
    const d = desired(INIT('Always'));
    expect(computePodActions(d, undefined).containersToStart.map((s) => s.name)).toEqual(['first']);
    const obs = observedFor(d);
    const only = (names: string[]) => ({ ...obs, containers: obs.containers.filter((c) => names.includes(c.name)) });
    // first running: wait
    const firstRunning = { ...obs, containers: [{ ...obs.containers[0]!, state: 'running' as const, exitCode: undefined }] };
    expect(hasActions(computePodActions(d, firstRunning))).toBe(false);
    // first done: the sidecar starts next
    expect(computePodActions(d, only(['first'])).containersToStart.map((s) => s.name)).toEqual(['sidecar']);
    // sidecar running: second init container
    const withSidecar = only(['first', 'sidecar']);
    withSidecar.containers[1] = { ...withSidecar.containers[1]!, state: 'running', exitCode: undefined };
    expect(computePodActions(d, withSidecar).containersToStart.map((s) => s.name)).toEqual(['second']);
    // all init done: the app
    const allInit = only(['first', 'sidecar', 'second']);
    allInit.containers[1] = { ...allInit.containers[1]!, state: 'running', exitCode: undefined };
    expect(computePodActions(d, allInit).containersToStart.map((s) => s.name)).toEqual(['app']);
  });

  it('retries a failed init container, or fails the pod under Never', () => {
    const retry = desired(INIT('OnFailure'));
    const obs = observedFor(retry);
    const failed = { ...obs, containers: [{ ...obs.containers[0]!, exitCode: 1 }] };
    expect(computePodActions(retry, failed).containersToStart).toEqual([
      { name: 'first', type: 'init', restartCount: 1, reason: 'init container failed; retrying' },
    ]);
    const never = desired(INIT('Never'));
    const obsN = observedFor(never);
    const a = computePodActions(never, { ...obsN, containers: [{ ...obsN.containers[0]!, exitCode: 1 }] });
    expect(a.podFailed).toBe(true);
    expect(a.containersToStart).toEqual([]);
  });
});

describe("computePodActions: the kubelet's corners (kuberuntime_manager.go)", () => {
  const ONE = (policy: string, extra = '') => `apiVersion: v1
kind: Pod
metadata: {name: one}
spec:
  restartPolicy: ${policy}
  containers:
  - {name: a, image: busybox:1.36${extra}}
`;
  const failedLiveness = (id: string) => (x: string) => (x === id ? { kind: 'liveness' as const, graceSeconds: 7 } : undefined);

  it('kills a container that failed its liveness probe and restarts it unless Never, whatever the exit code', () => {
    for (const [policy, restarts] of [
      ['Always', true],
      ['OnFailure', true],
      ['Never', false],
    ] as const) {
      const d = desired(TWO(policy));
      const obs = observedFor(d);
      const a = computePodActions(d, obs, { probeFailure: failedLiveness(obs.containers[0]!.id) });
      expect([policy, a.containersToKill]).toEqual([
        policy,
        [
          {
            id: obs.containers[0]!.id,
            name: 'a',
            probe: 'liveness',
            reason: `failed liveness probe, will be ${restarts ? 'restarted' : 'left stopped'}`,
            graceSeconds: 7,
          },
        ],
      ]);
      expect([policy, a.containersToStart.map((x) => x.name)]).toEqual([policy, restarts ? ['a'] : []]);
      expect(a.killPod).toBe(false);
    }
  });

  it('stops a finished pod (nothing runs, nothing will): its sandbox and sidecars go, its ports are freed', () => {
    const never = desired(ONE('Never'));
    const done = observedFor(never, { a: { state: 'exited', exitCode: 1 } });
    expect(computePodActions(never, done)).toMatchObject({
      killPod: true,
      createSandbox: false,
      containersToStart: [],
      reason: 'all containers have terminated',
    });
    // Once stopped it stays so: no new sandbox for a Never pod that ran.
    const stopped = observedFor(never, { a: { state: 'exited', exitCode: 1 } }, { state: 'notready' });
    expect(hasActions(computePodActions(never, stopped))).toBe(false);
    // OnFailure, all succeeded: the same, and no sandbox is made again for nothing.
    const onFailure = desired(ONE('OnFailure'));
    expect(computePodActions(onFailure, observedFor(onFailure, { a: { state: 'exited', exitCode: 0 } }))).toMatchObject({
      killPod: true,
      createSandbox: false,
    });
    expect(hasActions(computePodActions(onFailure, observedFor(onFailure, { a: { state: 'exited', exitCode: 0 } }, { state: 'notready' })))).toBe(false);
  });

  it('stops what is left of a Never pod whose sandbox died, and makes it no new sandbox', () => {
    const d = desired(ONE('Never'));
    const a = computePodActions(d, observedFor(d, {}, { state: 'notready' }));
    expect(a).toMatchObject({ killPod: true, createSandbox: false, containersToStart: [] });
  });

  it('runs an exited container again when its spec was edited, whatever the policy (an edited static pod is a new pod)', () => {
    const before = desired(ONE('Never'));
    const after = desired(ONE('Never', ', env: [{name: V, value: two}]'));
    const exited = observedFor(before, { a: { state: 'exited', exitCode: 0 } });
    expect(computePodActions(after, exited).containersToStart).toEqual([{ name: 'a', type: 'app', restartCount: 1, reason: 'container spec changed' }]);
    // ... also once the finished pod's sandbox was stopped.
    const stopped = observedFor(before, { a: { state: 'exited', exitCode: 0 } }, { state: 'notready' });
    expect(computePodActions(after, stopped)).toMatchObject({ createSandbox: true });
  });

  it('never runs init containers again once the app has run, even when their dead instances were collected', () => {
    const d = desired(INIT_ONLY);
    const obs = observedFor(d);
    const collected = { ...obs, containers: obs.containers.filter((c) => c.name === 'app') };
    expect(hasActions(computePodActions(d, collected))).toBe(false);
  });

  it('restarts a crash-looping sidecar on its own, and keeps handling the app containers meanwhile', () => {
    const d = desired(INIT('Always'));
    const obs = observedFor(d, { sidecar: { state: 'exited', exitCode: 1, restartCount: 4 }, app: { state: 'exited', exitCode: 137, restartCount: 1 } });
    const a = computePodActions(d, obs);
    expect(a.containersToStart.map((s) => [s.name, s.type, s.restartCount])).toEqual([
      ['sidecar', 'init', 5],
      ['app', 'app', 2],
    ]);
  });

  it('runs the init containers again in a new sandbox: instances of the old one do not count', () => {
    const d = desired(INIT_ONLY);
    // The sandbox was re-created at t=2000; setup's only instance is from the old sandbox.
    const obs = observedFor(d, { setup: { created: 1000 }, app: { state: 'exited', exitCode: 137, created: 1000 } }, { createdAt: 2000, attempt: 1 });
    expect(computePodActions(d, obs).containersToStart).toEqual([{ name: 'setup', type: 'init', restartCount: 1, reason: 'init container' }]);
    // Once it has run in the new sandbox, the app follows.
    const ran = observedFor(
      d,
      {
        setup: { created: 2001, restartCount: 1 },
        app: { state: 'exited', exitCode: 137, created: 1000 },
      },
      { createdAt: 2000, attempt: 1 },
    );
    expect(computePodActions(d, ran).containersToStart.map((s) => s.name)).toEqual(['app']);
  });

  it('restarts a dead app container while its sidecar (the last init container) waits in back-off', () => {
    const d = desired(`apiVersion: v1
kind: Pod
metadata: {name: sl}
spec:
  initContainers: [{name: side, image: busybox:1.36, restartPolicy: Always}]
  containers: [{name: app, image: busybox:1.36}]
`);
    const obs = observedFor(d, { side: { state: 'exited', exitCode: 1, restartCount: 1 }, app: { state: 'exited', exitCode: 137 } });
    expect(computePodActions(d, obs).containersToStart.map((s) => s.name)).toEqual(['side', 'app']);
  });

  it('starts the next init container only once a sidecar has passed its startup probe', () => {
    const d = desired(INIT('Always'));
    const obs = observedFor(d);
    const init = { ...obs, containers: obs.containers.filter((c) => c.name === 'first' || c.name === 'sidecar') };
    init.containers[1] = { ...init.containers[1]!, state: 'running', exitCode: undefined };
    expect(hasActions(computePodActions(d, init, { started: () => false }))).toBe(false);
    expect(computePodActions(d, init, { started: () => true }).containersToStart.map((s) => s.name)).toEqual(['second']);
  });
});

const INIT_ONLY = `apiVersion: v1
kind: Pod
metadata: {name: io}
spec:
  initContainers: [{name: setup, image: busybox:1.36}]
  containers: [{name: app, image: busybox:1.36}]
`;

describe('planApply', () => {
  it('labels each pod created, updated, unchanged, replaced or deleted (with prune)', () => {
    const keep = desired(TWO());
    const edit = desired(TWO().replace('name: p', 'name: q'));
    const editNew = desired(TWO('Always', 'busybox:1.37').replace('name: p', 'name: q'));
    const fresh = desired(TWO().replace('name: p', 'name: r'));
    const old = { ...observedFor(desired(TWO().replace('name: p', 'name: s'))), applySet: 'set1' };
    const foreignSet = { ...observedFor(desired(TWO().replace('name: p', 'name: t'))), applySet: 'other' };
    const plans = planApply([keep, editNew, fresh], [observedFor(keep), observedFor(edit), old, foreignSet], { applySet: 'set1' });
    expect(plans.map((p) => [p.key, p.verdict])).toEqual([
      ['default/p', 'unchanged'],
      ['default/q', 'updated'],
      ['default/r', 'created'],
      ['default/s', 'deleted'],
    ]);
    expect(planApply([keep], [old]).map((p) => p.verdict)).toEqual(['created']);
  });
});
