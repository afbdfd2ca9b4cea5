import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { PodCache, RECONNECT_MS } from '../../src/pleg/cache.js';
import { identityOf } from '../../src/runtime/labels.js';
import { desired } from '../fixtures/pods.js';
import { FakeEngine } from '../fakes/fake-engine.js';
import type { RecordKind } from '../../src/runtime/observed.js';

// The pod cache (PLEG) on the in-memory engine: events keep it current without a list, a relist
// replaces it, a refresh after podrun acted sees what podrun made, and a lost stream reconnects.

const POD = desired(`apiVersion: v1
kind: Pod
metadata: {name: cached, namespace: pleg}
spec:
  containers:
  - {name: a, image: busybox:fake}
`);

const dirs: string[] = [];
const caches: PodCache[] = [];
afterEach(() => {
  for (const c of caches.splice(0)) c.stop();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function setup(): { engine: FakeEngine; cache: PodCache; changed: string[] } {
  const stateDir = mkdtempSync(join(tmpdir(), 'podrun-cache-'));
  dirs.push(stateDir);
  const engine = new FakeEngine({ stateDir });
  const changed: string[] = [];
  const cache = new PodCache(engine, (uid) => changed.push(uid), { relistMs: 3_600_000 });
  caches.push(cache);
  return { engine, cache, changed };
}

async function run(engine: FakeEngine): Promise<{ sandbox: string; container: string }> {
  const id = identityOf(POD.pod, POD.origin.source);
  const sb = await engine.createSandbox(POD.pod, id, 0, 'h', false);
  const container = await engine.startContainer(POD.pod, id, POD.pod.spec.containers[0]!, {
    type: 'app',
    restartCount: 0,
    hash: 'x',
    sandbox: sb,
    volumes: new Map(),
    engineRestarts: false,
  });
  return { sandbox: sb.id, container };
}

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('PodCache', () => {
  it('follows the engine by its events alone: a start, a death with its time, a removal; one list at connect', async () => {
    const { engine, cache, changed } = setup();
    await cache.start();
    expect(cache.connected).toBe(true);
    const lists = engine.calls.get('list');
    const { container } = await run(engine);
    expect(cache.pod(POD.uid)?.containers.map((c) => [c.name, c.state])).toEqual([['a', 'running']]);
    expect(changed.filter((u) => u === POD.uid).length).toBeGreaterThanOrEqual(2);
    engine.exit(container, 3);
    expect(cache.pod(POD.uid)?.containers[0]).toMatchObject({ state: 'exited', exitCode: 3 });
    expect(cache.finishedAt(container)).toBeGreaterThan(0);
    await engine.removeContainer(container);
    expect(cache.pod(POD.uid)?.containers).toEqual([]);
    expect(cache.finishedAt(container)).toBeUndefined();
    // Never listed again: events were enough.
    expect(engine.calls.get('list')).toBe(lists);
  });

  it('follows a sandbox by its state changes: ready once its pause process runs, not ready once it ends (its finish kept), gone once removed', async () => {
    const { engine, cache, changed } = setup();
    await cache.start();
    const { sandbox } = await run(engine);
    expect(cache.pod(POD.uid)?.sandboxes.map((s) => [s.id, s.state, s.attempt])).toEqual([[sandbox, 'ready', 0]]);
    changed.length = 0;
    await engine.stopSandbox(sandbox);
    expect(cache.pod(POD.uid)?.sandboxes.map((s) => [s.id, s.state])).toEqual([[sandbox, 'notready']]);
    expect(changed).toEqual([POD.uid]);
    expect(cache.finishedAt(sandbox)).toBeGreaterThan(0);
    await engine.removeSandbox(sandbox);
    expect(cache.pod(POD.uid)?.sandboxes).toEqual([]);
    expect(cache.finishedAt(sandbox)).toBeUndefined();
  });

  it('reads a container the engine restarted in place as running, without the exit of its last run', async () => {
    const { engine, cache } = setup();
    await cache.start();
    const { container } = await run(engine);
    engine.exit(container, 3);
    expect(cache.pod(POD.uid)?.containers[0]).toMatchObject({ id: container, state: 'exited', exitCode: 3 });
    engine.restartInPlace(container);
    expect(cache.pod(POD.uid)?.containers[0]).toMatchObject({ id: container, state: 'running', exitCode: undefined });
  });

  it("keeps a list's uptime of a container only until news of it: a restart in place after the list starts it anew", async () => {
    const { engine, cache } = setup();
    engine.listsUptime = true;
    await cache.start();
    const { container } = await run(engine);
    await cache.relist();
    expect(cache.pod(POD.uid)?.containers[0]?.startedBy).toBeTypeOf('number');
    engine.exit(container, 1);
    engine.restartInPlace(container);
    await tick();
    expect(cache.pod(POD.uid)?.containers[0]).toMatchObject({ id: container, state: 'running' });
    expect(cache.pod(POD.uid)?.containers[0]?.startedBy).toBeUndefined();
  });

  it('sees what podrun made in a refresh even when no event came, and replaces everything on a relist', async () => {
    const { engine, cache } = setup();
    await cache.start();
    // The stream is cut: nothing arrives, but a refresh after podrun acted reads what it made (the
    // ids its worker noted as it made them, given to the refresh).
    engine.dropEvents();
    const made: [string, RecordKind][] = [];
    engine.onCreated((_uid, id, kind) => made.push([id, kind]));
    await run(engine);
    expect(cache.pod(POD.uid)).toBeUndefined();
    await cache.refreshPod(POD.uid, made);
    expect(cache.pod(POD.uid)?.sandboxes).toHaveLength(1);
    expect(cache.pod(POD.uid)?.containers).toHaveLength(1);
    // Someone else removed it all meanwhile: the relist says so.
    for (const id of [...engine.containers.keys()]) engine.containers.delete(id);
    await cache.relist();
    expect(cache.pods()).toEqual([]);
    expect(cache.stateSize()).toEqual({ cacheRecords: 0, cacheViews: 0, cacheByPod: 0, cacheFinished: 0 });
  });

  it('takes a late create of a container it already saw started for what it is: old news, the container stays as last seen', async () => {
    const { engine, cache } = setup();
    await cache.start();
    // The CRI relist saw the new instance between its create and start, and tells that after the
    // worker's own look read it running: a worker woken then must not see it "never started".
    const release = engine.holdEvents();
    const made: [string, RecordKind][] = [];
    engine.onCreated((_uid, id, kind) => made.push([id, kind]));
    const { container } = await run(engine);
    await cache.refreshPod(POD.uid, made);
    expect(cache.pod(POD.uid)?.containers[0]).toMatchObject({ id: container, state: 'running' });
    const seen: string[] = [];
    const stateOf = (): string => cache.pod(POD.uid)?.containers.find((c) => c.id === container)?.state ?? 'gone';
    release(() => seen.push(stateOf()));
    expect(stateOf()).toBe('running');
    expect([...new Set(seen)]).toEqual(['running']);
  });

  it('keeps what its own look saw made while a relist was in flight: the older list does not take it away', async () => {
    const { engine, cache } = setup();
    await cache.start();
    // The periodic relist reads the engine, then podrun makes an instance and looks at it, then the
    // relist's answer lands; the runtime's word of the new instance comes later still (the CRI relist).
    const release = engine.holdEvents();
    let answer: () => void = () => undefined;
    engine.listAnswerHold = new Promise<void>((r) => (answer = r));
    const relisting = cache.relist();
    await tick();
    engine.listAnswerHold = undefined;
    const made: [string, RecordKind][] = [];
    engine.onCreated((_uid, id, kind) => made.push([id, kind]));
    const { container } = await run(engine);
    await cache.refreshPod(POD.uid, made);
    answer();
    await relisting;
    // Seen missing, a worker would make the container again: two instances of one.
    expect(cache.pod(POD.uid)?.containers.map((c) => [c.id, c.state])).toEqual([[container, 'running']]);
    expect(cache.pod(POD.uid)?.sandboxes).toHaveLength(1);
    release();
    expect(cache.pod(POD.uid)?.containers.map((c) => [c.id, c.state])).toEqual([[container, 'running']]);
    // What the engine removed meanwhile goes on the next relist as before.
    await engine.removeContainer(container);
    await cache.relist();
    expect(cache.pod(POD.uid)?.containers ?? []).toEqual([]);
  });

  it('takes its own look at a started instance over a list read between its create and its start, the start told late', async () => {
    const { engine, cache } = setup();
    await cache.start();
    // Podman under load: the relist reads the new instance between its create and its start, the
    // worker's look after the start lands while that list is in flight, and the start's event comes
    // after both. Taken as the list saw it, a woken worker would replace it as "never started".
    let answer: () => void = () => undefined;
    let relisting: Promise<void> = Promise.resolve();
    let release: (after?: () => void) => void = () => undefined;
    engine.betweenCreateAndStart = () => {
      engine.betweenCreateAndStart = undefined;
      release = engine.holdEvents();
      engine.listAnswerHold = new Promise<void>((r) => (answer = r));
      relisting = cache.relist();
      engine.listAnswerHold = undefined;
    };
    const made: [string, RecordKind][] = [];
    engine.onCreated((_uid, id, kind) => made.push([id, kind]));
    const { container } = await run(engine);
    await cache.refreshPod(POD.uid, made);
    answer();
    await relisting;
    const stateOf = (): string => cache.pod(POD.uid)?.containers.find((c) => c.id === container)?.state ?? 'gone';
    expect(stateOf()).toBe('running');
    const seen: string[] = [];
    release(() => seen.push(stateOf()));
    expect([...new Set(seen)]).toEqual(['running']);
  });

  it("keeps the list's word over its own look that saw the container earlier in its life than the list did", async () => {
    const { engine, cache } = setup();
    await cache.start();
    // The list waits to be read; the worker's look reads the instance between create and start and
    // lands first; the list, read after the start, is the newer; the start's event comes later.
    let read: () => void = () => undefined;
    let relisting: Promise<void> = Promise.resolve();
    let looking: Promise<void> = Promise.resolve();
    let release: () => void = () => undefined;
    engine.betweenCreateAndStart = (id) => {
      engine.betweenCreateAndStart = undefined;
      release = engine.holdEvents();
      engine.listHold = new Promise<void>((r) => (read = r));
      relisting = cache.relist();
      engine.listHold = undefined;
      looking = cache.refreshPod(POD.uid, [[id, 'container']]);
    };
    const { container } = await run(engine);
    await looking;
    expect(cache.pod(POD.uid)?.containers.find((c) => c.id === container)?.state).toBe('created');
    read();
    await relisting;
    expect(cache.pod(POD.uid)?.containers.find((c) => c.id === container)?.state).toBe('running');
    release();
  });

  it('takes the events told while its own look was under way after that look, as the refresh did: a restart in place meanwhile runs', async () => {
    const { engine, cache } = setup();
    await cache.start();
    const { container } = await run(engine);
    // The list reads it running; it exits; the worker's look reads it exited, and before that look
    // lands the engine restarts it in place. The look is further along than the list, but not than
    // the restart told meanwhile.
    let answer: () => void = () => undefined;
    engine.listAnswerHold = new Promise<void>((r) => (answer = r));
    const relisting = cache.relist();
    engine.listAnswerHold = undefined;
    engine.exit(container, 1);
    const looking = cache.refreshPod(POD.uid);
    engine.restartInPlace(container);
    await looking;
    expect(cache.pod(POD.uid)?.containers[0]).toMatchObject({ id: container, state: 'running' });
    answer();
    await relisting;
    expect(cache.pod(POD.uid)?.containers[0]).toMatchObject({ id: container, state: 'running' });
  });

  it('reconnects after the engine went away, and lists again what changed meanwhile', async () => {
    const { engine } = setup();
    let connects = 0;
    const c2 = new PodCache(engine, () => undefined, { relistMs: 3_600_000, onConnected: () => connects++ });
    caches.push(c2);
    engine.down = true;
    await c2.start();
    expect(c2.connected).toBe(false);
    engine.down = false;
    await run(engine);
    // The next dial comes a relist period later.
    await engine.until('the cache to reconnect', () => c2.connected);
    expect(connects).toBe(1);
    expect(c2.pod(POD.uid)?.containers).toHaveLength(1);
    engine.dropEvents();
    await tick();
    expect(c2.connected).toBe(false);
    await engine.until('the cache to reconnect again', () => c2.connected);
    expect(connects).toBe(2);
  });

  it('dials an engine that is away once each relist period, the same period throughout, and notices its return at the next', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] });
    try {
      const { engine } = setup();
      // Relisting every second besides, as the test agents and the generic PLEG do: that relist dials no engine that is away.
      const cache = new PodCache(engine, () => undefined, { relistMs: 1000 });
      caches.push(cache);
      engine.down = true;
      await cache.start();
      expect(cache.connected).toBe(false);
      // A dial is a subscription to the events or a list, each refused by the dead engine: counted per period.
      const dials = (): number => (engine.calls.get('events') ?? 0) + (engine.calls.get('list') ?? 0);
      const perPeriod: number[] = [];
      for (let i = 0; i < 20; i++) {
        const before = dials();
        await vi.advanceTimersByTimeAsync(RECONNECT_MS);
        perPeriod.push(dials() - before);
      }
      // No back-off: a dial each period, never two (twenty periods in, as in the first).
      expect(perPeriod).toEqual(Array.from({ length: 20 }, () => 1));
      engine.down = false;
      await vi.advanceTimersByTimeAsync(RECONNECT_MS);
      expect(cache.connected).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });

  it('keeps one dial at a time: one the engine is slow to answer is waited for, not joined by more', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] });
    try {
      const { engine } = setup();
      const cache = new PodCache(engine, () => undefined, { relistMs: 1000 });
      caches.push(cache);
      engine.down = true;
      await cache.start();
      engine.down = false;
      let answer: () => void = () => undefined;
      engine.listHold = new Promise<void>((r) => (answer = r));
      const dials = (): number => (engine.calls.get('events') ?? 0) + (engine.calls.get('list') ?? 0);
      const before = dials();
      await vi.advanceTimersByTimeAsync(10 * RECONNECT_MS);
      // The one dial: its subscription, and its list, still unanswered.
      expect(dials()).toBe(before + 2);
      expect(cache.connected).toBe(false);
      engine.listHold = undefined;
      answer();
      await vi.advanceTimersByTimeAsync(0);
      expect(cache.connected).toBe(true);
      expect(dials()).toBe(before + 2);
    } finally {
      vi.useRealTimers();
    }
  });

  it('says why it is unhealthy while the engine is away: the runtime, its endpoint and the error', async () => {
    const { engine, cache } = setup();
    engine.down = true;
    await cache.start();
    expect(cache.judgeHealth()).toBe('engine unreachable: fake at fake://: cannot reach the fake engine: events');
    engine.down = false;
    await engine.until('the cache to reconnect', () => cache.connected);
    expect(cache.judgeHealth()).toBeUndefined();
  });

  it('on an engine that tells no events, subscribes to none and relists at the generic PLEG period', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    try {
      const { engine, cache } = setup();
      engine.capabilities = { ...engine.capabilities, events: false };
      const watch = vi.spyOn(engine, 'watchEvents');
      await cache.start();
      expect(watch).not.toHaveBeenCalled();
      expect(cache.connected).toBe(true);
      const lists = engine.calls.get('list') ?? 0;
      const { container } = await run(engine);
      await vi.advanceTimersByTimeAsync(1000);
      expect(engine.calls.get('list')).toBe(lists + 1);
      expect(cache.pod(POD.uid)?.containers.map((c) => c.id)).toEqual([container]);
    } finally {
      vi.useRealTimers();
    }
  });
});
