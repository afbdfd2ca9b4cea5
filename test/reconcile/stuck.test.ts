import { describe, expect, it } from 'vitest';
import { heldSince, heldSinceListed, instancesMark, stuckContainer, stuckText } from '../../src/reconcile/stuck.js';
import type { V1ContainerStatus, V1Pod } from '../../src/status/v1.js';
import { desired, observedFor } from '../fixtures/pods.js';

const POD = (image = 'busybox:1.36') =>
  desired(`apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - {name: app, image: ${image}}
`);

const status = (c: Partial<V1ContainerStatus>): V1Pod['status'] => ({
  phase: 'Running',
  containerStatuses: [{ name: 'app', image: 'busybox:1.36', ready: false, restartCount: 0, state: {}, ...c }],
});

const crashLoop = (restartCount: number): V1Pod['status'] =>
  status({
    restartCount,
    containerID: 'docker://new',
    state: { waiting: { reason: 'CrashLoopBackOff' } },
    lastState: { terminated: { exitCode: 3, reason: 'Error', containerID: 'docker://dead' } },
  });

describe('stuckContainer: when apply stops waiting for a pod', () => {
  it('a crash loop, from its second death: the exit code and the instance whose log tells why', () => {
    const d = POD();
    const s = stuckContainer(d, observedFor(d), crashLoop(1));
    expect(s).toEqual({ container: 'app', init: false, reason: 'CrashLoopBackOff', restartCount: 1, exitCode: 3, exitReason: 'Error', logOf: 'dead' });
    expect(stuckText(s!)).toBe('CrashLoopBackOff: container app exited with code 3 (Error), 1 restart');
  });

  it('not after one death: the first restart is at once, as the kubelet', () => {
    const d = POD();
    expect(stuckContainer(d, observedFor(d), crashLoop(0))).toBeUndefined();
  });

  it('not for a status left from the version before an update', () => {
    const before = POD();
    const after = POD('busybox:1.37');
    expect(stuckContainer(after, observedFor(before), crashLoop(2))).toBeUndefined();
    // An image error is judged by the image it names.
    const pull = status({ state: { waiting: { reason: 'ErrImagePull', message: 'Failed to pull image "busybox:1.36": not found' } } });
    expect(stuckContainer(after, undefined, pull)).toBeUndefined();
    expect(stuckText(stuckContainer(before, undefined, pull)!)).toBe('ErrImagePull: container app: Failed to pull image "busybox:1.36": not found');
  });

  it('not for waiting that ends by itself (ContainerCreating, PodInitializing)', () => {
    const d = POD();
    expect(stuckContainer(d, observedFor(d), status({ state: { waiting: { reason: 'ContainerCreating' } } }))).toBeUndefined();
  });
});

describe('instancesMark', () => {
  it('changes when a container restarts, anew or in place', () => {
    const running = (id: string, restarts: number, at: string): V1Pod['status'] =>
      status({ containerID: id, restartCount: restarts, ready: true, state: { running: { startedAt: at } } });
    const a = instancesMark(running('docker://a', 0, 't1'));
    expect(instancesMark(running('docker://a', 0, 't1'))).toBe(a);
    expect(instancesMark(running('docker://b', 1, 't2'))).not.toBe(a);
    expect(instancesMark(running('docker://a', 1, 't2'))).not.toBe(a);
  });
});

describe("heldSince: from when apply's one-second hold counts", () => {
  const now = Date.parse('2026-12-02T10:00:10Z');
  const running = (startedAt: string): V1Pod['status'] => status({ containerID: 'docker://a', state: { running: { startedAt } } });

  it('for a pod without probes: since its newest running container started (an unchanged pod is not watched again)', () => {
    expect(heldSince(POD(), running('2026-12-02T10:00:00.123456789Z'), now)).toBe(Date.parse('2026-12-02T10:00:00.123Z'));
    const two: V1Pod['status'] = {
      phase: 'Running',
      containerStatuses: [
        { name: 'a', image: 'x', ready: true, restartCount: 0, state: { running: { startedAt: '2026-12-02T09:00:00Z' } } },
        { name: 'b', image: 'x', ready: true, restartCount: 2, state: { running: { startedAt: '2026-12-02T10:00:09.500Z' } } },
      ],
    };
    expect(heldSince(POD(), two, now)).toBe(Date.parse('2026-12-02T10:00:09.500Z'));
  });

  it('from now for a pod with a readiness or startup probe, a start time it cannot read, or one in the future', () => {
    const probed = desired(`apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - {name: app, image: busybox:1.36, readinessProbe: {tcpSocket: {port: 80}}}
`);
    expect(heldSince(probed, running('2026-12-02T09:00:00Z'), now)).toBe(now);
    expect(heldSince(POD(), running('not a time'), now)).toBe(now);
    expect(heldSince(POD(), status({ state: { running: {} } }), now)).toBe(now);
    expect(heldSince(POD(), running('2026-12-02T11:00:00Z'), now)).toBe(now);
    expect(heldSince(POD(), status({ state: { waiting: { reason: 'ContainerCreating' } } }), now)).toBe(now);
  });
});

describe("heldSinceListed: the hold read from the engine's list alone (no inspect)", () => {
  it("the latest start the list's uptimes allow, when every instance of the pod runs and told its uptime", () => {
    const two = desired(`apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - {name: a, image: busybox:1.36}
  - {name: b, image: busybox:1.36}
`);
    expect(heldSinceListed(two, observedFor(two, { a: { startedBy: 1_000 }, b: { startedBy: 5_000 } }))).toBe(5_000);
  });

  it('none for a readiness-probed pod, an uptime not told, an instance that ended or is restarting, or a pod with no container', () => {
    const probed = desired(`apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - {name: app, image: busybox:1.36, startupProbe: {tcpSocket: {port: 80}}}
`);
    expect(heldSinceListed(probed, observedFor(probed, { app: { startedBy: 1_000 } }))).toBeUndefined();
    expect(heldSinceListed(POD(), observedFor(POD()))).toBeUndefined();
    expect(heldSinceListed(POD(), observedFor(POD(), { app: { startedBy: 1_000, state: 'unknown', engineRestarting: true } }))).toBeUndefined();
    const withDead = observedFor(POD(), { app: { startedBy: 1_000 } });
    withDead.containers.push({ ...withDead.containers[0]!, id: 'dead', state: 'exited', exitCode: 1 });
    expect(heldSinceListed(POD(), withDead)).toBeUndefined();
    expect(heldSinceListed(POD(), { ...withDead, containers: [] })).toBeUndefined();
    const inits = desired(`apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  initContainers: [{name: init, image: busybox:1.36}]
  containers: [{name: app, image: busybox:1.36}]
`);
    expect(heldSinceListed(inits, observedFor(inits, { app: { startedBy: 1_000 } }))).toBeUndefined();
  });
});
