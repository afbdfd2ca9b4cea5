import { chmodSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LABEL } from '../../src/runtime/labels.js';
import type { V1Pod } from '../../src/status/v1.js';
import { pastRelist, pastRelists, probesGrown } from './agent-helpers.js';
import { docker, podContainers, TEST_IMAGE, unique, until, World } from './helpers.js';
import { agentPod, container, supervisedDirectory, untilPod } from './lifecycle-helpers.js';

// Containers that misbehave on purpose, on the real engine: probes they answer badly, hooks that
// never return, a liveness probe that always fails. None of them may switch off its own health
// checks, stall its pod's deletion, or cost the agent sockets or CPU.
const world = new World();
const { ns, write, agent } = supervisedDirectory(world, 'hostile', ['--crash-backoff-initial', '2s', '--crash-backoff-max', '1m']);
const manifests = join(world.dir, 'manifests');

// HTTP servers from busybox nc: each connection runs one of these scripts on the socket.
const scripts = join(world.dir, 'hostile');
mkdirSync(scripts, { recursive: true });
const SCRIPTS: Record<string, string> = {
  // The status line a byte every half second, then header bytes for ever: never complete.
  'dribble.sh': `for c in H T T P / 1 . 0 ' ' 2 0 0 ' ' O K; do printf %s "$c"; sleep 0.5; done\nwhile :; do printf X; sleep 0.5; done\n`,
  // 200 and a body without end, as fast as it goes.
  'fast.sh': `printf 'HTTP/1.0 200 OK\\r\\nContent-Type: text/plain\\r\\n\\r\\n'\nexec yes\n`,
  // 200 and a body without end, two bytes every 0.2 s: 10 KiB would take over 17 minutes.
  'slow.sh': `printf 'HTTP/1.0 200 OK\\r\\n\\r\\n'\nwhile :; do echo x; sleep 0.2; done\n`,
};
for (const [file, body] of Object.entries(SCRIPTS)) {
  writeFileSync(join(scripts, file), `#!/bin/sh\n${body}`);
  chmodSync(join(scripts, file), 0o755);
}

function server(name: string, port: number, script: string, probe: string): string {
  return `  - name: ${name}
    image: ${TEST_IMAGE}
    command: [nc, -ll, -p, '${port}', -e, /hostile/${script}]
    ports: [{containerPort: ${port}}]
    volumeMounts: [{name: hostile, mountPath: /hostile, readOnly: true}]
${probe}`;
}
const HOSTILE_VOLUME = `  volumes: [{name: hostile, hostPath: {path: ${scripts}}}]\n`;

/** The agent's open descriptors and its CPU time so far (s). */
function agentCost(): { fds: number; cpuS: number } {
  const pid = agent().proc.pid;
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime, fields 14 and 15 of /proc/<pid>/stat, in clock ticks (100 per second here).
  const ticks = Number(fields[11]) + Number(fields[12]);
  return { fds: readdirSync(`/proc/${pid}/fd`).length, cpuS: ticks / 100 };
}

async function processesIn(p: V1Pod, name: string): Promise<number> {
  const id = container(p, name)?.containerID?.replace('docker://', '');
  if (!id) throw new Error(`no container ${name}`);
  const top = (await docker.getContainer(id).top()) as { Processes?: string[][] };
  return top.Processes?.length ?? 0;
}

const ready = (p: V1Pod, name: string): boolean | undefined => container(p, name)?.ready;

