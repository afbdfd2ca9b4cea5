import { describe, expect, it } from 'vitest';
import { podStatus } from '../../src/status/pod-status.js';
import { EventRecorder } from '../../src/status/events.js';
import { desired, observedFor } from '../fixtures/pods.js';

const POD = (policy: string) => `apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  restartPolicy: ${policy}
  containers:
  - {name: a, image: busybox:1.36, readinessProbe: {exec: {command: ['true']}}}
  - {name: b, image: busybox:1.36}
`;

describe('podStatus', () => {
  it('is Running and Ready when everything runs and probes pass', () => {
    const d = desired(POD('Always'));
    const s = podStatus(d.pod, observedFor(d), { probes: () => ({ started: true, ready: true }) });
    expect([s.phase, s.ready, s.containersReady, s.initialized]).toEqual(['Running', true, true, true]);
  });

  it('is not Ready while a readiness probe fails, and never restarts for it', () => {
    const d = desired(POD('Always'));
    const o = observedFor(d);
    const s = podStatus(d.pod, o, { probes: (id) => ({ started: true, ready: id !== o.containers[0]!.id }) });
    expect([s.phase, s.ready, s.containers.map((c) => c.ready)]).toEqual(['Running', false, [false, true]]);
  });

  it("holds Ready for a probed container the prober has no result for yet, as the kubelet's initial results; no prober: as the engine has it", () => {
    const d = desired(POD('Always'));
    const o = observedFor(d);
    const s = podStatus(d.pod, o, { probes: () => undefined });
    expect([s.ready, s.containers.map((c) => [c.ready, c.started])]).toEqual([
      false,
      [
        [false, true],
        [true, true],
      ],
    ]);
    const cli = podStatus(d.pod, o, {});
    expect([cli.ready, cli.containers.map((c) => c.ready)]).toEqual([true, [true, true]]);
  });

  it('shows a running container whose postStart has not returned as the kubelet does: waiting, no ID yet, not Ready, the pod Pending', () => {
    const d = desired(POD('Always'));
    const o = observedFor(d);
    const hooked = o.containers[1]!.id;
    const s = podStatus(d.pod, o, { probes: () => ({ started: true, ready: true }), postStarting: (id) => id === hooked });
    expect(s.containers[1]).toMatchObject({ state: 'waiting', reason: 'ContainerCreating', ready: false, started: false });
    expect(s.containers[1]!.containerID).toBeUndefined();
    expect([s.phase, s.ready]).toEqual(['Pending', false]);
    // A restarted instance in its postStart: the pod has run before, so it stays Running.
    const again = { ...o, containers: [...o.containers, { ...o.containers[1]!, id: 'old', state: 'exited' as const, exitCode: 1, created: 500 }] };
    const r = podStatus(d.pod, again, { probes: () => ({ started: true, ready: true }), postStarting: (id) => id === hooked });
    expect([r.phase, r.ready, r.containers[1]!.state]).toEqual(['Running', false, 'waiting']);
  });

  it('derives Succeeded, Failed and Running for finished containers by policy', () => {
    const cases: [string, number, string][] = [
      ['Never', 0, 'Succeeded'],
      ['Never', 1, 'Failed'],
      ['OnFailure', 0, 'Succeeded'],
      ['OnFailure', 1, 'Running'],
      ['Always', 0, 'Running'],
    ];
    for (const [policy, code, phase] of cases) {
      const d = desired(POD(policy));
      const s = podStatus(d.pod, observedFor(d, { a: { state: 'exited', exitCode: code }, b: { state: 'exited', exitCode: 0 } }));
      expect([policy, code, s.phase]).toEqual([policy, code, phase]);
    }
  });

  it('shows OOMKilled, waiting reasons and the last terminated state', () => {
    const d = desired(POD('Always'));
    const o = observedFor(d, { b: { state: 'exited', exitCode: 137, restartCount: 3 } });
    o.containers.push({ ...o.containers[1]!, id: 'older', restartCount: 2, exitCode: 1 });
    const s = podStatus(d.pod, o, {
      details: (id) => (id === 'older' ? { exitCode: 1 } : { exitCode: 137, oomKilled: true }),
      waiting: (name) => (name === 'b' ? { reason: 'CrashLoopBackOff', message: 'back-off 10s' } : undefined),
    });
    const b = s.containers[1]!;
    expect([b.state, b.reason, b.restartCount]).toEqual(['waiting', 'CrashLoopBackOff', 3]);
    expect(b.lastTerminated).toMatchObject({ exitCode: 137, reason: 'OOMKilled' });
  });

  it("counts restarts the engine made in place (its own restart policy) with podrun's own", () => {
    const d = desired(POD('Always'));
    const o = observedFor(d, { a: { state: 'unknown', engineRestarting: true, restartCount: 1 } });
    const s = podStatus(d.pod, o, { details: (id) => (id === o.containers[0]!.id ? { exitCode: 1, engineRestarts: 5 } : {}) });
    expect(s.containers.map((c) => c.restartCount)).toEqual([6, 0]);
  });

  it('gives a container the engine waits to restart in place the run that just ended as its last state, and no exit code read while it ran', () => {
    const d = desired(POD('Always'));
    const o = observedFor(d, { a: { state: 'unknown', engineRestarting: true } });
    const id = o.containers[0]!.id;
    const waiting = podStatus(d.pod, o, {
      runtimeName: 'docker',
      details: (x) => (x === id ? { exitCode: 3, restarting: true, engineRestarts: 2 } : undefined),
    }).containers[0]!;
    expect(waiting).toMatchObject({
      state: 'waiting',
      reason: 'CrashLoopBackOff',
      restartCount: 2,
      lastTerminated: { exitCode: 3, reason: 'Error', containerID: `docker://${id}` },
    });
    // Inspected a moment later, running again: its exit code says 0, which is no run's end.
    const raced = podStatus(d.pod, o, { details: (x) => (x === id ? { exitCode: 0, engineRestarts: 3 } : undefined) }).containers[0]!;
    expect(raced.lastTerminated).toBeUndefined();
  });

  it('is Pending with PodInitializing until init containers are done', () => {
    const d = desired(`apiVersion: v1
kind: Pod
metadata: {name: i}
spec:
  initContainers: [{name: init, image: busybox:1.36}]
  containers: [{name: app, image: busybox:1.36}]
`);
    const o = observedFor(d, { init: { state: 'running', exitCode: undefined } });
    o.containers = o.containers.filter((c) => c.name === 'init');
    const s = podStatus(d.pod, o);
    expect([s.phase, s.reason, s.initialized, s.containers[0]?.reason]).toEqual(['Pending', 'PodInitializing', false, 'PodInitializing']);
  });
});

