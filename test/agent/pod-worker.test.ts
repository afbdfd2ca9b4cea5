import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { deleteAsked } from '../../src/agent/asked-deletion.js';
import { PodWorker, UNDECLARE_WAIT_MS } from '../../src/agent/pod-worker.js';
import { PodSyncer } from '../../src/agent/pod-syncer.js';
import { silentLogger } from '../../src/log/silent.js';
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

async function setup(mayDelete: (o: ObservedPod) => boolean = () => true): Promise<{ engine: FakeEngine; cache: PodCache; sup: PodSyncer; worker: PodWorker }> {
  const stateDir = mkdtempSync(join(tmpdir(), 'podrun-worker-'));
  dirs.push(stateDir);
  const engine = new FakeEngine({ stateDir });
  const cache = new PodCache(engine, () => undefined, { relistMs: 3_600_000 });
  await cache.start();
  const sup = new PodSyncer(engine, cache, { initialMs: 10_000, maxMs: 300_000, resetMs: 600_000 }, () => undefined, silentLogger);
  stops.push(() => {
    sup.stop();
    cache.stop();
  });
  return { engine, cache, sup, worker: new PodWorker({ rt: engine, cache, log: silentLogger, syncer: sup, mayDelete }) };
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
  it("syncs a declared pod, and terminates it through the plan's removal once it leaves the set, then forgets it", async () => {
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

// Per-container back-off is keyed by the container's spec hash (the kubelet's back-off key holds
// it): an update starts it over, leaves no key of the version before, and the pod's going leaves none.
describe('per-container back-off', () => {
  it('keeps no key of a version once the pod is updated, starts over for the new hash, and keeps nothing once the pod is forgotten', async () => {
    const { engine, cache, sup } = await setup();
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
    sup.records.forget(v2.uid);
    expect(sup.stateSize()).toEqual(Object.fromEntries(Object.keys(sup.stateSize()).map((k) => [k, 0])));
  });
});

// Podman under load: a relist reads a restarted container's new instance between its create and
// its start, the start's event comes late, and the worker's own look after the start lands while the
// list is in flight. The worker's next turn must see the instance it started running, not "never
// started", or it replaces it (the restarts suite then read the replacement's empty log).
describe('PodWorker: a relist read between the create and the start of a restarted instance', () => {
  it('leaves the started instance running, and makes no other', async () => {
    const { engine, cache, worker } = await setup();
    await worker.turn(d.uid, d, signal());
    const first = cache.pod(d.uid)!.containers[0]!.id;
    engine.exit(first, 1);
    let answer: () => void = () => undefined;
    let relisting: Promise<void> = Promise.resolve();
    let release: () => void = () => undefined;
    engine.betweenCreateAndStart = () => {
      engine.betweenCreateAndStart = undefined;
      release = engine.holdEvents();
      engine.listAnswerHold = new Promise<void>((r) => (answer = r));
      relisting = cache.relist();
      engine.listAnswerHold = undefined;
    };
    // The crash is restarted at once (the first of its back-off).
    await worker.turn(d.uid, d, signal());
    const second = running(engine).find((id) => engine.containers.get(id)?.labels[LABEL.containerName] === 'a');
    expect(second).toBeDefined();
    expect(second).not.toBe(first);
    answer();
    await relisting;
    const creates = engine.calls.get('create');
    await worker.turn(d.uid, d, signal());
    expect(engine.calls.get('create')).toBe(creates);
    expect(engine.containers.get(second!)?.state).toBe('running');
    expect(cache.pod(d.uid)!.containers.find((c) => c.id === second)?.state).toBe('running');
    release();
    await worker.turn(d.uid, d, signal());
    expect(engine.calls.get('create')).toBe(creates);
    expect(running(engine)).toContain(second);
  });
});

describe('PodWorker: a deletion asked of the agent (podrun delete)', () => {
  const ask = (untilUndeclared: boolean, override?: number) => ({
    ...(override !== undefined ? { override } : {}),
    deletionTimestamp: '2026-01-01T00:00:00.000Z',
    deletionGracePeriodSeconds: override ?? 0,
    untilUndeclared,
  });

  it('deletes a pod its source still declares, answers once it is gone, then makes it anew', async () => {
    const { engine, sup, worker } = await setup();
    await worker.turn(d.uid, d, signal());
    const before = running(engine);
    let answered = false;
    const gone = worker.requestDeletion(d.uid, ask(false, 0)).then(() => (answered = true));
    expect(worker.deletionShown(d.uid)).toEqual({ deletionTimestamp: '2026-01-01T00:00:00.000Z', deletionGracePeriodSeconds: 0 });
    const turn = await worker.turn(d.uid, d, signal());
    await gone;
    expect(answered).toBe(true);
    // Made anew in the same turn: none of the containers before is left.
    expect(turn.synced).toBe(true);
    expect(running(engine)).toHaveLength(2);
    expect(running(engine).some((id) => before.includes(id))).toBe(false);
    expect(sup.stateSize().deletionRequests).toBe(0);
    expect(worker.deletionShown(d.uid)).toBeUndefined();
  });

  it('holds an applied pod deleted until its set drops it, so it is not made again meanwhile, then forgets it', async () => {
    const { engine, sup, worker } = await setup();
    await worker.turn(d.uid, d, signal());
    const gone = worker.requestDeletion(d.uid, ask(true));
    expect(await worker.turn(d.uid, d, signal())).toMatchObject({ synced: false, forgotten: false });
    await gone;
    expect(engine.containers.size).toBe(0);
    // Still declared (the set not read again yet): nothing is made.
    expect(await worker.turn(d.uid, d, signal())).toMatchObject({ synced: false, forgotten: false });
    expect(engine.containers.size).toBe(0);
    expect(await worker.turn(d.uid, undefined, signal())).toEqual({ synced: false, forgotten: true });
    expect(sup.stateSize().deletionRequests).toBe(0);
  });

  it('holds an applied pod deleted no longer than UNDECLARE_WAIT_MS: one applied again meanwhile is made anew after it', async () => {
    const { engine, sup, worker } = await setup();
    await worker.turn(d.uid, d, signal());
    const gone = worker.requestDeletion(d.uid, ask(true));
    await worker.turn(d.uid, d, signal());
    await gone;
    const goneAt = sup.records.get(d.uid)!.awaitedDeletion!.goneAt!;
    const now = vi.spyOn(Date, 'now');
    now.mockReturnValue(goneAt + UNDECLARE_WAIT_MS - 1);
    expect(await worker.turn(d.uid, d, signal())).toMatchObject({ synced: false });
    expect(engine.containers.size).toBe(0);
    now.mockReturnValue(goneAt + UNDECLARE_WAIT_MS);
    expect(await worker.turn(d.uid, d, signal())).toMatchObject({ synced: true });
    now.mockRestore();
    expect(running(engine)).toHaveLength(2);
    expect(sup.stateSize().deletionRequests).toBe(0);
  });

  it('a second delete with a shorter grace shortens the one asked, never the other way', async () => {
    const { sup, worker } = await setup();
    void worker.requestDeletion(d.uid, ask(false, 30));
    void worker.requestDeletion(d.uid, ask(false, 5));
    void worker.requestDeletion(d.uid, ask(false, 10));
    expect(sup.records.get(d.uid)?.awaitedDeletion?.override).toBe(5);
    expect(sup.records.get(d.uid)?.awaitedDeletion?.waiters).toHaveLength(3);
  });
});

describe("deleteAsked: the socket's delete handed to the workers", () => {
  it('deletes a pod the cache has not heard of yet (the asker saw it on the engine), and only then answers', async () => {
    const { engine, cache, worker } = await setup();
    // Made, its events not told yet: the cache has not heard of it.
    const release = engine.holdEvents();
    const ident = { uid: d.uid, name: 'phased', namespace: 'worker', source: d.origin.source };
    const sandbox = await engine.createSandbox(d.pod, ident, 0, 'h', false);
    const app = await engine.startContainer(d.pod, ident, d.pod.spec.containers[0]!, {
      type: 'app',
      restartCount: 0,
      hash: 'h',
      sandbox,
      volumes: new Map(),
      engineRestarts: false,
      imageReady: true,
    });
    expect(cache.pod(d.uid)).toBeUndefined();
    const turns: Promise<unknown>[] = [];
    const answer = await deleteAsked(
      {
        stateDir: engine.options.stateDir,
        set: { get: () => undefined },
        cache,
        worker,
        workers: { kill: (uid) => void turns.push(worker.turn(uid, undefined, signal())) },
        log: silentLogger,
      },
      { pods: [{ uid: d.uid, key: d.key, ids: [sandbox.id, app], sandboxIds: [sandbox.id] }], override: 0 },
    );
    expect(answer).toEqual({ pods: [{ key: d.key }] });
    await Promise.all(turns);
    expect(engine.containers.size).toBe(0);
    release();
  });
});
