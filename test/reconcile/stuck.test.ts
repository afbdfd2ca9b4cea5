import { describe, expect, it } from 'vitest';
import { instancesMark, stuckContainer, stuckText } from '../../src/reconcile/stuck.js';
import type { V1ContainerStatus, V1Pod } from '../../src/status/v1.js';
import { desired, observedFor } from '../fixtures/pods.js';

const POD = (image = 'busybox:1.36') => desired(`apiVersion: v1
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
  status({ restartCount, containerID: 'docker://new', state: { waiting: { reason: 'CrashLoopBackOff' } }, lastState: { terminated: { exitCode: 3, reason: 'Error', containerID: 'docker://dead' } } });

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
    const running = (id: string, restarts: number, at: string): V1Pod['status'] => status({ containerID: id, restartCount: restarts, ready: true, state: { running: { startedAt: at } } });
    const a = instancesMark(running('docker://a', 0, 't1'));
    expect(instancesMark(running('docker://a', 0, 't1'))).toBe(a);
    expect(instancesMark(running('docker://b', 1, 't2'))).not.toBe(a);
    expect(instancesMark(running('docker://a', 1, 't2'))).not.toBe(a);
  });
});