describe('EventRecorder', () => {
  it('folds repeats into a count and keeps a bounded ring per pod', () => {
    let t = 0;
    const r = new EventRecorder(3, () => new Date(1_000_000 + t++ * 1000));
    const pod = { uid: 'u', namespace: 'n', name: 'p' };
    r.record(pod, 'Warning', 'BackOff', 'Back-off restarting failed container', 'spec.containers{c}');
    r.record(pod, 'Warning', 'BackOff', 'Back-off restarting failed container', 'spec.containers{c}');
    expect(r.list('u')).toHaveLength(1);
    expect(r.list('u')[0]).toMatchObject({ count: 2, reason: 'BackOff', involvedObject: { fieldPath: 'spec.containers{c}' } });
    for (const reason of ['Created', 'Started', 'Killing', 'Pulled']) r.record(pod, 'Normal', reason, reason);
    expect(r.list('u').map((e) => e.reason)).toEqual(['Started', 'Killing', 'Pulled']);
  });

  it('folds an event identical to any kept into its count, not only the newest, and moves it last (client-go keys events)', () => {
    let t = 0;
    const r = new EventRecorder(100, () => new Date(1_000_000 + t++ * 1000));
    const pod = { uid: 'u', namespace: 'n', name: 'p' };
    // A hung kube-apiserver: liveness and readiness fail in turn, each with its own message.
    for (let i = 0; i < 8; i++) {
      r.record(pod, 'Warning', 'Unhealthy', 'Liveness probe failed: command timed out after 15s', 'spec.containers{c}');
      r.record(pod, 'Warning', 'Unhealthy', 'Readiness probe failed: command timed out after 15s', 'spec.containers{c}');
    }
    r.record(pod, 'Normal', 'Killing', 'Container c failed liveness probe, will be restarted', 'spec.containers{c}');
    r.record(pod, 'Warning', 'Unhealthy', 'Readiness probe failed: command timed out after 15s', 'spec.containers{c}');
    expect(r.list('u').map((e) => [e.message.slice(0, 9), e.count, e.firstTimestamp, e.lastTimestamp])).toEqual([
      ['Liveness ', 8, new Date(1_000_000).toISOString(), new Date(1_014_000).toISOString()],
      ['Container', 1, new Date(1_016_000).toISOString(), new Date(1_016_000).toISOString()],
      ['Readiness', 9, new Date(1_001_000).toISOString(), new Date(1_017_000).toISOString()],
    ]);
  });
});
