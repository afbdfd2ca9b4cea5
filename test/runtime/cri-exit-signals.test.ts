import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cgroupEventsPath, eventsSayEnded, unifiedRoot } from '../../src/runtime/cri/cgroup-exit.js';
import { DEFAULT_CHECK_DELAYS_MS, ExitSignals, type ExitSignalDeps, type SignalHandle } from '../../src/runtime/cri/exit-signals.js';
import { exitSignalTaps } from '../../src/runtime/cri/exit-watch.js';
import { LABEL } from '../../src/runtime/labels.js';
import type { EngineContainer, EngineSandbox } from '../../src/runtime/observed.js';
import type { ContainerEvent, EngineEvent } from '../../src/runtime/runtime-types.js';
import { criRelistPeriod } from '../../src/runtime/open-engine.js';

const flush = async (): Promise<void> => {
  for (let i = 0; i < 20; i++) await Promise.resolve();
};

/** Signals over plain data: each container's "cgroup" is a flag; fire() is a change of it; confirm answers from a list. */
function bed(o: { answers?: boolean[]; maxWatched?: number; delays?: number[]; openable?: (id: string) => boolean } = {}) {
  const ended = new Map<string, boolean>();
  const fires = new Map<string, () => void>();
  const closed: string[] = [];
  const opened: string[] = [];
  const confirmed: string[] = [];
  const answers = [...(o.answers ?? [])];
  let pendingOpen: ((h: SignalHandle | undefined) => void)[] = [];
  let holdOpens = false;
  const deps: ExitSignalDeps = {
    open: (id, fire) => {
      opened.push(id);
      const handle: SignalHandle | undefined =
        o.openable && !o.openable(id)
          ? undefined
          : {
              ended: () => ended.get(id) ?? false,
              close: () => closed.push(id),
            };
      fires.set(id, fire);
      if (holdOpens) return new Promise((r) => pendingOpen.push(() => r(handle)));
      return Promise.resolve(handle);
    },
    confirm: async (id) => {
      confirmed.push(id);
      return answers.length ? answers.shift()! : true;
    },
    sleep: () => Promise.resolve(),
  };
  const signals = new ExitSignals(deps, { ...(o.maxWatched ? { maxWatched: o.maxWatched } : {}), ...(o.delays ? { checkDelaysMs: o.delays } : {}) });
  return {
    signals,
    ended,
    closed,
    opened,
    confirmed,
    fire: (id: string) => fires.get(id)?.(),
    hold: () => (holdOpens = true),
    release: () => {
      for (const r of pendingOpen) r(undefined);
      pendingOpen = [];
    },
    releaseWith: () => {
      const rs = pendingOpen;
      pendingOpen = [];
      return rs;
    },
  };
}

