import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, afterAll, describe, expect, it } from 'vitest';
import { podUid } from '../../src/manifest/identity.js';
import { AgentSuite, pastRelists, type AgentProcess } from './agent-helpers.js';
import { podEvents, recordPodEvents, stopPodEvents, TEST_IMAGE, unique, until } from './helpers.js';

beforeAll(recordPodEvents);
afterAll(stopPodEvents);

// A container the engine will not create or start is not a crash, but it backs off like one
// (the kubelet's CreateContainerError / RunContainerError), instead of a hot loop against the engine.
const suite = new AgentSuite('fail');
const { world, ns } = suite;
let agent: AgentProcess | undefined;

const uidOf = (name: string): string => podUid({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: ns }, spec: { containers: [] } });

describe('containers the engine refuses', () => {
  it('retries a missing binary and a refused mount with back-off, and says why in get pods', async () => {
    const dir = join(world.dir, 'manifests');
    mkdirSync(dir);
    const nobin = unique('nobin');
    const badmount = unique('badmount');
    writeFileSync(
      join(dir, 'nobin.yaml'),
      `apiVersion: v1
kind: Pod
metadata: {name: ${nobin}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  containers: [{name: c, image: ${TEST_IMAGE}, command: [/nonexistent-binary]}]
`,
    );
    writeFileSync(
      join(dir, 'badmount.yaml'),
      `apiVersion: v1
kind: Pod
metadata: {name: ${badmount}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: ${TEST_IMAGE}
    command: [sleep, '3600']
    volumeMounts: [{name: v, mountPath: /}]
  volumes: [{name: v, emptyDir: {}}]
`,
    );
    const since = Math.floor(Date.now() / 1000) - 1;
    agent = suite.run(['--manifest-dir', dir, '--crash-backoff-initial', '2s', '--crash-backoff-max', '1m']);
    await agent.started();
    await agent.waitForLog(`pod ${ns}/${nobin}: container c: RunContainerError`);
    await agent.waitForLog(`pod ${ns}/${badmount}: container c: CreateContainerError`);
    const get = await until('get pods to show both reasons', async () => {
      const r = await world.cli('get', 'pods', '-n', ns);
      return r.out.includes('RunContainerError') && r.out.includes('CreateContainerError') ? r.out : undefined;
    });
    expect(get).toMatch(new RegExp(`^${nobin}\\s+0/1\\s+RunContainerError\\s`, 'm'));
    expect(get).toMatch(new RegExp(`^${badmount}\\s+0/1\\s+CreateContainerError\\s`, 'm'));
    const attempts = (name: string, reason: string): number =>
      agent!
        .logs()
        .split('\n')
        .filter((l) => l.includes(`pod ${ns}/${name}: container c: ${reason}`)).length;
    // Back-off 2 s, then 4 s, then 8 s: each is tried a second and a third time, then not for 8 s
    // (the hot loop made 80 starts in 10 s). That quiet spell is counted in the agent's own turns,
    // not slept: two relist periods (each resyncs every pod: a chance to start again), no fourth attempt.
    await until(
      'a third attempt at each',
      async () => (attempts(nobin, 'RunContainerError') >= 3 && attempts(badmount, 'CreateContainerError') >= 3 ? true : undefined),
      30_000,
    );
    await pastRelists(agent, 2);
    expect(attempts(nobin, 'RunContainerError')).toBe(3);
    expect(attempts(badmount, 'CreateContainerError')).toBe(3);
    // The engine agrees: one create per attempt (a refused create leaves no event), plus the sandbox's.
    const creates = (await podEvents(uidOf(nobin), since)).filter((a) => a === 'create').length;
    expect(creates - 1).toBe(attempts(nobin, 'RunContainerError'));
  });
});
