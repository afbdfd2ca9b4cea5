import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { deletionTurn } from '../../src/agent/pod-deletion.js';
import { PodSyncer } from '../../src/agent/pod-syncer.js';
import type { Logger } from '../../src/log/logger.js';
import { silentLogger } from '../../src/log/silent.js';
import { PodCache } from '../../src/pleg/cache.js';
import { desired } from '../fixtures/pods.js';
import { FakeEngine } from '../fakes/fake-engine.js';

// One pod worker's turn (PodSyncer.sync) on the in-memory engine: what it makes, restarts,
// holds back and replaces, read back from the engine and from the pod's status.

const pod = (image: string) =>
  desired(`apiVersion: v1
kind: Pod
metadata: {name: worker, namespace: sync}
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - {name: a, image: ${image}}
`);

const dirs: string[] = [];
const stops: (() => void)[] = [];
afterEach(() => {
  for (const s of stops.splice(0)) s();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function setup(log: Logger = silentLogger): Promise<{ engine: FakeEngine; cache: PodCache; sup: PodSyncer; woken: string[] }> {
  const stateDir = mkdtempSync(join(tmpdir(), 'podrun-sync-'));
  dirs.push(stateDir);
  const engine = new FakeEngine({ stateDir });
  const cache = new PodCache(engine, () => undefined, { relistMs: 3_600_000 });
  await cache.start();
  const woken: string[] = [];
  const sup = new PodSyncer(engine, cache, { initialMs: 10_000, maxMs: 300_000, resetMs: 600_000 }, (uid) => woken.push(uid), log);
  stops.push(() => {
    sup.stop();
    cache.stop();
  });
  return { engine, cache, sup, woken };
}

const running = (engine: FakeEngine): string[] => [...engine.containers.values()].filter((c) => c.state === 'running').map((c) => `/${c.name}`);

describe('PodSyncer.sync', () => {
  it('makes the sandbox and the containers in one turn, and nothing on the next', async () => {
    const { engine, cache, sup } = await setup();
    const d = pod('busybox:1');
    expect(await sup.sync(d)).toBe(0);
    expect(cache.pod(d.uid)?.sandboxes).toHaveLength(1);
    expect(cache.pod(d.uid)?.containers.map((c) => [c.name, c.state])).toEqual([['a', 'running']]);
    const creates = engine.calls.get('create');
    expect(await sup.sync(d)).toBeUndefined();
    expect(engine.calls.get('create')).toBe(creates);
    expect((await sup.status(d, cache.pod(d.uid)))?.containers[0]).toMatchObject({ state: 'running', ready: true });
  });

  it("looks, after its turn, at the sandbox and container it made as what each is, before the engine's events tell them", async () => {
    const { engine, cache, sup } = await setup();
    const d = pod('busybox:1');
    const release = engine.holdEvents();
    expect(await sup.sync(d)).toBe(0);
    expect(cache.pod(d.uid)?.sandboxes.map((s) => s.state)).toEqual(['ready']);
    expect(cache.pod(d.uid)?.containers.map((c) => [c.name, c.state])).toEqual([['a', 'running']]);
    // Nothing more to do: the look was enough, and the late events change nothing.
    expect(await sup.sync(d)).toBeUndefined();
    release();
    expect(cache.pod(d.uid)?.sandboxes.map((s) => s.state)).toEqual(['ready']);
  });

  it('restarts a crash at once, then holds the next in CrashLoopBackOff for 10 s', async () => {
    const { engine, cache, sup } = await setup();
    const d = pod('busybox:1');
    await sup.sync(d);
    const first = cache.pod(d.uid)!.containers[0]!;
    engine.exit(first.id, 1);
    await sup.sync(d);
    const second = cache.pod(d.uid)!.containers[0]!;
    expect(second).toMatchObject({ restartCount: 1, state: 'running' });
    engine.exit(second.id, 1);
    const wait = await sup.sync(d);
    expect(wait).toBeGreaterThan(9_000);
    expect(wait).toBeLessThanOrEqual(10_000);
    expect(cache.pod(d.uid)!.containers[0]).toMatchObject({ restartCount: 1, state: 'exited' });
    const status = await sup.status(d, cache.pod(d.uid));
    expect(status?.containers[0]).toMatchObject({ state: 'waiting', reason: 'CrashLoopBackOff' });
    expect(sup.events.list(d.uid).map((e) => e.reason)).toContain('BackOff');
  });

  it('replaces a container whose spec changed, at once and without back-off, and keeps one dead instance', async () => {
    const { engine, cache, sup } = await setup();
    const v1 = pod('busybox:1');
    await sup.sync(v1);
    const old = cache.pod(v1.uid)!.containers[0]!;
    const v2 = pod('busybox:2');
    await sup.sync(v2);
    const now = cache.pod(v2.uid)!.containers;
    expect(now[0]).toMatchObject({ state: 'running', image: 'busybox:2' });
    expect(now.find((c) => c.id === old.id)?.state).toBe('exited');
    expect(running(engine)).toHaveLength(2); // the sandbox and the new container
  });

  it('removes the pod and, once forgotten, keeps nothing of it', async () => {
    const { engine, cache, sup } = await setup();
    const d = pod('busybox:1');
    await sup.sync(d);
    expect(await deletionTurn({ rt: engine, cache, log: silentLogger, syncer: sup }, d.uid, cache.pod(d.uid))).toEqual({ gone: true });
    expect(engine.containers.size).toBe(0);
    sup.records.forget(d.uid);
    expect(Object.values(sup.stateSize()).every((n) => n === 0)).toBe(true);
  });

  it('a turn whose pod is to be deleted makes nothing after the step under way, holds no back-off, and the deletion removes what was made', async () => {
    const { engine, cache, sup } = await setup();
    const d = pod('busybox:1');
    let release = (): void => undefined;
    engine.hold = new Promise((r) => (release = r));
    const cancel = new AbortController();
    const turn = sup.sync(d, cancel.signal);
    await new Promise((r) => setImmediate(r));
    // The sandbox's create is with the engine when the pod goes: it finishes, and nothing follows it.
    cancel.abort();
    release();
    expect(await turn).toBeUndefined();
    expect(cache.pod(d.uid)?.sandboxes).toHaveLength(1);
    expect(cache.pod(d.uid)?.containers).toEqual([]);
    expect(engine.calls.get('create')).toBe(1);
    expect(sup.acting(d.uid)).toBe(false);
    // No waiting reason of a failure (a back-off, an error): only that it was never created.
    expect((await sup.status(d, cache.pod(d.uid)))?.containers[0]).toMatchObject({ state: 'waiting', reason: 'ContainerCreating' });
    // A turn that starts cancelled does nothing at all.
    expect(await sup.sync(d, cancel.signal)).toBeUndefined();
    expect(engine.calls.get('create')).toBe(1);
    expect(await deletionTurn({ rt: engine, cache, log: silentLogger, syncer: sup }, d.uid, cache.pod(d.uid))).toEqual({ gone: true });
    expect(engine.containers.size).toBe(0);
  });

  it('says a pod is deleted when another hand removed its last container between two deletion turns (podrun delete beside the agent)', async () => {
    const { engine, cache, sup } = await setup();
    const d = pod('busybox:1');
    await sup.sync(d);
    const lines: string[] = [];
    const log = { ...silentLogger, info: (m: string) => void lines.push(m) };
    // The agent's turn began the deletion; the CLI finished it before the next turn.
    sup.records.get(d.uid)!.deleting = 'default/x';
    for (const c of [...engine.containers.keys()]) engine.containers.delete(c);
    await cache.refreshPod(d.uid);
    expect(await deletionTurn({ rt: engine, cache, log, syncer: sup }, d.uid, cache.pod(d.uid))).toEqual({ gone: true });
    expect(lines).toContain('pod default/x: deleted');
    expect(sup.records.get(d.uid)?.deleting).toBeUndefined();
  });

  it('keeps the running version while its update cannot pull: ErrImagePull, then ImagePullBackOff for 10 s, then replaced once the pull works', async () => {
    const { engine, cache, sup } = await setup();
    const v1 = pod('busybox:1');
    await sup.sync(v1);
    const old = cache.pod(v1.uid)!.containers[0]!;
    const v2 = pod('registry.example/busybox:2');
    engine.failingPulls.add('registry.example/busybox:2');
    // The failed attempt says ErrImagePull, and looks again within a second...
    expect(await sup.sync(v2)).toBe(1_000);
    expect(cache.pod(v2.uid)!.containers.find((c) => c.id === old.id)?.state).toBe('running');
    expect(sup.events.list(v2.uid).map((e) => e.reason)).toContain('Failed');
    expect((await sup.status(v2, cache.pod(v2.uid)))?.containers[0]).toMatchObject({ state: 'running' });
    // ...which finds the pull in back-off: nothing is tried, nothing running is touched.
    const pulls = engine.calls.get('image');
    expect(await sup.sync(v2)).toBeGreaterThan(8_000);
    expect(engine.calls.get('image')).toBe(pulls);
    expect(cache.pod(v2.uid)!.containers.find((c) => c.id === old.id)?.state).toBe('running');
    expect(sup.events.list(v2.uid).map((e) => e.reason)).toContain('BackOff');
    engine.failingPulls.clear();
    vi.useFakeTimers({ now: Date.now() + 11_000, toFake: ['Date'] });
    try {
      await sup.sync(v2);
    } finally {
      vi.useRealTimers();
    }
    expect(cache.pod(v2.uid)!.containers.find((c) => c.state === 'running')).toMatchObject({ image: 'registry.example/busybox:2' });
    expect(cache.pod(v2.uid)!.containers.find((c) => c.id === old.id)?.state).toBe('exited');
  });

  it("says a bug of podrun's (a TypeError in a step) is podrun's, with its stack, and tries again: never CreateContainerConfigError", async () => {
    const errors: string[] = [];
    const { engine, cache, sup } = await setup({ ...silentLogger, error: (m: string) => void errors.push(m) });
    const d = pod('busybox:1');
    engine.refuseCreate = () => {
      // What a slip in podrun's own code throws, from inside a step.
      throw new TypeError("Cannot read properties of undefined (reading 'Id')");
    };
    expect(await sup.sync(d)).toBe(5_000);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain('podrun bug');
    expect(errors[0]).toMatch(/TypeError: Cannot read properties of undefined \(reading 'Id'\)\n\s+at /);
    const status = await sup.status(d, cache.pod(d.uid));
    expect(status?.containers[0]).toMatchObject({ state: 'waiting', reason: 'ContainerCreating' });
    expect(sup.stateSize().startBackoff).toBe(0);
    // Tried again: once the bug is out of the way, the container runs.
    engine.refuseCreate = () => undefined;
    expect(await sup.sync(d)).toBe(0);
    expect(cache.pod(d.uid)?.containers.map((c) => [c.name, c.state])).toEqual([['a', 'running']]);
  });
});
