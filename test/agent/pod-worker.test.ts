import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { PodWorker } from '../../src/agent/pod-worker.js';
import { PodSupervisor } from '../../src/agent/supervisor.js';
import { silentLogger } from '../../src/log/logger.js';
import { PodCache } from '../../src/pleg/cache.js';
import type { ObservedPod } from '../../src/runtime/observed.js';
import { LABEL } from '../../src/runtime/labels.js';
import { desired } from '../fixtures/pods.js';
import { FakeEngine } from '../fakes/fake-engine.js';

// The pod worker's turn (pod-worker.ts) on the in-memory engine: the phase in the pod's record says
// whether the turn syncs or terminates, and the removal's outcome moves it on.

const d = desired(`apiVersion: v1
kind: Pod
metadata: {name: phased, namespace: worker}
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - {name: a, image: busybox:1}
`);

const dirs: string[] = [];
const stops: (() => void)[] = [];
afterEach(() => {
  for (const s of stops.splice(0)) s();
  for (const x of dirs.splice(0)) rmSync(x, { recursive: true, force: true });
});

async function setup(mayDelete: (o: ObservedPod) => boolean = () => true): Promise<{ engine: FakeEngine; sup: PodSupervisor; worker: PodWorker; stateDir: string }> {
  const stateDir = mkdtempSync(join(tmpdir(), 'podrun-worker-'));
  dirs.push(stateDir);
  const engine = new FakeEngine({ stateDir });
  const cache = new PodCache(engine, () => undefined, { relistMs: 3_600_000 });
  await cache.start();
  const sup = new PodSupervisor(engine, cache, { initialMs: 10_000, maxMs: 300_000, resetMs: 600_000 }, () => undefined, silentLogger);
  stops.push(() => {
    sup.stop();
    cache.stop();
  });
  return { engine, sup, worker: new PodWorker({ rt: engine, cache, log: silentLogger, supervisor: sup, mayDelete }), stateDir };
}

const signal = (): AbortSignal => new AbortController().signal;
const running = (engine: FakeEngine): string[] => [...engine.containers.values()].filter((c) => c.state === 'running').map((c) => c.id);
/** A running container of the pod the cache never heard of (its event lost): what the cache has not seen yet. */
function unseen(engine: FakeEngine, like: string, name: string): string {
  engine.cutEvents();
  const id = engine.addExited(like, name);
  engine.containers.get(id)!.state = 'running';
  engine.restoreEvents();
  return id;
}

describe('PodWorker.turn', () => {
  it('syncs a declared pod, and terminates it through the plan\'s removal once it leaves the set, then forgets it', async () => {
    const { engine, sup, worker } = await setup();
    expect(await worker.turn(d.uid, d, signal())).toMatchObject({ synced: true, forgotten: false });
    expect(sup.phase(d.uid)).toBe('syncing');
    expect(running(engine)).toHaveLength(2);
    expect(await worker.turn(d.uid, undefined, signal())).toEqual({ synced: false, forgotten: true });
    expect(engine.containers.size).toBe(0);
    expect(engine.calls.get('volumes')).toBe(1);
  });

  it('stays terminating while the engine lists something of the pod; declared again, it waits for terminated, then syncs anew', async () => {
    const { engine, sup, worker } = await setup();
    await worker.turn(d.uid, d, signal());
    const a = [...engine.containers.values()].find((c) => c.labels[LABEL.containerName] === 'a')!;
    const late = unseen(engine, a.id, 'late');
    expect(await worker.turn(d.uid, undefined, signal())).toEqual({ again: 1000, synced: false, forgotten: false });
    expect(sup.phase(d.uid)).toBe('terminating');
    expect([...engine.containers.keys()]).toEqual([late]);
    expect(sup.events.list(d.uid).map((e) => e.reason)).toContain('Killing');
    // Declared again while it terminates: nothing is made for it yet.
    const creates = engine.calls.get('create');
    expect(await worker.turn(d.uid, d, signal())).toEqual({ again: 1000, synced: false, forgotten: false });
    expect(sup.phase(d.uid)).toBe('terminating');
    expect(engine.calls.get('create')).toBe(creates);
    // The last of it stops: terminated, and in the same turn the pod syncs anew.
    engine.exit(late, 0);
    expect(await worker.turn(d.uid, d, signal())).toMatchObject({ synced: true, forgotten: false });
    expect(sup.phase(d.uid)).toBe('syncing');
    expect(engine.containers.has(late)).toBe(false);
    expect(running(engine)).toHaveLength(2);
    expect(engine.calls.get('create')).toBeGreaterThan(creates ?? 0);
    // Anew: nothing of the pod before is kept (its events went with its record).
    expect(sup.events.list(d.uid).map((e) => e.reason)).not.toContain('Killing');
  });

  it('leaves a pod it may not delete as it is, and removes nothing of a pod it never knew', async () => {
    const { engine, sup, worker } = await setup(() => false);
    await worker.turn(d.uid, d, signal());
    expect(await worker.turn(d.uid, undefined, signal())).toEqual({ synced: false, forgotten: false });
    expect(running(engine)).toHaveLength(2);
    expect(sup.phase(d.uid)).toBe('syncing');
    const removals = engine.calls.get('volumes') ?? 0;
    expect(await worker.turn('00000000-0000-4000-8000-000000000001', undefined, signal())).toEqual({ synced: false, forgotten: true });
    expect(engine.calls.get('volumes') ?? 0).toBe(removals);
    expect(sup.known('00000000-0000-4000-8000-000000000001')).toBe(false);
  });
});
