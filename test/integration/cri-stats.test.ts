import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AgentProcess } from './agent-helpers.js';
import { CriEngine } from '../../src/runtime/cri/engine.js';
import { ContainerState } from '../../src/runtime/cri/messages.js';
import { LABEL } from '../../src/runtime/labels.js';
import { CRI_PAUSE_IMAGE, criTestBed } from './cri-engine.js';
import { agentGetText, busyPodYaml, unique, until } from './helpers.js';

// Readings on containerd (CRI): `podrun top pods`, the agent's /stats/summary and
// /metrics/cadvisor show a busy container's CPU and a memory hog's working set, read from the
// cgroups containerd made (found through each container's own /proc/<pid>/cgroup), and the pod's
// network from its sandbox's namespace on the CNI bridge.
const { ctrd, world, podLogs, noDocker: NO_DOCKER, cri } = criTestBed();
const MiB = 2 ** 20;

interface Summary {
  pods?: {
    podRef: { name: string; namespace: string };
    cpu: { usageNanoCores?: number };
    memory: { workingSetBytes: number };
    network?: { rxBytes: number; interfaces?: { name: string }[] };
    containers: { name: string; cpu: { usageNanoCores?: number }; memory: { workingSetBytes: number }; rootfs?: { usedBytes: number } }[];
  }[];
}

describe('readings on containerd (CRI)', () => {
  it('top pods, /stats/summary and /metrics/cadvisor show a busy container and a memory hog', async () => {
    const ns = unique('cri-stats');
    const name = unique('busy');
    const dir = join(world.dir, 'manifests');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'pod.yaml'), busyPodYaml(name, ns));
    const env = { ...NO_DOCKER, PODRUN_CONTAINER_RUNTIME_ENDPOINT: ctrd.endpoint, PODRUN_POD_LOGS_DIR: podLogs };
    // Readings every second (the documented knob; the default is cAdvisor's 10 s): a rate needs two
    // readings, and the hog's must come from a window after its fill; what is read, and how, is the
    // same at any period.
    const agent = new AgentProcess(world.stateDir, ['--manifest-dir', dir, '--housekeeping-interval', '1s'], env);
    try {
      await agent.started();
      // Readings start at the first request, and their disk pass (every 60 s) reads what runs then:
      // asked while the pod was half started, the burner's rootfs came a minute later (75 s in a full run).
      await until(
        'both containers running',
        async () =>
          (await ctrd.client.listContainers({ labelSelector: { [LABEL.podName]: name }, state: { state: ContainerState.RUNNING } })).length === 2
            ? true
            : undefined,
        90_000,
      );
      const summary = await until(
        "a CPU rate and the hog's memory in /stats/summary",
        async () => {
          const s = JSON.parse((await agentGetText(world.stateDir, '/stats/summary')) ?? '{}') as Summary;
          const p = s.pods?.find((x) => x.podRef.name === name);
          const burner = p?.containers.find((c) => c.name === 'burner');
          const hog = p?.containers.find((c) => c.name === 'hog');
          // The hog burns CPU while it fills its memory: its rate is read once it has settled.
          const settled = burner?.cpu.usageNanoCores !== undefined && (hog?.cpu.usageNanoCores ?? 0) < burner.cpu.usageNanoCores / 5;
          return settled && (hog?.memory.workingSetBytes ?? 0) > 40 * MiB ? s : undefined;
        },
        90_000,
      );
      const pod = summary.pods!.find((x) => x.podRef.name === name)!;
      const burner = pod.containers.find((c) => c.name === 'burner')!;
      const hog = pod.containers.find((c) => c.name === 'hog')!;
      expect(burner.cpu.usageNanoCores).toBeGreaterThan(20e6);
      expect(hog.cpu.usageNanoCores ?? 0).toBeLessThan(burner.cpu.usageNanoCores! / 5);
      expect(pod.memory.workingSetBytes).toBeGreaterThanOrEqual(hog.memory.workingSetBytes);
      // The writable layer as containerd measures it (ContainerStats), for the container's rootfs.
      await until(
        'the writable layer in /stats/summary',
        async () => {
          const s = JSON.parse((await agentGetText(world.stateDir, '/stats/summary')) ?? '{}') as Summary;
          const b = s.pods?.find((x) => x.podRef.name === name)?.containers.find((c) => c.name === 'burner');
          return b?.rootfs?.usedBytes !== undefined ? true : undefined;
        },
        90_000,
      );
      // The sandbox's namespace on the CNI bridge: its own eth0, not the node's interfaces.
      expect(pod.network?.interfaces?.map((i) => i.name)).toContain('eth0');

      // cAdvisor's series name the container by the cgroup containerd put it in.
      const cadvisor = (await agentGetText(world.stateDir, '/metrics/cadvisor')) ?? '';
      const line = cadvisor
        .split('\n')
        .find((l) => l.startsWith('container_memory_working_set_bytes{') && l.includes(`pod="${name}"`) && l.includes('container="hog"'));
      expect(line, cadvisor.slice(0, 3000)).toBeDefined();
      expect(Number(line!.split(' ')[1])).toBeGreaterThan(40 * MiB);

      const top = await cri(['top', 'pods', '-n', ns, '--containers']);
      expect(top.code, `${top.out}\n${top.err}`).toBe(0);
      const cpuOf = (c: string): number => Number(new RegExp(`^${name}\\s+${c}\\s+(\\d+)m\\s+\\d+Mi$`, 'm').exec(top.out)?.[1] ?? NaN);
      expect(cpuOf('burner'), top.out).toBeGreaterThan(20);
      expect(top.out).toMatch(new RegExp(`^${name}\\s+hog\\s+\\d+m\\s+(4\\d|[5-9]\\d)Mi$`, 'm'));

      // Where cgroupfs is out of reach (cgroupReadings off, as for a runtime in another host's
      // cgroups): the runtime's own ContainerStats, a rate from two of them a second apart.
      const remote = new CriEngine({
        runtimeEndpoint: ctrd.endpoint,
        stateDir: join(world.dir, 'remote-state'),
        pauseImage: CRI_PAUSE_IMAGE,
        cgroupReadings: false,
      });
      try {
        const [c] = await ctrd.client.listContainers({ labelSelector: { [LABEL.podName]: name, [LABEL.containerName]: 'burner' } });
        const r = await remote.containerStats(c!.id, false);
        expect(r?.source).toBe('engine');
        expect(r!.cpu.usageNs).toBeGreaterThan(r!.earlier!.cpuUsageNs);
        const [h] = await ctrd.client.listContainers({ labelSelector: { [LABEL.podName]: name, [LABEL.containerName]: 'hog' } });
        expect((await remote.containerStats(h!.id, true))!.memory.workingSetBytes).toBeGreaterThan(40 * MiB);
      } finally {
        remote.client.close();
      }
    } catch (err) {
      throw new Error(`${(err as Error).message}\nagent log:\n${agent.logs().slice(-4000)}\ncontainerd:\n${ctrd.recentLog}`);
    } finally {
      await agent.stop();
    }
  }, 180_000);
});
