import { describe, expect, it } from 'vitest';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AgentSuite, pastRelist, sleepingPod } from './agent-helpers.js';
import { containerIds, unique, until } from './helpers.js';

// Issue 29, item 4: an apply updates a pod by name, wherever its manifest came from, and a pod's
// source is shown as the path people gave, never as podrun's hash of an applied set.
const suite = new AgentSuite('byname');
const { world, ns } = suite;

const pod = (name: string, v = 'one'): string => sleepingPod(name, ns, v);

interface Status {
  conflicts: { key: string }[];
}
const status = (): Status => JSON.parse(readFileSync(join(world.stateDir, 'agent-status.json'), 'utf8')) as Status;

/** The applied set files that record `name`. */
function setsHolding(name: string): string[] {
  const dir = join(world.stateDir, 'applied');
  return readdirSync(dir).filter((n) => n.endsWith('.json') && readFileSync(join(dir, n), 'utf8').includes(`"name": "${name}"`));
}

/** SOURCE, the last column of `get -o wide`, of the pod's row. */
async function sourceColumn(name: string): Promise<string | undefined> {
  const r = await world.cli('get', 'pods', '-n', ns, name, '-o', 'wide');
  return r.out
    .split('\n')
    .find((l) => l.startsWith(`${name} `))
    ?.trim()
    .split(/\s+/)
    .at(-1);
}

describe('apply updates a pod by name, wherever it came from', () => {
  it('the same pod applied from standard input and then by path is one pod, in one set, with no conflict; SOURCE is the path', async () => {
    const name = unique('twice');
    const file = world.write(`${name}.yaml`, pod(name));
    const viaStdin = await world.bin(['apply', '-f', '-'], { input: pod(name) });
    expect(viaStdin.code, viaStdin.err).toBe(0);
    const ids = await containerIds(ns, name);
    const viaPath = await world.cli('apply', '-f', file);
    expect(viaPath.code, viaPath.err).toBe(0);
    expect(viaPath.out).toContain(`pod/${ns}/${name} unchanged`);
    expect(setsHolding(name)).toHaveLength(1);

    const agent = suite.run([]);
    await agent.started();
    await pastRelist(agent);
    expect(status().conflicts).toEqual([]);
    expect(agent.logs()).not.toContain('conflict');
    // Still the same containers: nothing was recreated for being applied twice.
    expect(await containerIds(ns, name)).toEqual(ids);
    expect(await sourceColumn(name)).toBe(file);
  });

  it('with an agent running, applying by path and again from standard input moves the pod, never declares it twice', async () => {
    const agent = suite.run([]);
    await agent.started();
    const name = unique('moved');
    const file = world.write(`${name}.yaml`, pod(name));
    expect((await world.cli('apply', '-f', file)).code).toBe(0);
    expect(await sourceColumn(name)).toBe(file);
    const again = await world.bin(['apply', '-f', '-'], { input: pod(name, 'two') });
    expect(again.code, again.err).toBe(0);
    expect(setsHolding(name)).toHaveLength(1);
    await until('SOURCE to be stdin', async () => ((await sourceColumn(name)) === 'stdin' ? true : undefined));
    expect(status().conflicts).toEqual([]);
    expect(agent.logs()).not.toContain('conflict');
  });

  it('with an agent running, the same pod applied again from standard input moves to that set and keeps its containers (never declared nowhere meanwhile)', async () => {
    const agent = suite.run([]);
    await agent.started();
    const name = unique('kept');
    const file = world.write(`${name}.yaml`, pod(name));
    expect((await world.cli('apply', '-f', file)).code).toBe(0);
    await until('the pod to run', async () => ((await containerIds(ns, name)).a ? true : undefined));
    const ids = await containerIds(ns, name);
    // Its old set held only this pod: the file goes at once, while the new set waits to settle.
    const again = await world.bin(['apply', '-f', '-'], { input: pod(name) });
    expect(again.code, again.err).toBe(0);
    await until('SOURCE to be stdin', async () => ((await sourceColumn(name)) === 'stdin' ? true : undefined));
    await pastRelist(agent);
    expect(await containerIds(ns, name)).toEqual(ids);
    expect(status().conflicts).toEqual([]);
    expect(agent.logs()).not.toContain('conflict');
  });

  it('a file the agent watches, applied by hand as well, is one pod; a different version applied by hand is the latest word, and says what it overrides', async () => {
    const dir = join(world.dir, 'watched');
    mkdirSync(dir, { recursive: true });
    const name = unique('watched');
    const file = join(dir, `${name}.yaml`);
    writeFileSync(file, pod(name));
    const agent = suite.run(['--manifest-dir', dir]);
    await agent.started();
    await until('the watched pod to run', async () => ((await containerIds(ns, name)).a ? true : undefined));
    expect(await sourceColumn(name)).toBe(file);

    const same = await world.cli('apply', '-f', file);
    expect(same.code, same.err).toBe(0);
    await pastRelist(agent);
    expect(status().conflicts).toEqual([]);
    expect(agent.logs()).not.toContain('conflict');
    expect(await sourceColumn(name)).toBe(file);

    const copy = world.write(`${name}-v2.yaml`, pod(name, 'two'));
    const newer = await world.cli('apply', '-f', copy);
    expect(newer.code, newer.err).toBe(0);
    await until('SOURCE to be the applied copy', async () => ((await sourceColumn(name)) === copy ? true : undefined));
    const described = await world.cli('describe', 'pod', '-n', ns, name);
    expect(described.out).toContain(`Conflict`);
    expect(described.out).toContain(`is also declared, differently, by ${file}; running the one from ${copy} (applied)`);
    expect(agent.logs()).not.toMatch(/apply:[0-9a-f]{16}/);
  });
});
