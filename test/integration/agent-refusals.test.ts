import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AgentSuite, pastRelist } from './agent-helpers.js';
import { containerIds, podContainers, TEST_IMAGE, unique, until } from './helpers.js';

// Issue 44: a pod the agent refuses was in its log only. With a tightened --allowed-host-paths, a
// newly refused pod shows in `get pods` (Failed, its reason) and `describe` (a Warning naming
// file, line and field); a pod that ran before the policy was tightened is told and kept.
const suite = new AgentSuite('refusals');
const { world, ns } = suite;

const hostPathPod = (name: string, path: string): string => `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  containers: [{name: c, image: ${TEST_IMAGE}, command: [sleep, '3600'], volumeMounts: [{name: d, mountPath: /d}]}]
  volumes: [{name: d, hostPath: {path: ${path}, type: Directory}}]
`;

type Listed = { items: { metadata: { name: string }; status: { phase: string; conditions: { type: string; status: string; reason?: string }[] } }[] };

describe('the agent shows the pods it refuses', () => {
  it('lists a refused pod Failed with its reason and a Warning, and keeps a running pod the new policy refuses', async () => {
    const dir = join(world.dir, 'manifests');
    const data = join(world.dir, 'data');
    mkdirSync(dir);
    mkdirSync(data);
    const [kept, refused] = [unique('kept'), unique('refused')];
    writeFileSync(join(dir, 'kept.yaml'), hostPathPod(kept, data));
    let agent = suite.run(['--manifest-dir', dir]);
    await agent.started();
    await until('the hostPath pod to run', async () => ((await podContainers(ns, kept)).filter((c) => c.State === 'running').length === 2 ? true : undefined));
    const before = await containerIds(ns, kept);
    await agent.stop();

    // The node's policy tightened: neither pod's path is allowed now.
    writeFileSync(join(dir, 'refused.yaml'), hostPathPod(refused, data));
    agent = suite.run(['--allowed-host-paths', '/srv/podrun-allowed', '--manifest-dir', dir]);
    await agent.started();
    const line = await until('the refused pod in get pods', async () => {
      const r = await world.cli('get', 'pods', '-n', ns);
      return r.out.split('\n').find((l) => l.startsWith(`${refused} `));
    });
    expect(line.split(/\s+/).slice(0, 4)).toEqual([refused, '0/0', 'Forbidden', '0']);
    const where = `${join(dir, 'refused.yaml')}:7:40 spec.volumes[0].hostPath.path: "${data}" is not under an allowed host path (--allowed-host-paths=/srv/podrun-allowed)`;
    const described = (await world.cli('describe', 'pod', '-n', ns, refused)).out;
    expect(described).toMatch(/Status:\s+Failed/);
    expect(described).toMatch(/Reason:\s+Forbidden/);
    expect(described).toContain(`Message:      Pod was rejected: ${where}`);
    expect(described).toMatch(new RegExp(`Warning\\s+Forbidden\\s+.*Pod was rejected: ${where.slice(0, where.indexOf(' '))}`));
    expect(await podContainers(ns, refused)).toEqual([]);

    // The pod that ran before is kept, told, and marked.
    const keptDescribed = (await world.cli('describe', 'pod', '-n', ns, kept)).out;
    expect(keptDescribed).toContain('the running pod is kept: podrun never stops a pod for a policy read after it started');
    expect(keptDescribed).toMatch(/Warning\s+Forbidden/);
    const listed = JSON.parse((await world.cli('get', 'pods', '-n', ns, '-o', 'json')).out) as Listed;
    const shown = listed.items.find((p) => p.metadata.name === kept)!;
    expect(shown.status.conditions.find((c) => c.type === 'podrun.io/Admitted')).toMatchObject({ status: 'False', reason: 'Forbidden' });
    await pastRelist(agent);
    expect(await containerIds(ns, kept)).toEqual(before);
    expect((await podContainers(ns, kept)).every((c) => c.State === 'running')).toBe(true);
  });
});
