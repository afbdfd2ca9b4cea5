import { describe, expect, it } from 'vitest';
import { Backoff } from '../../src/reconcile/backoff.js';
import { gateStarts, sandboxKey, type BackoffView } from '../../src/reconcile/gate.js';
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

describe('gateStarts', () => {
  it('lets a first restart go at once and records it, then holds the next in CrashLoopBackOff', () => {
    const obs = observedFor(POD, { a: { state: 'exited', exitCode: 1 } });
    const actions = computePodActions(POD, obs);
    const crash = new Backoff();
    const first = gateStarts(POD, obs, actions, view({ crash }), NOW);
    expect(first.actions.containersToStart.map((s) => s.name)).toEqual(['a']);
    expect(first.restarts).toEqual([{ name: 'a', key: Backoff.key(POD.uid, 'a', obs.containers[0]!.hash), waitedMs: 0 }]);
    crash.restarted(first.restarts[0]!.key, NOW);
    // It crashed again a second later: 10 s from that finish.
    const second = gateStarts(POD, obs, actions, view({ crash, finishedAt: () => NOW + 1000 }), NOW + 1500);
    expect(second.actions.containersToStart).toEqual([]);
    expect(second.held).toEqual([{ name: 'a', reason: 'CrashLoopBackOff', waitMs: 9500 }]);
    expect(second.waitMs).toBe(9500);
  });

  it('never holds a new container or a spec change', () => {
    const crash = new Backoff();
    crash.restarted(Backoff.key(POD.uid, 'b', 'old-hash'), NOW);
    const obs = observedFor(POD, { b: { state: 'exited', exitCode: 1, hash: 'old-hash' } });
    const r = gateStarts(POD, obs, computePodActions(POD, obs), view({ crash }), NOW);
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
    const r = gateStarts(POD, fresh, computePodActions(POD, fresh), view({ imagePulls: pulls, refused, waitingOnImage: (n) => n === 'a' }), NOW + 4000);
    expect(r.held).toEqual([
      { name: 'a', reason: 'ImagePullBackOff', waitMs: 6000 },
      { name: 'b', reason: 'BackOff', waitMs: 6000 },
    ]);
    expect(r.actions.containersToStart).toEqual([]);
  });

  it('holds a whole pod whose sandbox the engine refused, until its back-off ends', () => {
    const refused = new Backoff();
    refused.restarted(sandboxKey(POD), NOW);
    const r = gateStarts(POD, undefined, computePodActions(POD, undefined), view({ refused }), NOW + 2500);
    expect(r.actions).toMatchObject({ createSandbox: false, killPod: false, containersToStart: [] });
    expect(r.waitMs).toBe(7500);
  });
});
