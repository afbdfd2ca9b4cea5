import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { applyAsked } from '../../src/agent/asked-apply.js';
import { silentLogger } from '../../src/log/silent.js';
import { loadManifestText } from '../../src/manifest/load.js';
import { OPEN_POLICY } from '../../src/manifest/policy.js';
import type { Pod } from '../../src/manifest/types.js';
import { LABEL } from '../../src/runtime/labels.js';
import type { ApplyAsk } from '../../src/server/client.js';
import { appliedDir } from '../../src/sources/applied-sets.js';
import { FakeEngine } from '../fakes/fake-engine.js';
import { fakeAgents, until } from '../fakes/fake-agents.js';

// `podrun apply` with an agent asks it over the socket (`Agent.applyPods`): the agent validates the
// pods again, records the set itself, merges it at once and answers with its plan; a dry run
// records nothing; a set it refuses leaves everything as it was.

const { stateDir: newStateDir, newAgent } = fakeAgents();

const SET = '00112233445566aa';

/** A pod as the CLI loads it: validated and defaulted. */
function loaded(name: string, image = 'busybox:1'): Pod {
  const text = `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: fake}
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - {name: c, image: ${image}}
`;
  const pod = loadManifestText({ file: `${name}.yaml`, source: `file:/m/${name}.yaml`, text }).pods[0]?.pod;
  if (!pod) throw new Error(`${name} does not load`);
  return JSON.parse(JSON.stringify(pod)) as Pod;
}

const ask = (pods: Pod[], o: Partial<ApplyAsk> = {}): ApplyAsk => ({
  applySet: SET,
  pods: pods.map((pod) => ({ source: `file:/m/${pod.metadata.name}.yaml`, pod })),
  prune: false,
  dryRun: false,
  ...o,
});

const running = (engine: FakeEngine): string[] =>
  [
    ...new Set(
      [...engine.containers.values()]
        .filter((c) => c.state === 'running' && c.labels[LABEL.containerName] === 'c')
        .map((c) => `${c.labels[LABEL.podName]}:${c.image}`),
    ),
  ].sort();

const NO_ACTIONS = { killPod: false, createSandbox: false, sandboxAttempt: 0, containersToKill: [], containersToStart: [] };

const setFile = (stateDir: string): string => join(appliedDir(stateDir), `${SET}.json`);

async function started(): Promise<{ stateDir: string; engine: FakeEngine; agent: ReturnType<typeof newAgent> }> {
  const stateDir = newStateDir();
  const engine = new FakeEngine({ stateDir });
  const agent = newAgent(stateDir, engine, []);
  await agent.start();
  return { stateDir, engine, agent };
}

describe('an apply asked of the agent', () => {
  it('is recorded by the agent and merged before it answers with the plan; its workers carry it out', async () => {
    const { stateDir, engine, agent } = await started();
    const answer = await agent.applyPods(ask([loaded('web')]));
    expect(answer).toEqual({
      plans: [
        {
          key: 'fake/web',
          verdict: 'created',
          actions: { reason: 'no sandbox', containersToKill: [], containersToStart: [{ name: 'c', reason: 'pod (re)created' }] },
        },
      ],
    });
    // Declared when the answer comes: no wait for the directory's watch or its settling.
    expect(agent.desiredPods().map((d) => `${d.key} ${d.origin.source}`)).toEqual([`fake/web apply:${SET}`]);
    // The record the agent reads at its next start, with where the pod was applied from.
    const record = JSON.parse(readFileSync(setFile(stateDir), 'utf8')) as { sources: Record<string, string>; items: Pod[] };
    expect(record.sources).toEqual({ 'fake/web': 'file:/m/web.yaml' });
    expect(record.items.map((p) => p.metadata.name)).toEqual(['web']);
    await until('web to run', () => running(engine).join() === 'web:busybox:1');

    await agent.idle();
    expect((await agent.applyPods(ask([loaded('web')]))).plans?.map((p) => p.verdict)).toEqual(['unchanged']);
    const updated = await agent.applyPods(ask([loaded('web', 'busybox:2')]));
    expect(updated.plans?.[0]).toMatchObject({ key: 'fake/web', verdict: 'updated', actions: { containersToStart: [{ name: 'c' }] } });
    await until('web replaced', () => running(engine).join() === 'web:busybox:2');
  });

  it('as a dry run, answers the plan and records and declares nothing', async () => {
    const { stateDir, engine, agent } = await started();
    const answer = await agent.applyPods(ask([loaded('web')], { dryRun: true }));
    expect(answer.plans?.map((p) => `${p.key} ${p.verdict}`)).toEqual(['fake/web created']);
    expect(readdirSync(appliedDir(stateDir))).toEqual([]);
    expect(agent.desiredPods()).toEqual([]);
    await agent.idle();
    expect(engine.podCount()).toBe(0);
  });

  it('refuses a set with an invalid pod or a pod sent twice, naming where each came from, and records nothing', async () => {
    const { stateDir, agent } = await started();
    const bad = { ...loaded('bad'), spec: { ...loaded('bad').spec, containers: [] } };
    const answer = await agent.applyPods(ask([loaded('web'), bad, loaded('web')]));
    expect(answer.plans).toBeUndefined();
    expect(answer.refused).toEqual([
      expect.stringMatching(/^\/m\/bad\.yaml \(pods\[1\] as sent\):1:\d+ spec\.containers: /),
      'pods[2]: pod fake/web is also pods[0]',
    ]);
    expect(existsSync(setFile(stateDir))).toBe(false);
    expect(agent.desiredPods()).toEqual([]);
  });

  it('with prune, plans the deletion of what the set applied before and leaves out now, and deletes it', async () => {
    const { engine, agent } = await started();
    await agent.applyPods(ask([loaded('web'), loaded('db')]));
    await until('both to run', () => running(engine).length === 2);
    const pruned = await agent.applyPods(ask([loaded('web')], { prune: true }));
    expect(pruned.plans?.map((p) => `${p.key} ${p.verdict}`)).toEqual(['fake/web unchanged', 'fake/db deleted']);
    expect(agent.desiredPods().map((d) => d.key)).toEqual(['fake/web']);
    await until('db deleted', () => running(engine).join() === 'web:busybox:1' && engine.podCount() === 1);
  });

  it('that cannot be recorded fails with where and why, and merges nothing', async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'podrun-asked-'));
    try {
      // Where the sets go is no directory: every write there fails, as on a full or read-only disk.
      writeFileSync(appliedDir(stateDir), '');
      let merged = 0;
      const x = { stateDir, policy: OPEN_POLICY, cache: { pods: () => [] }, foresee: () => NO_ACTIONS, recorded: () => merged++, log: silentLogger };
      await expect(applyAsked(x, ask([loaded('web')]))).rejects.toThrow(`cannot record the applied set in ${appliedDir(stateDir)}: E`);
      expect(merged).toBe(0);
    } finally {
      rmSync(stateDir, { recursive: true, force: true });
    }
  });
});
