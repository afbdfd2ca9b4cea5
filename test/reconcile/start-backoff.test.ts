import { describe, expect, it } from 'vitest';
import { Backoff } from '../../src/reconcile/backoff.js';
import { applyBackoff, sandboxKey, type BackoffView } from '../../src/reconcile/start-backoff.js';
import { computePodActions } from '../../src/reconcile/plan.js';
import { desired, observedFor } from '../fixtures/pods.js';

// Back-off before each start, as the kubelet's doBackOff: plain data in, decisions out.
const POD = desired(`apiVersion: v1
kind: Pod
metadata: {name: g}
spec:
  containers:
  - {name: a, image: busybox:1.36}
  - {name: b, image: busybox:1.36}
`);
const NOW = 10_000_000;

function view(over: Partial<BackoffView> = {}): BackoffView {
  const none = new Backoff();
  return { crash: none, imagePulls: none, refused: none, waitingOnImage: () => false, finishedAt: () => NOW - 1000, ...over };
}

describe('applyBackoff', () => {
  it('lets a first restart go at once and records it, then holds the next in CrashLoopBackOff', () => {
    const obs = observedFor(POD, { a: { state: 'exited', exitCode: 1 } });
    const actions = computePodActions(POD, obs);
    const crash = new Backoff();
    const first = applyBackoff(POD, obs, actions, view({ crash }), NOW);
    expect(first.actions.containersToStart.map((s) => s.name)).toEqual(['a']);
    expect(first.restarts).toEqual([{ name: 'a', key: Backoff.key(POD.uid, 'a', obs.containers[0]!.hash), waitedMs: 0, after: obs.containers[0]!.id }]);
    crash.restarted(first.restarts[0]!.key, NOW);
    // It crashed again a second later: 10 s from that finish.
    const second = applyBackoff(POD, obs, actions, view({ crash, finishedAt: () => NOW + 1000 }), NOW + 1500);
    expect(second.actions.containersToStart).toEqual([]);
    expect(second.held).toEqual([{ name: 'a', reason: 'CrashLoopBackOff', waitMs: 9500 }]);
    expect(second.waitMs).toBe(9500);
  });

  it('holds the restart of a container killed by its liveness probe, counted from the instance that exited before it (kubelet doBackOff)', () => {
    const crash = new Backoff();
    const base = observedFor(POD, { a: { state: 'running', restartCount: 2, created: 3000 } });
    const running = base.containers[0]!;
    const before = { ...running, id: 'older', state: 'exited' as const, exitCode: 137, restartCount: 1, created: 2000 };
    const obs = { ...base, containers: [running, before, ...base.containers.slice(1)] };
    const actions = computePodActions(POD, obs, { probeFailure: (id) => (id === running.id ? { kind: 'liveness' } : undefined) });
    expect(actions.containersToKill.map((k) => k.id)).toEqual([running.id]);
    expect(actions.containersToStart.map((s) => s.name)).toEqual(['a']);
    const key = Backoff.key(POD.uid, 'a', running.hash);
    // The first kill after an exited instance goes at once and is recorded, as a crash would be.
    const first = applyBackoff(POD, obs, actions, view({ crash }), NOW);
    expect(first.restarts.map((r) => r.key)).toEqual([key]);
    crash.restarted(key, NOW);
    // Killed again 6 s after that start: held until 10 s after the previous instance finished.
    const again = applyBackoff(POD, obs, actions, view({ crash, finishedAt: (id) => (id === 'older' ? NOW : undefined) }), NOW + 6000);
    expect(again.actions.containersToStart).toEqual([]);
    expect(again.actions.containersToKill.map((k) => k.id)).toEqual([running.id]);
    expect(again.held).toEqual([{ name: 'a', reason: 'CrashLoopBackOff', waitMs: 4000 }]);
    // Without an exited instance before it (the first liveness kill), nothing to count from: at once.
    const alone = applyBackoff(
      POD,
      base,
      computePodActions(POD, base, { probeFailure: (id) => (id === running.id ? { kind: 'liveness' } : undefined) }),
      view({ crash }),
      NOW + 6000,
    );
    expect(alone.actions.containersToStart.map((s) => s.name)).toEqual(['a']);
  });

  it('advances the crash back-off once per exited instance, though its replacement is seen never started and made again', () => {
    // Podman under load: the instance started after a crash was seen "created" by the next turn,
    // which replaced it from the same exited instance; counted twice, the waits went 0, 2, 4 s.
    const crash = new Backoff();
    const record = (r: ReturnType<typeof applyBackoff>, now: number): void => r.restarts.forEach((x) => crash.restarted(x.key, now, x.after));
    const exited = observedFor(POD, { a: { state: 'exited', exitCode: 3, restartCount: 0, created: 1000 } });
    const x = exited.containers[0]!;
    const first = applyBackoff(POD, exited, computePodActions(POD, exited), view({ crash, finishedAt: () => NOW }), NOW);
    expect(first.restarts.map((r) => r.waitedMs)).toEqual([0]);
    record(first, NOW);
    // Its replacement, seen never started: killed and made again, still a restart from x.
    const made = { ...x, id: 'made', state: 'created' as const, exitCode: undefined, restartCount: 1, created: 2000 };
    const seenCreated = { ...exited, containers: [made, ...exited.containers] };
    const again = computePodActions(POD, seenCreated);
    expect(again.containersToStart.map((s) => [s.name, s.reason])).toEqual([['a', 'never started']]);
    const replaced = applyBackoff(POD, seenCreated, again, view({ crash, finishedAt: () => NOW }), NOW + 10_000);
    expect(replaced.restarts.map((r) => r.after)).toEqual([x.id]);
    record(replaced, NOW + 10_000);
    // The replacement crashes: the wait is the second step (10 s), not the third.
    const second = { ...x, id: 'second', restartCount: 1, created: 3000 };
    const crashed = { ...exited, containers: [second, ...exited.containers] };
    const next = applyBackoff(
      POD,
      crashed,
      computePodActions(POD, crashed),
      view({ crash, finishedAt: (id) => (id === 'second' ? NOW + 11_000 : NOW) }),
      NOW + 11_000,
    );
    expect(next.held).toEqual([{ name: 'a', reason: 'CrashLoopBackOff', waitMs: 10_000 }]);
    expect(crash.currentDelay(Backoff.key(POD.uid, 'a', x.hash), NOW + 11_000)).toBe(10_000);
  });

  it('never holds a new container or a spec change', () => {
    const crash = new Backoff();
    crash.restarted(Backoff.key(POD.uid, 'b', 'old-hash'), NOW);
    const obs = observedFor(POD, { b: { state: 'exited', exitCode: 1, hash: 'old-hash' } });
    const r = applyBackoff(POD, obs, computePodActions(POD, obs), view({ crash }), NOW);
    expect(r.actions.containersToStart.map((s) => s.name)).toEqual(['b']);
    expect(r.held).toEqual([]);
  });

  it('holds a container whose image failed, and one the engine refused, each on its own back-off', () => {
    const pulls = new Backoff();
    pulls.restarted(`${POD.uid}/a/busybox:1.36`, NOW);
    const refused = new Backoff();
    const obs = observedFor(POD, { b: { state: 'exited', exitCode: 1 } });
    refused.restarted(Backoff.key(POD.uid, 'b', obs.containers[1]!.hash), NOW);
    const fresh = { ...obs, containers: obs.containers.filter((c) => c.name === 'b') };
    const r = applyBackoff(POD, fresh, computePodActions(POD, fresh), view({ imagePulls: pulls, refused, waitingOnImage: (n) => n === 'a' }), NOW + 4000);
    expect(r.held).toEqual([
      { name: 'a', reason: 'ImagePullBackOff', waitMs: 6000 },
      { name: 'b', reason: 'BackOff', waitMs: 6000 },
    ]);
    expect(r.actions.containersToStart).toEqual([]);
  });

  it('holds a whole pod whose sandbox the engine refused, until its back-off ends', () => {
    const refused = new Backoff();
    refused.restarted(sandboxKey(POD), NOW);
    const r = applyBackoff(POD, undefined, computePodActions(POD, undefined), view({ refused }), NOW + 2500);
    expect(r.actions).toMatchObject({ createSandbox: false, killPod: false, containersToStart: [] });
    expect(r.waitMs).toBe(7500);
  });
});
