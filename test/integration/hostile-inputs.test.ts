import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AgentSuite, pastRelist } from './agent-helpers.js';
import { containerIds, TEST_IMAGE, unique, until } from './helpers.js';

// What a misbehaving writer or container sends the agent (issue 20).
const suite = new AgentSuite('hostile');
const { world, ns } = suite;

describe('a manifest rewritten faster than it settles', () => {
  it('500 rewrites in 10 s between two versions, ending on the one in force, replace nothing', { timeout: 90_000 }, async () => {
    const dir = join(world.dir, unique('flap'));
    mkdirSync(dir);
    const name = unique('flap');
    const file = join(dir, 'pod.yaml');
    const version = (v: string): string => `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  containers: [{name: a, image: ${TEST_IMAGE}, command: [sleep, '3600'], env: [{name: V, value: '${v}'}]}]
`;
    writeFileSync(file, version('one'));
    const agent = suite.run(['--manifest-dir', dir]);
    const first = await until('the pod to run', async () => (await containerIds(ns, name)).a);
    for (let i = 0; i < 250; i++) {
      writeFileSync(file, version('two'));
      await new Promise((r) => setTimeout(r, 20));
      writeFileSync(file, version('one'));
      await new Promise((r) => setTimeout(r, 20));
    }
    await pastRelist();
    // Version two never stayed 300 ms: it was never applied.
    expect((await containerIds(ns, name)).a).toBe(first);
    expect(agent.logs()).not.toMatch(/starting container a \(.*spec changed/);
    // A version that stays is applied once.
    writeFileSync(file, version('three'));
    await until('the settled version to run', async () => ((await containerIds(ns, name)).a !== first ? true : undefined));
  });
});
