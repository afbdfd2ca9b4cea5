import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { PodSupervisor } from '../../src/agent/supervisor.js';
import { silentLogger } from '../../src/log/logger.js';
import { PodCache } from '../../src/pleg/cache.js';
import { desired } from '../fixtures/pods.js';
import { FakeEngine } from '../fakes/fake-engine.js';

// Per-container back-off is keyed by the container's spec hash (the kubelet's back-off key holds
// it): an update starts it over, leaves no key of the version before, and the pod's going leaves none.

const version = (v: number) =>
  desired(`apiVersion: v1
kind: Pod
metadata: {name: keyed, namespace: backoff}
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - name: a
    image: busybox:1
    env: [{name: V, value: "${v}"}]
`);

const dirs: string[] = [];
const stops: (() => void)[] = [];
afterEach(() => {
  for (const s of stops.splice(0)) s();
  for (const x of dirs.splice(0)) rmSync(x, { recursive: true, force: true });
});

describe('per-container back-off', () => {
  it('keeps no key of a version once the pod is updated, starts over for the new hash, and keeps nothing once the pod is forgotten', async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'podrun-keys-'));
    dirs.push(stateDir);
    const engine = new FakeEngine({ stateDir });
    const cache = new PodCache(engine, () => undefined, { relistMs: 3_600_000 });
    await cache.start();
    const sup = new PodSupervisor(engine, cache, { initialMs: 10_000, maxMs: 300_000, resetMs: 600_000 }, () => undefined, silentLogger);
    stops.push(() => {
      sup.stop();
      cache.stop();
    });
    const v1 = version(1);
    await sup.sync(v1);
    // Two crashes of version 1: restarted once, then held in CrashLoopBackOff.
    engine.exit(cache.pod(v1.uid)!.containers[0]!.id, 1);
    await sup.sync(v1);
    engine.exit(cache.pod(v1.uid)!.containers.find((c) => c.state === 'running')!.id, 1);
    expect(await sup.sync(v1)).toBeGreaterThan(9_000);
    expect(sup.stateSize().crashBackoff).toBe(1);
    // Version 2 (a new hash): started at once, and version 1's key is gone.
    const v2 = version(2);
    expect(await sup.sync(v2)).toBe(0);
    expect(sup.stateSize().crashBackoff).toBe(0);
    expect(cache.pod(v2.uid)!.containers.filter((c) => c.state === 'running')).toHaveLength(1);
    // Its first crash is restarted at once: the back-off started over.
    engine.exit(cache.pod(v2.uid)!.containers.find((c) => c.state === 'running')!.id, 1);
    expect(await sup.sync(v2)).toBe(0);
    expect(sup.stateSize().crashBackoff).toBe(1);
    sup.forget(v2.uid);
    expect(sup.stateSize()).toEqual(Object.fromEntries(Object.keys(sup.stateSize()).map((k) => [k, 0])));
  });
});
