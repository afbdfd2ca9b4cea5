import { afterEach, describe, expect, it, vi } from 'vitest';
import type { EngineEvent } from '../../src/runtime/runtime-types.js';
import { busyboxPod, criBed, runPod, type CriBed } from './cri-fake-bed.js';

// The CRI engine's watch (watchEvents) on the in-memory runtime, both ways the kubelet's PLEG
// follows a runtime: by relisting (a runtime whose GetContainerEvents is Unimplemented, as
// containerd 1.6) and by the runtime's own container events (containerd 1.7+).

/** Long enough never to run in a test: what is seen then came from the runtime's events. */
const NEVER_MS = 3_600_000;

let bed: CriBed;
let stop: (() => void) | undefined;
afterEach(() => {
  stop?.();
  stop = undefined;
  bed.dispose();
});

interface Watched {
  events: EngineEvent[];
  notices: string[];
  ended: (Error | undefined)[];
  /** Each id's kinds in order, exits with their code, a sandbox's states. */
  story(id: string): string[];
}

async function watch(b: CriBed, notices: string[]): Promise<Watched> {
  const events: EngineEvent[] = [];
  const ended: (Error | undefined)[] = [];
  stop = await b.engine.watchEvents(
    (e) => events.push(e),
    (err) => ended.push(err),
  );
  return {
    events,
    notices,
    ended,
    story: (id) =>
      events.filter((e) => e.id === id).map((e) => (e.kind === 'sandbox' ? `sandbox ${e.state}` : e.kind === 'exited' ? `exited ${e.exitCode}` : e.kind)),
  };
}

function bedWithNotices(o: Parameters<typeof criBed>[0]): { notices: string[] } {
  const notices: string[] = [];
  bed = criBed({ ...o, observer: { notice: (m) => notices.push(m) } });
  return { notices };
}

const settle = { timeout: 10_000, interval: 5 };

describe('the CRI engine watching a runtime without container events', () => {
  it('tells each change it finds by relisting, with the exit code, and asks GetContainerEvents of the engine once', async () => {
    const { notices } = bedWithNotices({ relistPeriodMs: 10 });
    bed.runtime.eventsUnimplemented = true;
    const w = await watch(bed, notices);
    const { sandbox, containerId } = await runPod(bed, busyboxPod('web'));
    await vi.waitFor(() => expect(w.story(containerId)).toEqual(['started']), settle);
    bed.runtime.exitContainer(containerId, 3);
    await vi.waitFor(() => expect(w.story(containerId)).toEqual(['started', 'exited 3']), settle);
    await bed.engine.removeContainer(containerId);
    await vi.waitFor(() => expect(w.story(containerId)).toEqual(['started', 'exited 3', 'removed']), settle);
    expect(w.story(sandbox.id)).toEqual(['sandbox ready']);
    expect(notices.filter((n) => n.includes('Unimplemented'))).toHaveLength(1);
    // A watch again (the cache reconnecting) does not ask a runtime that said it has no events.
    stop?.();
    await watch(bed, notices);
    expect(bed.runtime.callsOf('GetContainerEvents')).toHaveLength(1);
    expect(w.ended).toEqual([]);
  });

  it('ends the watch with the error when a relist fails, so the cache reconnects', async () => {
    bedWithNotices({ relistPeriodMs: 10 });
    bed.runtime.eventsUnimplemented = true;
    const w = await watch(bed, []);
    bed.runtime.injectError('ListPodSandbox', new Error('connection reset'));
    await vi.waitFor(() => expect(w.ended).toHaveLength(1), settle);
    expect(w.ended[0]?.message).toContain('connection reset');
  });
});

describe("the CRI engine following the runtime's container events", () => {
  it('tells each change from the events alone, the relist asked only for its baseline', async () => {
    const { notices } = bedWithNotices({ relistPeriodMs: NEVER_MS, eventedRelistPeriodMs: NEVER_MS });
    const w = await watch(bed, notices);
    const { sandbox, containerId } = await runPod(bed, busyboxPod('web'));
    await vi.waitFor(() => expect(w.story(containerId)).toEqual(['created', 'started']), settle);
    bed.runtime.exitContainer(containerId, 7);
    await vi.waitFor(() => expect(w.story(containerId)).toEqual(['created', 'started', 'exited 7']), settle);
    await bed.engine.removeSandbox(sandbox.id);
    await vi.waitFor(() => expect(w.story(sandbox.id)).toEqual(['sandbox ready', 'sandbox notready', 'sandbox removed']), settle);
    expect(w.story(containerId)).toEqual(['created', 'started', 'exited 7', 'removed']);
    expect(bed.runtime.callsOf('ListContainers')).toHaveLength(1);
    expect(notices.filter((n) => n.includes('following the runtime'))).toHaveLength(1);
  });

  it("tells nothing twice when the relist saw a change before the runtime's events about it arrived", async () => {
    const { notices } = bedWithNotices({ relistPeriodMs: 10, eventedRelistPeriodMs: 10 });
    const w = await watch(bed, notices);
    bed.runtime.holdEvents();
    const { sandbox, containerId } = await runPod(bed, busyboxPod('web'));
    await vi.waitFor(() => expect(w.story(containerId)).toEqual(['started']), settle);
    // The stream's CREATED and STARTED now come late, after the relist told the start.
    bed.runtime.releaseEvents();
    bed.runtime.exitContainer(containerId, 4);
    await vi.waitFor(() => expect(w.story(containerId)).toContain('exited 4'), settle);
    const listsThen = bed.runtime.callsOf('ListContainers').length;
    await vi.waitFor(() => expect(bed.runtime.callsOf('ListContainers').length).toBeGreaterThan(listsThen + 2), settle);
    expect(w.story(containerId)).toEqual(['started', 'exited 4']);
    expect(w.story(sandbox.id)).toEqual(['sandbox ready']);
  });

  it("drops the events of another podrun instance's pods on the same runtime", async () => {
    bedWithNotices({ relistPeriodMs: NEVER_MS, eventedRelistPeriodMs: NEVER_MS });
    const w = await watch(bed, []);
    const theirs = criBed({}, bed.runtime);
    try {
      await runPod(theirs, busyboxPod('other'));
      const mine = await runPod(bed, busyboxPod('web'));
      await vi.waitFor(() => expect(w.story(mine.containerId)).toEqual(['created', 'started']), settle);
      expect(new Set(w.events.map((e) => e.id))).toEqual(new Set([mine.sandbox.id, mine.containerId]));
    } finally {
      theirs.dispose();
    }
  });
});
