import { chmodSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { AgentSuite, sleepingPod } from './agent-helpers.js';
import { dockerTrace, type DockerCall } from './docker-trace.js';
import { podContainers, TEST_IMAGE, unique, until } from './helpers.js';

// One actor per state directory (issue 43): with an agent running, `podrun apply` and `podrun
// delete` ask it and make no engine call that changes a pod; the agent does the work. The CLI's
// own calls are counted by a proxy in front of the engine's socket (DOCKER_HOST), as
// docker-apply-calls.test.ts counts them.

const suite = new AgentSuite('actor');
const { world, ns } = suite;

/** Every call that is not a read: a create, start, stop, kill, removal or pull. */
function changing(calls: DockerCall[]): string[] {
  return calls.filter((c) => !c.call.startsWith('GET ') && !c.call.startsWith('HEAD ')).map((c) => c.call);
}

const BIN = fileURLToPath(new URL('../../bin/podrun', import.meta.url));

/**
 * bin/podrun in a mount namespace of its own where the state directory's applied sets are
 * read-only: whatever it records there fails (EROFS), while the agent, outside it, writes as ever.
 * The lock (abstract, in the network namespace) and the agent's socket are reached as usual.
 */
function readOnlyApplied(): string {
  const wrapper = world.write(
    'podrun-applied-ro',
    `#!/bin/sh\nexec unshare -m sh -c 'mount --bind -o ro "$0" "$0" && exec "$@"' '${join(world.stateDir, 'applied')}' '${BIN}' "$@"\n`,
  );
  chmodSync(wrapper, 0o755);
  return wrapper;
}

async function traced(args: string[], o: { bin?: string } = {}): Promise<{ code: number; out: string; err: string; changes: string[]; count: number }> {
  const trace = await dockerTrace();
  try {
    const r = await world.bin(args, { env: { DOCKER_HOST: trace.host }, ...o });
    const calls = trace.calls();
    return { ...r, changes: changing(calls), count: calls.length };
  } finally {
    await trace.close();
  }
}

const stubborn = (name: string): string => `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 30
  containers: [{name: c, image: ${TEST_IMAGE}, command: [sh, -c, "trap '' TERM; while :; do sleep 1; done"]}]
`;

describe('with an agent running, the CLI asks and the agent acts', () => {
  it('apply and delete --grace-period make no engine call that changes a pod, and the pod is really made and deleted', async () => {
    const agent = suite.run([]);
    await agent.started();
    const name = unique('asked');
    const file = world.write(`${name}.yaml`, sleepingPod(name, ns));

    // The CLI cannot write the applied sets: the agent records the set, asked over its socket.
    const applied = await traced(['apply', file], { bin: readOnlyApplied() });
    expect(applied.code, applied.err).toBe(0);
    expect(applied.out).toContain(`pod/${ns}/${name} created`);
    expect(applied.out).toContain('1 pod ready');
    expect(applied.changes).toEqual([]);
    expect((await podContainers(ns, name)).filter((c) => c.State === 'running')).toHaveLength(2);
    await agent.waitForLog(/apply asked: set [0-9a-f]{16} recorded \(1 created\)/);
    const sets = readdirSync(join(world.stateDir, 'applied')).filter((n) => n.endsWith('.json'));
    expect(sets.filter((n) => readFileSync(join(world.stateDir, 'applied', n), 'utf8').includes(`"name": "${name}"`))).toHaveLength(1);

    const deleted = await traced(['delete', '-n', ns, name, '--grace-period', '1']);
    expect(deleted.code, deleted.err).toBe(0);
    expect(deleted.out).toBe(`pod/${ns}/${name} deleted\n`);
    expect(deleted.changes).toEqual([]);
    // Asked, not read: the CLI's only calls were its look at what to delete.
    expect(deleted.count).toBeGreaterThan(0);
    expect(await podContainers(ns, name)).toEqual([]);
    await agent.waitForLog(`pod ${ns}/${name}: deletion asked (grace 1s)`);
  });

  it("delete --force asks the agent to kill at once, whatever the pod's grace period", async () => {
    const agent = suite.run([]);
    await agent.started();
    const name = unique('forced');
    const applied = await world.bin(['apply', world.write(`${name}.yaml`, stubborn(name))]);
    expect(applied.code, applied.err).toBe(0);
    const deleted = await traced(['delete', '-n', ns, name, '--force']);
    expect(deleted.code, deleted.err).toBe(0);
    expect(deleted.changes).toEqual([]);
    // Killed, not stopped after its 30 s: the container that ignores SIGTERM is gone when delete returns.
    expect(await podContainers(ns, name)).toEqual([]);
    await agent.waitForLog(`pod ${ns}/${name}: deletion asked (grace 0s)`);
  });
});

describe('pull with an agent running', () => {
  it('asks the agent, which has the images: the CLI asks the engine nothing', async () => {
    const agent = suite.run([]);
    await agent.started();
    const name = unique('pulled');
    const r = await traced(['pull', '-f', world.write(`${name}.yaml`, sleepingPod(name, ns))]);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toBe('2 of 2 images present\n');
    expect(r.count).toBe(0);
  });
});

describe('without an agent, the CLI holds the lock while it acts', () => {
  it('shows the pods it deletes as Terminating to get, and a second delete is told who acts instead of racing it', async () => {
    const name = unique('held');
    const applied = await world.bin([
      'apply',
      world.write(`${name}.yaml`, stubborn(name).replace('terminationGracePeriodSeconds: 30', 'terminationGracePeriodSeconds: 4')),
    ]);
    expect(applied.code, applied.err).toBe(0);
    const first = world.bin(['delete', '-n', ns, name]);
    await until(
      'get to show it Terminating',
      async () => (/\sTerminating\s/.test((await world.bin(['get', 'pods', '-n', ns, name, '--no-headers'])).out) ? true : undefined),
      10_000,
    );
    const second = await world.bin(['delete', '-n', ns, name]);
    expect(second.code).toBe(1);
    expect(second.err).toMatch(/^podrun: podrun delete \(pid \d+\) is changing the pods of state directory .*; try again once it ends\n$/m);
    // apply and gc too: each told who acts, and nothing applied.
    const other = unique('waits');
    const apply = await world.bin(['apply', '--no-wait', world.write(`${other}.yaml`, sleepingPod(other, ns))]);
    expect(apply.code).toBe(1);
    expect(apply.err).toMatch(/^podrun: podrun delete \(pid \d+\) is changing the pods of state directory /m);
    expect(apply.err).toContain('podrun: nothing was applied');
    expect(await podContainers(ns, other)).toEqual([]);
    const gc = await world.bin(['gc']);
    expect(gc.code).toBe(1);
    expect(gc.err).toMatch(/^podrun: podrun delete \(pid \d+\) is changing the pods/m);
    const done = await first;
    expect(done.code, done.err).toBe(0);
    expect(await podContainers(ns, name)).toEqual([]);
  });
});
