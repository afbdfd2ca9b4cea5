import { describe, expect, it } from 'vitest';
import { ContainerRecords } from '../../src/pleg/records.js';
import { LABEL, MANAGED_BY } from '../../src/runtime/labels.js';
import type { EngineContainer, EngineRecord } from '../../src/runtime/observed.js';

// The cache's records indexed by pod: what one pod's look reads must be exactly its containers,
// through replacements, removals and a relist's clear.

const rec = (id: string, uid?: string): EngineContainer => ({
  kind: 'container',
  id,
  name: id,
  image: 'i',
  created: 0,
  labels: uid ? { [LABEL.podUid]: uid, [LABEL.managedBy]: MANAGED_BY, [LABEL.containerType]: 'app', [LABEL.containerName]: id } : {},
  state: 'running',
});

const ids = (rs: EngineRecord[]): string[] => rs.map((r) => r.id).sort();

describe('ContainerRecords', () => {
  it('answers a pod with its own containers only, kept right through replace and delete', () => {
    const r = new ContainerRecords();
    r.set('a1', rec('a1', 'A'));
    r.set('a2', rec('a2', 'A'));
    r.set('b1', rec('b1', 'B'));
    r.set('x', rec('x'));
    expect(ids(r.ofPod('A'))).toEqual(['a1', 'a2']);
    expect(ids(r.ofPod('B'))).toEqual(['b1']);
    expect(r.size).toBe(4);

    // The same id again (a fresh inspect) replaces, never doubles.
    r.set('a1', { ...rec('a1', 'A'), state: 'exited' });
    expect(
      r
        .ofPod('A')
        .map((x) => x.state)
        .sort(),
    ).toEqual(['exited', 'running']);
    expect(r.size).toBe(4);

    r.delete('a2');
    r.delete('b1');
    r.delete('nope');
    expect(ids(r.ofPod('A'))).toEqual(['a1']);
    expect(r.ofPod('B')).toEqual([]);
    expect(r.uids().sort()).toEqual(['', 'A']);
    // What is left in all: a1, and x (a record with no pod, kept under '').
    expect(r.size).toBe(2);
    expect(ids(r.ofPod(''))).toEqual(['x']);

    r.clear();
    expect(r.size).toBe(0);
    expect(r.ofPod('A')).toEqual([]);
    expect(r.uids()).toEqual([]);
  });

  it("keeps a pod's grouped view until one of its records changes, in place or by replacement", () => {
    const r = new ContainerRecords();
    r.set('a1', rec('a1', 'A'));
    r.set('b1', rec('b1', 'B'));
    const first = r.pod('A');
    expect(first?.containers.map((c) => c.state)).toEqual(['running']);
    expect(r.pod('A')).toBe(first);
    // Another pod's change leaves this view alone.
    r.set('b2', rec('b2', 'B'));
    expect(r.pod('A')).toBe(first);
    // An event changes the record in place: the view is made again.
    r.get('a1')!.state = 'exited';
    r.changed('a1');
    expect(r.pod('A')?.containers.map((c) => c.state)).toEqual(['exited']);
    r.set('a2', rec('a2', 'A'));
    expect(r.pod('A')?.containers).toHaveLength(2);
    r.delete('a1');
    r.delete('a2');
    expect(r.pod('A')).toBeUndefined();
    expect(r.pods().map((p) => p.uid)).toEqual(['B']);
  });
});
