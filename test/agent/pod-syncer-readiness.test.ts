import { describe, expect, it } from 'vitest';
import { PodSyncer } from '../../src/agent/pod-syncer.js';
import type { PodCache } from '../../src/pleg/cache.js';
import { DEFAULT_BACKOFF } from '../../src/reconcile/backoff.js';
import type { ObservedPod } from '../../src/runtime/observed.js';
import type { DockerEngine } from '../../src/runtime/docker/docker-engine.js';
import type { ContainerStatus } from '../../src/runtime/runtime-types.js';
import { desired, observedFor } from '../fixtures/pods.js';

const none = (): undefined => undefined;
const log = { debug: none, info: none, warn: none, error: none };

describe('how the agent judges a gated update', () => {
  it('quotes the exit code of a container that died after its details were read while it ran', async () => {
    const d = desired(`apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers: [{name: app, image: busybox:1.36}]
`);
    const running = observedFor(d);
    const app = running.containers[0]!;
    let now: ObservedPod = running;
    // The engine as an inspect sees the container: running (exit code 0) until it dies with 3.
    let state: ContainerStatus = { state: 'running', exitCode: 0, startedAt: '2026-11-30T10:00:00Z', oomKilled: false, engineRestarts: 0, restarting: false };
    const rt = { containerState: async () => state, terminationMessage: async () => undefined, onCreated: () => () => undefined } as unknown as DockerEngine;
    const cache = { pod: () => now, finishedAt: () => undefined } as unknown as PodCache;
    const syncer = new PodSyncer(rt, cache, DEFAULT_BACKOFF, none, log);
    // Status read while it ran: its details are kept.
    await syncer.status(d, running);
    state = { ...state, state: 'exited', exitCode: 3, finishedAt: '2026-11-30T10:00:05Z' };
    now = { ...running, containers: [{ ...app, state: 'exited', exitCode: 3 }] };
    expect(syncer.readiness(d)).toEqual({ ready: false, reason: 'container app exited with code 3 (Error)' });
    syncer.stop();
  });
});
