import { describe, expect, it } from 'vitest';
import { LABEL } from '../../src/runtime/labels.js';
import { FakeEngine } from '../fakes/fake-engine.js';
import { MemorySource } from '../fakes/memory-source.js';
import { fakeAgents, until } from '../fakes/fake-agents.js';

// The agent on the in-memory engine: sources in, the engine converged to them, nothing deleted
// that no loaded source can speak for.

const POD = (name: string, image = 'busybox:1'): string => `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: fake}
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - {name: c, image: ${image}}
`;

const { stateDir: newStateDir, newAgent, stopped } = fakeAgents();

const runningPods = (engine: FakeEngine): string[] =>
  [
    ...new Set(
      [...engine.containers.values()]
        .filter((c) => c.state === 'running' && c.labels[LABEL.containerName] === 'c')
        .map((c) => `${c.labels[LABEL.podName]}:${c.image}`),
    ),
  ].sort();

describe('Agent on the fake engine', () => {
  it('runs what its sources declare, replaces what changed, deletes what went, and converges once', async () => {
    const stateDir = newStateDir();
    const engine = new FakeEngine({ stateDir });
    const source = new MemorySource();
    const agent = newAgent(stateDir, engine, [source]);
    await agent.start();
    source.declare(POD('one'), POD('two'));
    // The merge of a source's change is paced (a share of the agent's time): on a loaded machine
    // it comes a moment after the declaration, and converged() speaks of what was merged.
    await until('both pods merged', () => agent.desiredPods().length === 2);
    expect(await agent.converged()).toBe(2);
    await until('both pods', () => runningPods(engine).length === 2);
    expect(runningPods(engine)).toEqual(['one:busybox:1', 'two:busybox:1']);

    source.declare(POD('one', 'busybox:2'));
    await until('one replaced and two gone', () => runningPods(engine).join() === 'one:busybox:2' && engine.podCount() === 1);
    expect((await agent.podList()).map((p) => (p as { metadata: { name: string } }).metadata.name)).toEqual(['one']);
  });

  it('never deletes a pod whose source has not loaded yet; deletes it once that source says it is gone', async () => {
    const stateDir = newStateDir();
    const engine = new FakeEngine({ stateDir });
    const declaring = new MemorySource('memory:slow');
    const first = newAgent(stateDir, engine, [declaring]);
    await first.start();
    declaring.declare(POD('kept'));
    await until('the pod', () => runningPods(engine).length === 1);
    await stopped(first);

    // The next agent's source answers late: until it has, the pod it made stays.
    const slow = new MemorySource('memory:slow', true);
    const second = newAgent(stateDir, engine, [slow]);
    await second.start();
    await second.idle();
    await new Promise((r) => setTimeout(r, 50));
    expect(runningPods(engine)).toEqual(['kept:busybox:1']);
    slow.load();
    await until('the pod to be deleted', () => engine.podCount() === 0);
  });
});
