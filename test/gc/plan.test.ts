import { describe, expect, it } from 'vitest';
import { planContainerGc, planImageGc, type ImageInfo } from '../../src/gc/plan.js';
import type { ObservedContainer } from '../../src/runtime/observed.js';
import { desired, observedFor } from '../fixtures/pods.js';

const POD = (name: string) =>
  desired(`apiVersion: v1
kind: Pod
metadata: {name: ${name}}
spec: {containers: [{name: a, image: busybox:1.36}, {name: b, image: busybox:1.36}]}
`);

function deadCopies(c: ObservedContainer, n: number): ObservedContainer[] {
  return Array.from({ length: n }, (_, i) => ({
    ...c,
    id: `${c.name}-dead-${i}`,
    state: 'exited' as const,
    exitCode: 1,
    restartCount: c.restartCount - 1 - i,
    created: (c.created ?? 0) - 1 - i,
  }));
}

describe('container GC plan', () => {
  it('keeps the newest dead instance per container and removes the rest', () => {
    const d = POD('p');
    const o = observedFor(d, { a: { restartCount: 10 } });
    o.containers.push(...deadCopies(o.containers[0]!, 4));
    const plan = planContainerGc([o], new Set([d.uid]));
    expect(plan.removals.map((r) => r.id)).toEqual(['a-dead-1', 'a-dead-2', 'a-dead-3']);
    expect(plan.podsGone).toEqual([]);
    expect(planContainerGc([o], new Set([d.uid]), { maxPerPodContainer: 3 }).removals.map((r) => r.id)).toEqual(['a-dead-3']);
  });

  it("in a crash loop's back-off (no instance running), keeps the one that just died, for logs --previous", () => {
    const d = POD('p');
    const o = observedFor(d, { a: { restartCount: 5, state: 'exited', exitCode: 3 } });
    o.containers.push(...deadCopies(o.containers[0]!, 2));
    expect(planContainerGc([o], new Set([d.uid])).removals.map((r) => r.id)).toEqual(['a-dead-0', 'a-dead-1']);
  });

  it('removes dead sandboxes of earlier attempts, and whole pods no longer desired with nothing running', () => {
    const d = POD('p');
    const o = observedFor(d);
    o.sandboxes.push({ ...o.sandboxes[0]!, id: 'old-sandbox', state: 'notready', attempt: -1 });
    const gone = observedFor(POD('q'), { a: { state: 'exited', exitCode: 0 }, b: { state: 'exited', exitCode: 0 } }, { state: 'notready' });
    const running = observedFor(POD('r'));
    const plan = planContainerGc([o, gone, running], new Set([d.uid]));
    expect(plan.removals.filter((r) => r.pod === 'default/p').map((r) => r.id)).toEqual(['old-sandbox']);
    expect(plan.removals.filter((r) => r.pod === 'default/q')).toHaveLength(3);
    // Not desired but still running: the agent's worker stops it gracefully; GC does not.
    expect(plan.removals.filter((r) => r.pod === 'default/r')).toEqual([]);
    expect(plan.podsGone).toEqual([gone.uid]);
    // Without knowing what is desired (no agent), no pod goes whole.
    expect(planContainerGc([gone], undefined).podsGone).toEqual([]);
  });

  it('applies a global cap, oldest dead first', () => {
    const pods = ['p', 'q', 'r'].map((n, i) => observedFor(POD(n), { a: { state: 'exited', exitCode: 1, created: 100 + i } }));
    const plan = planContainerGc(pods, undefined, { maxPerPodContainer: 1, maxContainers: 1 });
    expect(plan.removals.map((r) => r.pod)).toEqual(['default/p', 'default/q']);
  });
});

describe('image GC plan', () => {
  const now = 10_000_000;
  const img = (id: string, o: Partial<ImageInfo>): ImageInfo => ({ id, tags: [id], size: 10, inUse: false, pinned: false, firstSeen: 0, lastUsed: 0, ...o });

  it('does nothing below the high threshold', () => {
    expect(planImageGc([img('a', {})], { capacity: 100, used: 84 }, now)).toEqual([]);
  });

  it('frees down to the low threshold, least recently used first, never in-use, pinned or young images', () => {
    const images = [
      img('old', { lastUsed: 1 }),
      img('older', { lastUsed: 0 }),
      img('used', { inUse: true }),
      img('pause', { pinned: true }),
      img('young', { firstSeen: now - 1000 }),
      img('recent', { lastUsed: 5 }),
    ];
    expect(planImageGc(images, { capacity: 100, used: 90 }, now).map((i) => i.id)).toEqual(['older']);
    expect(planImageGc(images, { capacity: 100, used: 95 }, now).map((i) => i.id)).toEqual(['older', 'old']);
    const smallOld = images.map((i) => (i.id === 'old' ? { ...i, size: 5 } : i));
    expect(planImageGc(smallOld, { capacity: 100, used: 99 }, now).map((i) => i.id)).toEqual(['older', 'old', 'recent']);
  });
});