describe('hostile containers', () => {
  it(
    'an httpGet liveness probe answered by headers dribbled a byte at a time fails at its timeoutSeconds and restarts the container',
    { timeout: 90_000 },
    async () => {
      const name = unique('dribble');
      write(
        name,
        `  containers:
${server('web', 8080, 'dribble.sh', '    livenessProbe: {httpGet: {path: /, port: 8080}, timeoutSeconds: 2, periodSeconds: 3, failureThreshold: 1}\n')}${HOSTILE_VOLUME}`,
      );
      const after = await untilPod(world, ns, name, 'the liveness restart', (p) => (container(p, 'web')?.restartCount ?? 0) >= 1, 60_000);
      const d = await world.cli('describe', 'pod', '-n', ns, name);
      expect(d.out).toMatch(
        /Warning\s+Unhealthy\s+.*Liveness probe failed: Get "http:\/\/[^"]+:8080\/": context deadline exceeded \(Client.Timeout exceeded after 2s\)/,
      );
      // The probe ended at its own 2 s (the event says so; a probe that never ended never killed
      // it), and the first instance lived at least that long.
      const t = container(after, 'web')?.lastState?.terminated;
      const lived = (Date.parse(t?.finishedAt ?? '') - Date.parse(t?.startedAt ?? '')) / 1000;
      expect(lived).toBeGreaterThanOrEqual(2);
    },
  );

  it(
    "endless probe bodies, fast and slow, are cut at 10 KiB or at the deadline and closed: the agent's fds and CPU stay flat over 20 periods",
    { timeout: 120_000 },
    async () => {
      const name = unique('endless');
      const probe = (port: number): string =>
        `    readinessProbe: {httpGet: {path: /, port: ${port}}, timeoutSeconds: 1, periodSeconds: 1, failureThreshold: 1}\n`;
      write(
        name,
        `  containers:
${server('fast', 8081, 'fast.sh', probe(8081))}${server('slow', 8082, 'slow.sh', probe(8082))}${HOSTILE_VOLUME}`,
      );
      // The fast one is Ready (a truncated body is no failure: the status decides); the slow one
      // never is: its probe fails at the deadline.
      const p = await untilPod(world, ns, name, 'fast Ready', (x) => ready(x, 'fast') === true && container(x, 'slow')?.state.running !== undefined, 60_000);
      // Periods counted by the prober's own metric, not slept: `fast` is probed once a period; `slow`
      // every other one (its probe takes the whole 1 s period to time out, and the ticker's next
      // tick is the period after).
      const probesOf = (c: string): string[] => [`container="${c}"`, `namespace="${ns}"`, `pod="${name}"`];
      // Past the pod's start (its Ready turn, its first connections): three periods and two relists.
      await Promise.all([probesGrown(agent(), 3, probesOf('fast')), probesGrown(agent(), 1, probesOf('slow')), pastRelists(agent(), 2)]);
      const first = agentCost();
      const t0 = performance.now();
      // 20 periods: 20 probes of `fast` and 10 of `slow`, each a connection opened and closed.
      await Promise.all([probesGrown(agent(), 20, probesOf('fast'), 90_000), probesGrown(agent(), 10, probesOf('slow'), 90_000)]);
      const last = agentCost();
      const cores = (last.cpuS - first.cpuS) / ((performance.now() - t0) / 1000);
      // One leaked socket per probe would be 30 more; reading the fast body to its end took ~65 % of a core.
      expect(last.fds - first.fds).toBeLessThanOrEqual(4);
      expect(cores).toBeLessThan(0.25);
      const now = await agentPod(world, ns, name);
      expect(ready(now!, 'fast')).toBe(true);
      expect(ready(now!, 'slow')).toBe(false);
      const d = await world.cli('describe', 'pod', '-n', ns, name);
      expect(d.out).toMatch(/Readiness probe failed: Get "http:\/\/[^"]+:8082\/": context deadline exceeded \(Client.Timeout exceeded after 1s\)/);
      // Each closed connection ends its handler in the pod: nc and at most a couple in flight.
      expect(await processesIn(p, 'fast')).toBeLessThanOrEqual(3);
      expect(await processesIn(p, 'slow')).toBeLessThanOrEqual(6);
    },
  );

  it(
    "a postStart hook that never returns keeps the container not Ready, and deleting the pod takes its grace period, not the hook's",
    { timeout: 90_000 },
    async () => {
      const name = unique('hook');
      write(
        name,
        `  containers:
  - name: c
    image: ${TEST_IMAGE}
    command: [sleep, '3600']
    lifecycle: {postStart: {exec: {command: [sleep, '3600']}}}
`,
      );
      const id = await until(
        'the container to run',
        async () => (await podContainers(ns, name)).find((c) => c.State === 'running' && c.Labels[LABEL.containerName] === 'c')?.Id,
        30_000,
      );
      // The hook runs (its sleep beside the container's own), and the agent has seen the container
      // run since (two relists, its resync): what it reports now, it reports with the hook running.
      await until(
        'the hook to run',
        async () => {
          const top = (await docker.getContainer(id).top()) as { Processes?: string[][] };
          return (top.Processes ?? []).filter((p) => p.at(-1) === 'sleep 3600').length === 2 ? true : undefined;
        },
        30_000,
      );
      await pastRelist(agent());
      // As the kubelet reports it until postStart returns: waiting, not Ready, the pod Pending.
      const p = await agentPod(world, ns, name);
      expect(container(p!, 'c')?.state.waiting?.reason).toBe('ContainerCreating');
      expect(container(p!, 'c')?.ready).toBe(false);
      expect(p?.status.phase).toBe('Pending');
      expect(p?.status.conditions?.find((c) => c.type === 'Ready')?.status).toBe('False');
      expect((await world.cli('get', 'pods', '-n', ns, name)).out).toMatch(new RegExp(`${name}\\s+0/1\\s+ContainerCreating\\s`));

      rmSync(join(manifests, `${name}.yaml`));
      // About 3 s on an idle engine (1 s for the removal to stay, the 2 s grace). Before, the hook
      // held the pod's worker for its 2-minute limit (POST_START_TIMEOUT_MS): this wait is half of
      // that, so it fails only if the hook still holds the deletion, however loaded the engine.
      await until('the pod to be gone', async () => ((await podContainers(ns, name)).length === 0 ? true : undefined), 60_000);
      const gone = Date.now();
      const line = agent()
        .logs()
        .split('\n')
        .find((l) => l.includes(`pod ${ns}/${name}: no longer declared; deleting`));
      const decided = Date.parse(line?.split(' ')[0] ?? '');
      // The grace period is the kubelet's 2 s floor (sleep ignores SIGTERM as PID 1): not before
      // it (a lower bound no machine's speed can break).
      expect(gone - decided).toBeGreaterThanOrEqual(2000);
      expect(await agentPod(world, ns, name)).toBeUndefined();
    },
  );

  it("liveness restarts go through the crash back-off, as the kubelet's", { timeout: 90_000 }, async () => {
    const name = unique('liveback');
    write(
      name,
      `  containers:
  - name: c
    image: ${TEST_IMAGE}
    command: [sh, -c, 'trap "exit 0" TERM; while :; do sleep 0.1; done']
    livenessProbe: {exec: {command: ['false']}, periodSeconds: 1, failureThreshold: 1}
`,
    );
    await untilPod(world, ns, name, 'the container to run', (p) => container(p, 'c')?.state.running !== undefined);
    // Killed about every second; with the back-off (2 s doubling here) restarts come after 0, 0,
    // 2, 4 s. Counted, not timed: the agent says each back-off it waited, and a restart that
    // waited one came at least that long after the start before it (a lower bound no machine's
    // speed can break; without the back-off they come a second apart).
    await untilPod(world, ns, name, 'four restarts', (p) => (container(p, 'c')?.restartCount ?? 0) >= 4, 60_000);
    const starts = agent()
      .logs()
      .split('\n')
      .filter((l) => l.includes(`pod ${ns}/${name}: starting container c `))
      .map((l) => ({ at: Date.parse(l.split(' ')[0]!), backOffS: Number(/after a back-off of (\d+)s$/.exec(l)?.[1] ?? 0) }));
    const backedOff = starts.flatMap((s, i) => (s.backOffS > 0 && i > 0 ? [{ backOffS: s.backOffS, afterMs: s.at - starts[i - 1]!.at }] : []));
    expect(backedOff.map((b) => b.backOffS).slice(0, 2)).toEqual([2, 4]);
    for (const b of backedOff) expect(b.afterMs, `a restart after a back-off of ${b.backOffS}s`).toBeGreaterThanOrEqual(b.backOffS * 1000);
    expect((await world.cli('describe', 'pod', '-n', ns, name)).out).toMatch(/Warning\s+BackOff\s+.*Back-off restarting failed container/);
  });
});