describe('exit signals: bounds and coalescing', () => {
  it('opens one signal per container, at most maxWatched of them', async () => {
    const b = bed({ maxWatched: 3 });
    for (const id of ['a', 'a', 'b', 'c', 'd', 'e']) b.signals.watch(id);
    await flush();
    expect(b.opened).toEqual(['a', 'b', 'c']);
    expect(b.signals.size).toBe(3);
    expect(b.signals.counts.refused).toBe(2);
    // One ends: its place frees, the next is watched.
    b.ended.set('a', true);
    b.fire('a');
    await flush();
    expect(b.signals.size).toBe(2);
    b.signals.watch('d');
    await flush();
    expect(b.opened).toEqual(['a', 'b', 'c', 'd']);
  });

  it('a flood of changes that are not the end costs no runtime call', async () => {
    const b = bed();
    b.signals.watch('x');
    await flush();
    for (let i = 0; i < 1000; i++) b.fire('x');
    await flush();
    expect(b.confirmed).toEqual([]);
    expect(b.signals.counts.checks).toBe(0);
    expect(b.signals.has('x')).toBe(true);
  });

  it('the end is checked in one round however often it fires, then the signal is closed and fires cost nothing', async () => {
    const b = bed({ answers: [false, false, true], delays: [0, 1, 2, 3, 4] });
    b.signals.watch('x');
    await flush();
    b.ended.set('x', true);
    for (let i = 0; i < 1000; i++) b.fire('x');
    await flush();
    // Asked until the runtime agreed (3 calls), not once per change.
    expect(b.confirmed).toEqual(['x', 'x', 'x']);
    expect(b.signals.counts.told).toBe(1);
    expect(b.closed).toEqual(['x']);
    expect(b.signals.has('x')).toBe(false);
    for (let i = 0; i < 1000; i++) b.fire('x');
    await flush();
    expect(b.confirmed).toHaveLength(3);
    expect(b.signals.counts.coalesced).toBeGreaterThanOrEqual(1999);
  });

  it('a runtime that never agrees is asked once per delay, then left to the relist', async () => {
    const b = bed({ answers: Array(100).fill(false), delays: [0, 5, 10] });
    b.signals.watch('x');
    b.ended.set('x', true);
    await flush();
    b.fire('x');
    await flush();
    expect(b.confirmed).toEqual(['x', 'x', 'x']);
    expect(b.signals.counts.told).toBe(0);
    expect(b.closed).toEqual(['x']);
    expect(b.signals.size).toBe(0);
  });

  it('by default a death costs at most 16 runtime calls, over no more than 4 s', async () => {
    const b = bed({ answers: Array(100).fill(false) });
    b.ended.set('x', true);
    b.signals.watch('x');
    await flush();
    for (let i = 0; i < 100; i++) await flush();
    expect(b.confirmed.length).toBe(DEFAULT_CHECK_DELAYS_MS.length);
    expect(b.confirmed.length).toBeLessThanOrEqual(16);
    expect(DEFAULT_CHECK_DELAYS_MS.reduce((a, x) => a + x, 0)).toBeLessThanOrEqual(4000);
  });

  it('an end before the signal opened is caught by the first look', async () => {
    const b = bed();
    b.ended.set('x', true);
    b.signals.watch('x');
    await flush();
    expect(b.confirmed).toEqual(['x']);
    expect(b.signals.size).toBe(0);
  });

  it('a signal that opens after its container was unwatched is closed at once; one that cannot open is dropped', async () => {
    const b = bed({ openable: (id) => id !== 'none' });
    b.hold();
    b.signals.watch('late');
    b.signals.unwatch('late');
    const [resolveLate] = b.releaseWith();
    resolveLate!({ ended: () => true, close: () => b.closed.push('late') });
    await flush();
    expect(b.closed).toEqual(['late']);
    expect(b.confirmed).toEqual([]);
    b.release();
    const c = bed({ openable: (id) => id !== 'none' });
    c.signals.watch('none');
    await flush();
    expect(c.signals.size).toBe(0);
  });

  it('unwatch during a round stops the checks; stop closes every signal and watches no more', async () => {
    const b = bed({ answers: Array(100).fill(false), delays: [0, 1, 2, 3, 4, 5, 6, 7] });
    b.signals.watch('x');
    b.signals.watch('y');
    await flush();
    b.ended.set('x', true);
    b.fire('x');
    b.signals.unwatch('x');
    await flush();
    expect(b.confirmed.length).toBeLessThanOrEqual(1);
    b.signals.stop();
    expect(b.closed.sort()).toEqual(['x', 'y']);
    b.signals.watch('z');
    await flush();
    expect(b.opened).not.toContain('z');
  });
});

describe('exit signals: the taps on the relist', () => {
  const rec = (id: string, state: EngineContainer['state'], container = 'c'): EngineContainer => ({
    kind: 'container',
    id,
    name: id,
    image: 'i',
    labels: { [LABEL.containerName]: container },
    state,
    created: 0,
  });
  const ev = (kind: ContainerEvent['kind'], id: string, container = 'c'): EngineEvent => ({
    kind,
    id,
    labels: { [LABEL.containerName]: container },
    timeMs: 0,
  });
  const sandbox = (id: string, state: EngineSandbox['state']): EngineSandbox => ({
    kind: 'sandbox',
    id,
    name: id,
    image: 'pause',
    labels: { [LABEL.containerName]: 'POD' },
    state,
    createdAt: 0,
  });

  it('watches what a list shows running (not sandboxes), a start told; unwatches an end or removal told', async () => {
    const b = bed();
    const told: string[] = [];
    const taps = exitSignalTaps(
      b.signals,
      async () => [rec('run', 'running'), rec('done', 'exited'), sandbox('sb', 'ready')],
      (e) => told.push(`${e.kind} ${e.id}`),
    );
    await taps.list();
    await flush();
    expect(b.opened).toEqual(['run']);
    taps.onEvent(ev('started', 'new'));
    taps.onEvent({ kind: 'sandbox', state: 'ready', id: 'sb2', labels: { [LABEL.containerName]: 'POD' }, timeMs: 0 });
    await flush();
    expect(b.opened).toEqual(['run', 'new']);
    taps.onEvent(ev('exited', 'run'));
    taps.onEvent(ev('removed', 'new'));
    expect(b.signals.size).toBe(0);
    expect(told).toEqual(['started new', 'sandbox sb2', 'exited run', 'removed new']);
  });
});

