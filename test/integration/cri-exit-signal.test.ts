import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LABEL } from '../../src/runtime/labels.js';
import { ContainerState } from '../../src/runtime/cri/messages.js';
import { AgentProcess } from './agent-helpers.js';
import { criTestBed } from './cri-engine.js';
import { TEST_IMAGE, unique, until } from './helpers.js';

// containerd 1.6 sends no container events: a crash is seen by relisting. The agent also watches
// each running container's cgroup (exit-watch.ts), so a crash is seen at once. With every relist
// put 10 minutes away (the CRI relist and the cache's), a killed container must still be replaced
// within seconds: only the cgroup signal can have told the agent.
const { ctrd, world, podLogs, noDocker, cri } = criTestBed();

type Listed = { id: string; state: number; attempt: number };

async function containersOf(name: string): Promise<Listed[]> {
  const cs = await ctrd.client.listContainers({ labelSelector: { [LABEL.podName]: name } });
  return cs.map((c) => ({ id: c.id, state: c.state, attempt: c.metadata?.attempt ?? 0 }));
}

const runningOf = async (name: string, not: string[]): Promise<Listed | undefined> =>
  (await containersOf(name)).find((c) => c.state === ContainerState.RUNNING && !not.includes(c.id));

async function killMain(id: string): Promise<void> {
  const { info } = await ctrd.client.containerStatusVerbose(id);
  const pid = (JSON.parse(info.info ?? '{}') as { pid?: number }).pid;
  if (!pid) throw new Error(`no pid for ${id}`);
  process.kill(pid, 'SIGKILL');
}

/** The cgroup v2 tree: /sys/fs/cgroup on a v2 host, its `unified` on a hybrid one. */
const V2_ROOT = ['/sys/fs/cgroup', '/sys/fs/cgroup/unified'].find((d) => existsSync(join(d, 'cgroup.controllers')));

/** Whether process `pid` holds an inotify watch on container `id`'s cgroup.events (its exit signal is open): /proc/<pid>/fdinfo names each watch's inode. */
async function watching(pid: number, id: string): Promise<boolean> {
  const { info } = await ctrd.client.containerStatusVerbose(id);
  const main = (JSON.parse(info.info ?? '{}') as { pid?: number }).pid;
  const rel = /^0::\/(.*)$/m.exec(readFileSync(`/proc/${main}/cgroup`, 'utf8'))?.[1];
  if (!V2_ROOT || rel === undefined) throw new Error(`no cgroup v2 place for ${id}`);
  const ino = statSync(join(V2_ROOT, rel, 'cgroup.events'), { bigint: true }).ino.toString(16);
  const watch = new RegExp(`^inotify wd:\\d+ ino:${ino} `, 'm');
  return readdirSync(`/proc/${pid}/fdinfo`).some((fd) => {
    try {
      return watch.test(readFileSync(`/proc/${pid}/fdinfo/${fd}`, 'utf8'));
    } catch {
      return false; // closed meanwhile
    }
  });
}

describe('a crash on a runtime without container events', () => {
  it('is seen from the container cgroup, not the relist: replaced within seconds, twice, and once more after a new agent adopted it', async () => {
    const ns = unique('cri-exitsig');
    const name = unique('crash');
    const dir = join(world.dir, 'exit-signal-manifests');
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, 'pod.yaml'),
      `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: a, image: ${TEST_IMAGE}, command: [sleep, '3600']}
`,
    );
    const start = (): AgentProcess =>
      new AgentProcess(world.stateDir, ['--manifest-dir', dir, '--relist-period', '10m', '--crash-backoff-initial', '0s', '--crash-backoff-max', '0s'], {
        ...noDocker,
        PODRUN_CONTAINER_RUNTIME_ENDPOINT: ctrd.endpoint,
        PODRUN_POD_LOGS_DIR: podLogs,
        PODRUN_CRI_RELIST_PERIOD: '10m',
      });
    let agent = start();
    try {
      await agent.started();
      const first = await until('the container to run', () => runningOf(name, []), 60_000);
      const seen = [first.id];
      for (const round of [1, 2]) {
        await killMain(seen[seen.length - 1]!);
        // Far below the 10 minutes of either relist; room for a loaded machine.
        const next = await until(`replacement ${round} to run`, () => runningOf(name, seen), 8_000);
        expect(next.attempt).toBe(round);
        seen.push(next.id);
      }
      expect(agent.proc.exitCode).toBeNull();
      // A new agent adopts the running container: it is watched from the first list, not from a start of its own.
      await agent.stop();
      agent = start();
      await agent.started();
      await until('the adopted container to be listed', async () => ((await runningOf(name, []))?.id === seen[seen.length - 1] ? true : undefined));
      // Its first list is what opens the watch: seen in the agent's own inotify watches.
      await until('the new agent to watch the adopted container', async () => ((await watching(agent.proc.pid!, seen[seen.length - 1]!)) ? true : undefined));
      await killMain(seen[seen.length - 1]!);
      const adopted = await until('the adopted one replaced', () => runningOf(name, seen), 8_000);
      expect(adopted.attempt).toBe(3);
    } catch (err) {
      throw new Error(`${(err as Error).message}\nagent log:\n${agent.logs().slice(-4000)}\ncontainerd:\n${ctrd.recentLog}`);
    } finally {
      await agent.stop();
      await cri(['delete', 'pod', name, '-n', ns]);
    }
  }, 180_000);
});
