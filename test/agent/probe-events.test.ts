import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { PodSyncer } from '../../src/agent/pod-syncer.js';
import { renderDescribe } from '../../src/cli/describe.js';
import type { PodCache } from '../../src/pleg/cache.js';
import { DEFAULT_BACKOFF } from '../../src/reconcile/backoff.js';
import type { PodEngine } from '../../src/runtime/roles.js';
import type { ContainerStatus } from '../../src/runtime/runtime-types.js';
import { toV1Pod, type V1Pod } from '../../src/status/v1.js';
import { desired, observedFor } from '../fixtures/pods.js';

// The agent's prober on a fake clock: kubeadm's etcd probe against an etcd that hangs.
const T0 = Date.parse('2026-12-01T10:00:00Z');
beforeEach(() => {
  vi.useFakeTimers();
  vi.setSystemTime(T0);
});
afterEach(() => vi.useRealTimers());

const none = (): undefined => undefined;
const log = { debug: none, info: none, warn: none, error: none };

describe("the agent's probe failures", () => {
  it('are each an Unhealthy event, shown by describe as one line with their count, and the eighth fails the container at 120 s', async () => {
    const d = desired(`apiVersion: v1
kind: Pod
metadata: {name: etcd, namespace: kube-system}
spec:
  hostNetwork: true
  containers:
  - name: etcd
    image: etcd:3.5
    livenessProbe:
      exec: {command: [etcdctl, endpoint, health]}
      periodSeconds: 10
      timeoutSeconds: 15
      failureThreshold: 8
`);
    const o = observedFor(d);
    const running: ContainerStatus = {
      state: 'running',
      exitCode: 0,
      startedAt: new Date(T0).toISOString(),
      oomKilled: false,
      engineRestarts: 0,
      restarting: false,
    };
    // An exec that hangs: the engine's answer at the probe's timeout.
    const exec = async (_id: string, _cmd: string[], timeoutMs: number): Promise<'timeout'> => {
      await new Promise((r) => setTimeout(r, timeoutMs));
      return 'timeout';
    };
    const rt = {
      capabilities: { restartPolicy: false },
      hostIP: '10.0.0.1',
      runtimeName: 'fake',
      exec,
      containerState: async () => running,
      terminationMessage: async () => undefined,
      onCreated: () => () => undefined,
    } as unknown as PodEngine;
    const cache = { pod: () => o, finishedAt: () => undefined } as unknown as PodCache;
    // The prober wakes the pod's worker when the result changes: that is when the kill is planned.
    const wakes: number[] = [];
    const syncer = new PodSyncer(rt, cache, DEFAULT_BACKOFF, () => void wakes.push(Date.now() - T0), log);
    await syncer.turn(d);
    await vi.advanceTimersByTimeAsync(200_000);
    syncer.stop();

    expect(wakes).toEqual([120_000]);
    const events = syncer.events.list(d.uid);
    expect(events.map((e) => [e.type, e.reason, e.message, e.count])).toEqual([
      ['Warning', 'Unhealthy', 'Liveness probe failed: command timed out after 15s', 8],
    ]);
    expect([events[0]?.firstTimestamp, events[0]?.lastTimestamp]).toEqual([new Date(T0 + 15_000).toISOString(), new Date(T0 + 120_000).toISOString()]);

    const status = await syncer.status(d, o);
    const view = renderDescribe(toV1Pod(o, status!, { hostIP: '10.0.0.1' }) as unknown as V1Pod, events, 'node');
    // Read at 200 s: the last failure 80 s ago, the first 185 s ago.
    expect(view.join('\n')).toMatch(/Warning\s+Unhealthy\s+80s \(x8 over 3m\)\s+podrun\s+Liveness probe failed: command timed out after 15s/);
  });
});
