import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AgentSuite, pastRelist } from './agent-helpers.js';
import { FaultyEngine } from './engine-helpers.js';
import { agentGetText, busyPodYaml, podContainers, TEST_IMAGE, unique, until } from './helpers.js';

// Resource usage and node status as the kubelet serves them: /stats/summary (Summary API),
// `podrun top pods` (kubectl top's columns, from the agent or from the engine alone), /node and
// `podrun get node` with conditions from the eviction signals.
const suite = new AgentSuite('stats');
const proxy = new FaultyEngine();
afterAll(() => proxy.stop());

interface Summary {
  node: {
    nodeName: string;
    cpu: { usageCoreNanoSeconds: number };
    memory: { availableBytes: number; workingSetBytes: number };
    fs?: { capacityBytes: number };
    rlimit: { maxpid: number };
  };
  pods: {
    podRef: { name: string; namespace: string };
    cpu: { usageNanoCores?: number };
    memory: { workingSetBytes: number };
    network?: { rxBytes: number };
    containers: { name: string; cpu: { usageNanoCores?: number }; memory: { workingSetBytes: number }; rootfs?: { usedBytes: number } }[];
  }[];
}

const MiB = 2 ** 20;

describe('resource usage and node status', () => {
  it('reads CPU, working set and network per container and pod, and shows them as kubectl top does', async () => {
    const dir = join(suite.world.dir, 'manifests');
    mkdirSync(dir);
    const name = unique('busy');
    writeFileSync(join(dir, 'pod.yaml'), busyPodYaml(name, suite.ns));
    // A host-network pod shares the node's interfaces: like the engine's stats, no network of its own.
    const host = unique('hostnet');
    writeFileSync(
      join(dir, 'host.yaml'),
      `apiVersion: v1
kind: Pod
metadata: {name: ${host}, namespace: ${suite.ns}}
spec:
  terminationGracePeriodSeconds: 0
  hostNetwork: true
  containers:
  - {name: idle, image: ${TEST_IMAGE}, command: [sleep, '3600']}
`,
    );
    const agent = suite.run(['--manifest-dir', dir]);
    await agent.started();
    // Nobody has asked yet: no readings, no engine calls for them.
    await until(
      'the pod to run',
      async () => ((await podContainers(suite.ns, name)).filter((c) => c.State === 'running').length === 3 ? true : undefined),
      30_000,
    );
    // Past relists and a resync of every pod: still no reading taken, no engine call made for one.
    await pastRelist(agent);
    const unasked = await agentGetText(suite.world.stateDir, '/metrics');
    expect(unasked).toMatch(/^podrun_stats_engine_calls_total 0$/m);
    expect(unasked).toMatch(/^podrun_stats_collection_duration_seconds_count 0$/m);
    const summary = await until(
      "a CPU rate and the hog's memory in /stats/summary",
      async () => {
        const s = JSON.parse((await agentGetText(suite.world.stateDir, '/stats/summary')) ?? '{}') as Summary;
        const p = s.pods?.find((x) => x.podRef.name === name);
        const burner = p?.containers.find((c) => c.name === 'burner');
        const hog = p?.containers.find((c) => c.name === 'hog');
        return burner?.cpu.usageNanoCores !== undefined && p?.cpu.usageNanoCores !== undefined && (hog?.memory.workingSetBytes ?? 0) > 40 * MiB ? s : undefined;
      },
      40_000,
    );
    const pod = summary.pods.find((x) => x.podRef.name === name)!;
    const burner = pod.containers.find((c) => c.name === 'burner')!;
    const hog = pod.containers.find((c) => c.name === 'hog')!;
    // A loop that works most of the time: a few hundred m on a quiet machine, and 49m once beside
    // the whole suite (it shares two cores); an idle container reads ~0m. So: clearly over 20m.
    expect(burner.cpu.usageNanoCores).toBeGreaterThan(20e6);
    expect(hog.cpu.usageNanoCores ?? 0).toBeLessThan(burner.cpu.usageNanoCores! / 5);
    expect(pod.memory.workingSetBytes).toBeGreaterThanOrEqual(hog.memory.workingSetBytes);
    expect(pod.cpu.usageNanoCores).toBeGreaterThanOrEqual(burner.cpu.usageNanoCores!);
    expect(pod.network?.rxBytes).toBeGreaterThanOrEqual(0);
    const hostPod = await until(
      'the host-network pod in /stats/summary',
      async () => {
        const s = JSON.parse((await agentGetText(suite.world.stateDir, '/stats/summary')) ?? '{}') as Summary;
        return s.pods?.find((x) => x.podRef.name === host && x.containers.length > 0);
      },
      30_000,
    );
    expect(hostPod.network).toBeUndefined();
    expect(burner.rootfs?.usedBytes).toBeGreaterThanOrEqual(0);
    expect(summary.node.memory.workingSetBytes).toBeGreaterThan(0);
    expect(summary.node.fs?.capacityBytes).toBeGreaterThan(0);
    expect(summary.node.rlimit.maxpid).toBeGreaterThan(0);

    const top = await suite.world.cli('top', 'pods', '-n', suite.ns, '--containers');
    expect(top.code).toBe(0);
    const lines = top.out.split('\n');
    expect(lines[0]).toMatch(/^POD\s+NAME\s+CPU\(cores\)\s+MEMORY\(bytes\)$/);
    const cpuOf = (c: string): number => Number(new RegExp(`^${name}\\s+${c}\\s+(\\d+)m\\s+\\d+Mi$`, 'm').exec(top.out)?.[1] ?? NaN);
    expect(cpuOf('burner')).toBeGreaterThan(20);
    expect(top.out).toMatch(new RegExp(`^${name}\\s+hog\\s+\\d+m\\s+(4\\d|[5-9]\\d)Mi$`, 'm'));
    const podsOnly = await suite.world.cli('top', 'pods', '-A');
    expect(podsOnly.out).toMatch(new RegExp(`^${suite.ns}\\s+${name}\\s+\\d+m\\s+\\d+Mi$`, 'm'));

    // Without an agent: from the engine alone (the engine's previous sample gives the rate).
    await agent.stop();
    const direct = await suite.world.cli('top', 'pods', '-n', suite.ns);
    expect(direct.code).toBe(0);
    expect(Number(new RegExp(`^${name}\\s+(\\d+)m\\s+\\d+Mi$`, 'm').exec(direct.out)?.[1])).toBeGreaterThan(20);
  });

  it('reports the node with its conditions, pressure from the thresholds, and NotReady without the engine', async () => {
    const dir = join(suite.world.dir, 'node-manifests');
    mkdirSync(dir);
    await proxy.start();
    // Thresholds no machine meets: memory and disk pressure must show.
    const agent = suite.run(['--manifest-dir', dir, '--eviction-hard', 'memory.available<1000Ti,nodefs.available<100%'], { DOCKER_HOST: proxy.host });
    await agent.started();
    const node = JSON.parse((await agentGetText(suite.world.stateDir, '/node')) ?? '{}') as {
      kind: string;
      metadata: { name: string };
      status: {
        conditions: { type: string; status: string }[];
        capacity: Record<string, string>;
        addresses: { type: string; address: string }[];
        nodeInfo: { containerRuntimeVersion: string; kubeletVersion: string };
      };
    };
    expect(node.kind).toBe('Node');
    const status = (t: string): string | undefined => node.status.conditions.find((c) => c.type === t)?.status;
    expect([status('Ready'), status('MemoryPressure'), status('DiskPressure'), status('PIDPressure')]).toEqual(['True', 'True', 'True', 'False']);
    expect(node.status.addresses).toContainEqual({ type: 'InternalIP', address: '127.0.0.1' });
    expect(Number(node.status.capacity.cpu)).toBeGreaterThan(0);
    expect(node.status.capacity.pods).toBe('110');
    expect(node.status.nodeInfo.containerRuntimeVersion).toMatch(/^docker:\/\/\d+\./);
    const got = await suite.world.cli('get', 'node');
    expect(got.out).toMatch(
      new RegExp(`^NAME\\s+STATUS\\s+ROLES\\s+AGE\\s+VERSION\\n${node.metadata.name}\\s+Ready,MemoryPressure,DiskPressure\\s+<none>\\s+\\S+\\s+podrun/`),
    );

    proxy.mode = { kind: 'fail', status: 500 };
    proxy.dropConnections();
    await agent.waitForLog('engine connection lost');
    const down = JSON.parse((await agentGetText(suite.world.stateDir, '/node')) ?? '{}') as typeof node;
    expect(down.status.conditions.find((c) => c.type === 'Ready')).toMatchObject({ status: 'False', reason: 'KubeletNotReady' });
    proxy.mode = { kind: 'pass' };
  });
});
