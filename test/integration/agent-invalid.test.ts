import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { copyCases, EXPECTED, makeSpecialCases } from '../fixtures/invalid-cases.js';
import { AgentProcess, pastRelist } from './agent-helpers.js';
import { agentGetText, containerIds, docker, podContainers, TEST_IMAGE, unique, until, World } from './helpers.js';
import { LABEL } from '../../src/runtime/labels.js';

// Every bad manifest of test/fixtures/invalid/ (and the ones git cannot hold) dropped at once into
// a running agent's directory, beside a good pod: the agent stays up, the good pod is untouched,
// and each file's error is in the log, the status file and the metrics.
const world = new World();
let agent: AgentProcess | undefined;
afterAll(async () => {
  await agent?.stop();
  await world.cleanup();
});

describe('the agent and a directory full of bad manifests', () => {
  it('keeps the good pod, reports every bad file, and stays up', async () => {
    const ns = unique('beside');
    const name = unique('good');
    const dir = join(world.dir, 'manifests');
    mkdirSync(dir);
    writeFileSync(
      join(dir, 'good.yaml'),
      `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  containers: [{name: c, image: ${TEST_IMAGE}, command: [sleep, '3600']}]
`,
    );
    agent = new AgentProcess(world.stateDir, ['--manifest-dir', dir]);
    await agent.started();
    const before = await until('the good pod to run', async () =>
      (await podContainers(ns, name)).filter((c) => c.State === 'running').length === 2 ? containerIds(ns, name) : undefined,
    );

    copyCases(dir);
    const expected = { ...EXPECTED, ...makeSpecialCases(dir) };
    const count = Object.keys(expected).length;
    type Status = { sources: { name: string; errors: string[] }[] };
    const status = await until(
      `all ${count} errors in agent-status.json`,
      async () => {
        const s = JSON.parse(readFileSync(join(world.stateDir, 'agent-status.json'), 'utf8')) as Status;
        const mine = s.sources.find((x) => x.name === `dir:${dir}`);
        return mine && mine.errors.length === count ? mine : undefined;
      },
      60_000,
    );
    const want = Object.entries(expected)
      .map(([file, line]) => `${join(dir, file)}:${line}`)
      .sort();
    expect([...status.errors].sort()).toEqual(want);
    const log = agent.logs();
    for (const line of want) expect(log, line).toContain(`${line} (keeping the last good version)`);
    expect(await agentGetText(world.stateDir, '/metrics')).toContain(`podrun_source_errors{source="dir:${dir}"} ${count}`);

    // A rescan and relists later (pastRelist), still nothing else has happened.
    await pastRelist(agent);
    expect(agent.proc.exitCode).toBeNull();
    expect(await containerIds(ns, name)).toEqual(before);
    expect((await podContainers(ns, name)).every((c) => c.State === 'running')).toBe(true);
    const strays = await docker.listContainers({
      all: true,
      filters: JSON.stringify({ label: [`${LABEL.instance}=${world.instance}`, `${LABEL.podNamespace}=invalid-fixtures`] }),
    });
    expect(strays).toEqual([]);
  });
});
