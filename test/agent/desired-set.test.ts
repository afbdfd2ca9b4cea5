import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DesiredSet } from '../../src/agent/desired-set.js';
import type { Logger } from '../../src/log/logger.js';
import { EventRecorder } from '../../src/status/events.js';
import { MemorySource } from '../fakes/memory-source.js';

const stateDir = mkdtempSync(join(tmpdir(), 'podrun-desired-'));
afterAll(() => rmSync(stateDir, { recursive: true, force: true }));

const pod = (v: string): string => `apiVersion: v1
kind: Pod
metadata: {name: web}
spec: {containers: [{name: c, image: busybox:1.36, env: [{name: V, value: '${v}'}]}]}
`;

function world(...origins: string[]): {
  set: DesiredSet;
  sources: MemorySource[];
  warnings: string[];
  events: EventRecorder;
  running: () => string | undefined;
} {
  const sources = origins.map((o) => new MemorySource(o));
  const warnings: string[] = [];
  const log: Logger = { debug: () => undefined, info: () => undefined, warn: (m: string) => warnings.push(m), error: () => undefined };
  const events = new EventRecorder();
  const set = new DesiredSet(sources, { stateDir, log, events, run: (d) => d });
  const running = (): string | undefined => set.pods()[0]?.pod.spec.containers[0]?.env?.[0]?.value;
  return { set, sources, warnings, events, running };
}

describe('the desired set: who runs a pod two origins declare', () => {
  it("an apply is the latest word on a pod a watched file declares, and the file's next edit is the latest after it", async () => {
    const { set, sources, warnings, events, running } = world('file:/etc/podrun/web.yaml', 'apply:3ca88104d725c73c');
    const [file, applied] = sources as [MemorySource, MemorySource];
    for (const s of sources) await s.start(() => undefined);
    file.declare(pod('one'));
    set.merge([]);
    // The same file applied by hand: the same pod, no conflict.
    applied.declare(pod('one'));
    set.merge([]);
    expect(warnings).toEqual([]);
    applied.declare(pod('two'));
    set.merge([]);
    expect(running()).toBe('two');
    expect(warnings).toEqual([
      'conflict: pod default/web is also declared, differently, by /etc/podrun/web.yaml; running the one from apply:3ca88104d725c73c (applied) (remove the others, or make them alike, to end this)',
    ]);
    expect(events.list().map((e) => `${e.type} ${e.reason}`)).toEqual(['Warning Conflict']);
    file.declare(pod('three'));
    set.merge([]);
    expect(running()).toBe('three');
    // Nothing changed: nothing flips.
    set.merge([]);
    expect(running()).toBe('three');
  });

  it('a stray copy of a watched file does not replace the pod that runs', async () => {
    const { set, sources, running } = world('file:/m/b.yaml', 'file:/m/a.yaml');
    const [b, a] = sources as [MemorySource, MemorySource];
    for (const s of sources) await s.start(() => undefined);
    b.declare(pod('from-b'));
    set.merge([]);
    a.declare(pod('from-a'));
    set.merge([]);
    expect(running()).toBe('from-b');
  });
});

describe('the desired set over time', () => {
  it('forgets a conflict once it ended: 200 names contested and given up leave nothing told behind', { timeout: 60_000 }, async () => {
    const { set, sources, warnings } = world('file:/etc/podrun/a.yaml', 'file:/etc/podrun/b.yaml');
    const [a, b] = sources as [MemorySource, MemorySource];
    for (const s of sources) await s.start(() => undefined);
    set.merge([]);
    const before = set.stateSize();
    const named = (name: string, v: string): string => pod(v).replace('name: web', `name: ${name}`);
    for (let i = 0; i < 200; i++) {
      a.declare(named(`p${i}`, 'a'));
      b.declare(named(`p${i}`, 'b'));
      set.merge([]);
      a.declare();
      b.declare();
      set.merge([]);
    }
    expect(warnings).toHaveLength(200);
    expect(set.stateSize()).toEqual(before);
  });
});
