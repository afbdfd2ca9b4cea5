import { describe, expect, it } from 'vitest';
import { DesiredSet } from '../../src/agent/desired-set.js';
import { silentLogger } from '../../src/log/silent.js';
import type { ObservedPod } from '../../src/runtime/observed.js';
import { LABEL } from '../../src/runtime/labels.js';
import { EventRecorder } from '../../src/status/events.js';
import { FakeEngine } from '../fakes/fake-engine.js';
import { MemorySource } from '../fakes/memory-source.js';
import { fakeAgents, until } from '../fakes/fake-agents.js';

// The kubelet removes nothing as "no longer declared" until every source has reported and that
// report is merged (kubelet.go: sourcesReady.AllReady() before HandlePodCleanups / deletePod). A
// source that is ready but not merged yet says nothing of what the desired set holds: a worker
// turn in that window (an engine event, a relist) must not delete the pod it is about to declare.

const POD = (name: string): string => `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: fake}
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - {name: c, image: busybox:1}
`;

/** A source whose start does not end until the test lets it (a URL still fetching its first answer). */
class HeldSource extends MemorySource {
  private let: () => void = () => undefined;
  private readonly held = new Promise<void>((r) => (this.let = r));

  override async start(onChange: () => void): Promise<void> {
    await super.start(onChange);
    await this.held;
  }

  release(): void {
    this.let();
  }
}

const { stateDir: newStateDir, newAgent, stopped } = fakeAgents();

const appContainer = (engine: FakeEngine): string | undefined =>
  [...engine.containers.values()].find((c) => c.state === 'running' && c.labels[LABEL.containerName] === 'c')?.id;

describe('no pod is deleted before every source is seen and merged', () => {
  it('an engine event between a source being ready and the first merge leaves the adopted pod running', async () => {
    const stateDir = newStateDir();
    const engine = new FakeEngine({ stateDir });
    const before = new MemorySource('memory:a');
    const first = newAgent(stateDir, engine, [before]);
    await first.start();
    before.declare(POD('kept'));
    await until('the pod', () => appContainer(engine) !== undefined);
    await stopped(first);
    const running = appContainer(engine) as string;
    const stops = (): number => (engine.calls.get('stop') ?? 0) + (engine.calls.get('stop sandbox') ?? 0) + (engine.calls.get('remove sandbox') ?? 0);
    const stopsBefore = stops();

    // The next agent: source a (the pod's) is ready at once, source b still loads, so nothing is merged yet.
    const a = new MemorySource('memory:a');
    a.declare(POD('kept'));
    const b = new HeldSource('memory:b');
    const second = newAgent(stateDir, engine, [a, b]);
    const started = second.start();
    await until('source a ready', () => a.ready);
    // An engine event on the pod in that window: its worker takes a turn.
    engine.addExited(running, 'old');
    await new Promise((r) => setTimeout(r, 20));
    await second.idle();
    expect(engine.containers.get(running)?.state).toBe('running');
    expect(stops()).toBe(stopsBefore);

    b.release();
    await started;
    expect(await second.converged()).toBe(1);
    await second.idle();
    // Adopted, never stopped nor made anew.
    expect(appContainer(engine)).toBe(running);
    expect(stops()).toBe(stopsBefore);
  });

  it('the desired set lets nothing be deleted until a merge has read every source ready, nor while a change waits to be merged', async () => {
    const stateDir = newStateDir();
    const a = new MemorySource('memory:a');
    const b = new MemorySource('memory:b', true);
    const set = new DesiredSet([a, b], { stateDir, log: silentLogger, events: new EventRecorder(), run: (d) => d });
    const onA: ObservedPod = { uid: 'u', name: 'p', namespace: 'ns', source: 'memory:a', sandboxes: [], containers: [] };
    const nobodys: ObservedPod = { ...onA, uid: 'v', source: 'file:/gone.yaml' };
    let touched = 0;
    await a.start(() => touched++);
    await b.start(() => touched++);
    // a is ready, but no merge has read it.
    expect(set.mayDelete(onA)).toBe(false);
    set.merge([]);
    expect(set.mayDelete(onA)).toBe(true);
    // A pod no source owns waits for every source: b has not loaded.
    expect(set.mayDelete(nobodys)).toBe(false);
    expect(set.sourcesReady).toBe(false);
    b.load();
    // b is ready now, but what it said is not merged.
    expect(set.mayDelete(nobodys)).toBe(false);
    set.merge([]);
    expect(set.sourcesReady).toBe(true);
    expect(set.mayDelete(nobodys)).toBe(true);
    // A change told and not merged yet (the merge paced): no deletion is decided from the set before it.
    set.sourcesChanged();
    expect(set.mayDelete(onA)).toBe(false);
    set.merge([]);
    expect(set.mayDelete(onA)).toBe(true);
    expect(touched).toBeGreaterThan(0);
  });
});