describe('the cgroup side: which file is watched', () => {
  const dir = mkdtempSync(join(tmpdir(), 'podrun-cg-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const id = 'a'.repeat(64);

  it('reads populated 0 (or a file gone) as ended, anything else as not', () => {
    expect(eventsSayEnded('populated 0\nfrozen 0\n')).toBe(true);
    expect(eventsSayEnded(undefined)).toBe(true);
    expect(eventsSayEnded('populated 1\nfrozen 0\n')).toBe(false);
    expect(eventsSayEnded('frozen 1\n')).toBe(false);
    expect(eventsSayEnded('populated 0 trailing\npopulated 1\n')).toBe(false);
  });

  it('finds the v2 tree on a v2 host and on a hybrid one, none on v1 alone', () => {
    const v2 = 0x63677270;
    expect(unifiedRoot('/r', (p) => (p === '/r' ? v2 : undefined))).toBe('/r');
    expect(unifiedRoot('/r', (p) => (p === '/r/unified' ? v2 : 0x1021994))).toBe('/r/unified');
    expect(unifiedRoot('/r', () => 0x1021994)).toBeUndefined();
  });

  it('takes the file of a cgroup named for the container, under the root, and nothing through a symlink or ..', () => {
    mkdirSync(join(dir, 'k8s.io', id), { recursive: true });
    writeFileSync(join(dir, 'k8s.io', id, 'cgroup.events'), 'populated 1\n');
    expect(cgroupEventsPath(dir, `k8s.io/${id}`, id)).toBe(join(dir, 'k8s.io', id, 'cgroup.events'));
    // Another container's cgroup (a pid reused between the status and the /proc read): not this one's.
    expect(cgroupEventsPath(dir, `k8s.io/${id}`, 'b'.repeat(64))).toBeUndefined();
    expect(cgroupEventsPath(dir, `k8s.io/../k8s.io/${id}`, id)).toBeUndefined();
    expect(cgroupEventsPath(dir, '', id)).toBeUndefined();
    expect(cgroupEventsPath(dir, `k8s.io/${id}-gone`, id)).toBeUndefined();
    // A symlink out of the tree, whatever its name says.
    const outside = mkdtempSync(join(tmpdir(), 'podrun-out-'));
    writeFileSync(join(outside, 'cgroup.events'), 'populated 1\n');
    symlinkSync(outside, join(dir, `cri-${id}.scope`));
    expect(cgroupEventsPath(dir, `cri-${id}.scope`, id)).toBeUndefined();
    rmSync(outside, { recursive: true, force: true });
  });
});

describe('PODRUN_CRI_RELIST_PERIOD', () => {
  it('is a Go duration of at least 100ms; unset is the default, anything else a clear error', () => {
    expect(criRelistPeriod(undefined)).toBeUndefined();
    expect(criRelistPeriod(' ')).toBeUndefined();
    expect(criRelistPeriod('10m')).toBe(600_000);
    expect(criRelistPeriod('250ms')).toBe(250);
    expect(() => criRelistPeriod('10')).toThrow(/PODRUN_CRI_RELIST_PERIOD "10": .*needs a unit/);
    expect(() => criRelistPeriod('0')).toThrow(/at least 100ms/);
    expect(() => criRelistPeriod('5ms')).toThrow(/at least 100ms/);
  });
});
