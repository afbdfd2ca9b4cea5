import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LABEL } from '../../src/runtime/labels.js';
import { ContainerState, PodSandboxState } from '../../src/runtime/cri/messages.js';
import { AgentProcess, metricGrown, pastRelist } from './agent-helpers.js';
import { criTestBed } from './cri-engine.js';
import { freePort, TEST_IMAGE, unique, until } from './helpers.js';

// containerd restarting under a running agent (an upgrade of the runtime, a crash): the shims keep
// the pods' processes running, so the agent must keep its hands off them while the runtime is
// away, say the engine is down, and on its return reconnect, adopt what runs and go on converging.
const { ctrd, world, podLogs, noDocker } = criTestBed();

const pod = (name: string, ns: string): string => `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: a, image: ${TEST_IMAGE}, command: [sleep, '3600']}
  - {name: b, image: ${TEST_IMAGE}, command: [sleep, '3600']}
`;

/** Every sandbox and container of the pod the runtime holds, any state: a restart or a recreation shows as a new id or attempt. */
async function instancesOf(
  name: string,
): Promise<{ sandboxes: { id: string; state: number; attempt: number }[]; containers: { id: string; name: string; state: number; attempt: number }[] }> {
  const sel = { labelSelector: { [LABEL.podName]: name } };
  const sandboxes = (await ctrd.client.listPodSandbox(sel)).map((s) => ({ id: s.id, state: s.state, attempt: s.metadata?.attempt ?? 0 }));
  const containers = (await ctrd.client.listContainers(sel)).map((c) => ({
    id: c.id,
    name: c.metadata?.name ?? '',
    state: c.state,
    attempt: c.metadata?.attempt ?? 0,
  }));
  return { sandboxes, containers: containers.sort((x, y) => x.name.localeCompare(y.name)) };
}

const allRunning = async (name: string): Promise<true | undefined> => {
  const { sandboxes, containers } = await instancesOf(name).catch(() => ({ sandboxes: [], containers: [] }));
  return sandboxes.some((s) => s.state === PodSandboxState.READY) && containers.filter((c) => c.state === ContainerState.RUNNING).length === 2
    ? true
    : undefined;
};

describe('the agent when containerd restarts under it', () => {
  it('says the engine is down, restarts and recreates nothing, reconnects, and converges again', async () => {
    const ns = unique('cri-phoenix');
    const [kept, late] = [unique('kept'), unique('late')];
    const dir = join(world.dir, 'manifests');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'kept.yaml'), pod(kept, ns));
    const port = await freePort();
    const healthz = (): Promise<number> =>
      fetch(`http://127.0.0.1:${port}/healthz`).then(
        (r) => r.status,
        () => 0,
      );
    const agent = new AgentProcess(world.stateDir, ['--manifest-dir', dir, '--http-port', String(port)], {
      ...noDocker,
      PODRUN_CONTAINER_RUNTIME_ENDPOINT: ctrd.endpoint,
      PODRUN_POD_LOGS_DIR: podLogs,
    });
    try {
      await agent.started();
      await until('the pod on containerd', () => allRunning(kept), 60_000);
      await until('healthz ok', async () => ((await healthz()) === 200 ? true : undefined));
      const before = await instancesOf(kept);

      await ctrd.stop();
      await agent.waitForLog('engine connection lost');
      await until('healthz to fail', async () => ((await healthz()) === 503 ? true : undefined));
      // A pod wanted while the runtime is away waits for it, and the agent lives on meanwhile.
      writeFileSync(join(dir, 'late.yaml'), pod(late, ns));
      await until('the agent to want the late pod', async () => {
        const status = JSON.parse(readFileSync(join(world.stateDir, 'agent-status.json'), 'utf8')) as { desired: string[] };
        return status.desired.includes(`${ns}/${late}`) ? true : undefined;
      });
      // Pod worker turns with the runtime away (each resync wakes both pods): the agent took them.
      await metricGrown(agent, 'podrun_pod_worker_duration_seconds_count', 4, { labels: ['operation="sync"'] });
      expect(agent.proc.exitCode).toBeNull();
      expect(await healthz()).toBe(503);
      // get must not show what the cache last saw as if it were now.
      const down = await world.bin(['--container-runtime-endpoint', ctrd.endpoint, '--pod-logs-dir', podLogs, 'get', 'pods', '-n', ns], { env: noDocker });
      expect(down.out).not.toContain('Running');
      expect(down.code).toBe(3);
      expect(down.err).toMatch(/cannot reach the container runtime/);

      await ctrd.start();
      await until('the pod applied meanwhile to run', () => allRunning(late), 90_000);
      await until('healthz ok again', async () => ((await healthz()) === 200 ? true : undefined));
      // Past a few relists and resyncs (pastRelist, twice): whatever the agent would do to the old pod, it has done.
      await pastRelist(agent);
      await pastRelist(agent);
      expect(agent.proc.exitCode).toBeNull();
      const after = await instancesOf(kept);
      // The same sandbox and containers, still running, attempt 0: 0 restarts, 0 recreations.
      expect(after).toEqual(before);
      expect(after.containers.map((c) => [c.name, c.state, c.attempt])).toEqual([
        ['a', ContainerState.RUNNING, 0],
        ['b', ContainerState.RUNNING, 0],
      ]);
      const got = await world.bin(['--container-runtime-endpoint', ctrd.endpoint, '--pod-logs-dir', podLogs, 'get', 'pods', '-n', ns], { env: noDocker });
      expect(got.out).toMatch(new RegExp(`^${kept}\\s+2/2\\s+Running\\s+0\\s`, 'm'));
      expect(got.out).toMatch(new RegExp(`^${late}\\s+2/2\\s+Running\\s+0\\s`, 'm'));
      expect(agent.logs()).not.toMatch(/recreating|replacing|ERROR|never started/);
      // containerd 1.6 answers GetContainerEvents with Unimplemented: the relist is the way, said
      // once for the agent's life, not at each reconnect.
      expect(agent.logs().match(/does not serve GetContainerEvents \(Unimplemented/g)).toHaveLength(1);
      expect(agent.logs()).not.toContain("following the runtime's container events");
    } catch (err) {
      throw new Error(`${(err as Error).message}\nagent log:\n${agent.logs().slice(-5000)}\ncontainerd:\n${ctrd.recentLog}`);
    } finally {
      await agent.stop();
    }
  }, 300_000);
});
