import { describe, expect, it } from 'vitest';
import { bareId, type EngineBed } from './engine-beds.js';
import { pastRelist } from './agent-helpers.js';
import { TEST_IMAGE, unique } from './helpers.js';
import { container, supervisedDirectory, untilPod } from './lifecycle-helpers.js';

/** Restarts by policy, crash-loop back-off, init containers, OOM, --previous and pull back-off, on one engine bed. */
export function restartsSuite(bed: EngineBed): void {
  const world = bed;
  // Short backoff so restarts can be watched.
  const { ns, agent, write } = supervisedDirectory(bed, 'restarts', ['--crash-backoff-initial', '1s', '--crash-backoff-max', '4s']);

  describe(`${bed.tag} restart policies and crash-loop backoff`, () => {
    it('restarts by policy: Always both, OnFailure only failures, Never neither', async () => {
      const cases: [string, number, boolean][] = [
        ['Always', 0, true],
        ['Always', 1, true],
        ['OnFailure', 0, false],
        ['OnFailure', 1, true],
        ['Never', 0, false],
        ['Never', 1, false],
      ];
      const names = cases.map(([policy, code]) => `${policy.toLowerCase()}-${code}-${unique('p').slice(2)}`);
      cases.forEach(([policy, code], i) =>
        write(
          names[i]!,
          `  restartPolicy: ${policy}
  containers: [{name: c, image: ${TEST_IMAGE}, command: [sh, -c, 'sleep 0.5; exit ${code}']}]
`,
        ),
      );
      for (const [i, [policy, code, restarts]] of cases.entries()) {
        const name = names[i]!;
        if (restarts) {
          await untilPod(world, ns, name, `${name} to restart`, (p) => (container(p, 'c')?.restartCount ?? 0) >= 1);
        } else {
          const p = await untilPod(
            world,
            ns,
            name,
            `${name} to finish`,
            (x) => x.status.phase === (code === 0 ? 'Succeeded' : policy === 'Never' ? 'Failed' : 'Running'),
          );
          expect(container(p, 'c')?.state.terminated?.exitCode).toBe(code);
          expect(container(p, 'c')?.state.terminated?.reason).toBe(code === 0 ? 'Completed' : 'Error');
        }
      }
      // Past relists and resyncs of every pod (each a chance to restart one that must stay down).
      await pastRelist(agent());
      for (const [i, [, , restarts]] of cases.entries()) {
        const p = await untilPod(world, ns, names[i]!, 'status', () => true);
        expect([names[i], (container(p, 'c')?.restartCount ?? 0) > 0]).toEqual([names[i], restarts]);
      }
    });

    it('makes a container killed under it again, with its kill as the last state', async () => {
      const name = unique('killed');
      write(
        name,
        `  containers: [{name: c, image: ${TEST_IMAGE}, command: [sleep, '3600']}]
`,
      );
      const p = await untilPod(world, ns, name, 'c to run', (x) => container(x, 'c')?.state.running !== undefined);
      const id = bareId(container(p, 'c')?.containerID);
      await bed.kill(id);
      const after = await untilPod(
        world,
        ns,
        name,
        'c to run again',
        (x) => (container(x, 'c')?.restartCount ?? 0) >= 1 && container(x, 'c')?.state.running !== undefined,
      );
      expect(container(after, 'c')?.lastState?.terminated?.exitCode).toBe(137);
      expect(bareId(container(after, 'c')?.containerID)).not.toBe(id);
      // The engine holds the new instance running, and the killed one exited, as the status says.
      const held = (await bed.containers(ns, name)).filter((c) => c.name === 'c').map((c) => [c.restartCount, c.state, c.id === id]);
      expect(held).toEqual([
        [1, 'running', false],
        [0, 'exited', true],
      ]);
    });

    it('backs off 1 s, 2 s, 4 s, 4 s between crashes and shows CrashLoopBackOff meanwhile', async () => {
      const name = unique('crash');
      write(
        name,
        `  containers: [{name: c, image: ${TEST_IMAGE}, command: [sh, -c, 'echo run; exit 3']}]
`,
      );
      const waiting = await untilPod(world, ns, name, 'CrashLoopBackOff', (p) => container(p, 'c')?.state.waiting?.reason === 'CrashLoopBackOff');
      expect(container(waiting, 'c')?.state.waiting?.message).toMatch(/^back-off \d+s restarting failed container=c pod=/);
      expect(container(waiting, 'c')?.lastState?.terminated?.exitCode).toBe(3);
      await untilPod(world, ns, name, 'five restarts', (p) => (container(p, 'c')?.restartCount ?? 0) >= 5, 40_000);
      // The sequence of waits podrun decided, from its log; the wall clock confirms each wait happened.
      const lines = [
        ...agent()
          .logs()
          .matchAll(new RegExp(`^(\\S+) INFO  pod ${ns}/${name}: starting container c \\(exited with code 3\\)(?: after a back-off of (\\d+)s)?$`, 'gm')),
      ];
      const waits = lines.map((m) => Number(m[2] ?? 0));
      expect(waits.slice(0, 5)).toEqual([0, 1, 2, 4, 4]);
      const starts = lines.map((m) => Date.parse(m[1]!));
      starts.slice(1, 5).forEach((t, i) => expect((t - starts[i]!) / 1000).toBeGreaterThanOrEqual(waits[i + 1]!));
    });

    it('runs init containers in order before the app, and keeps a sidecar running', async () => {
      const name = unique('init');
      write(
        name,
        `  initContainers:
  - {name: first, image: ${TEST_IMAGE}, command: [sh, -c, 'echo first >> /work/log'], volumeMounts: [{name: w, mountPath: /work}]}
  - {name: side, image: ${TEST_IMAGE}, restartPolicy: Always, command: [sh, -c, 'echo side >> /work/log; exec sleep 3600'], volumeMounts: [{name: w, mountPath: /work}]}
  - {name: second, image: ${TEST_IMAGE}, command: [sh, -c, 'echo second >> /work/log'], volumeMounts: [{name: w, mountPath: /work}]}
  containers:
  - {name: app, image: ${TEST_IMAGE}, command: [sh, -c, 'echo app >> /work/log; cat /work/log; exec sleep 3600'], volumeMounts: [{name: w, mountPath: /work}]}
  volumes: [{name: w, emptyDir: {}}]
`,
      );
      const p = await untilPod(world, ns, name, 'the app to run', (x) => container(x, 'app')?.state.running !== undefined);
      expect(container(p, 'first')?.state.terminated?.reason).toBe('Completed');
      expect(container(p, 'second')?.state.terminated?.reason).toBe('Completed');
      expect(container(p, 'side')?.state.running).toBeDefined();
      const logs = await world.cli('logs', '-n', ns, name, '-c', 'app');
      expect(logs.out).toBe('first\nside\nsecond\napp\n');
    });

    it('retries a failing init container under OnFailure, and fails the pod under Never', async () => {
      const retry = unique('initretry');
      const never = unique('initnever');
      const spec = (policy: string) => `  restartPolicy: ${policy}
  initContainers: [{name: boom, image: ${TEST_IMAGE}, command: [sh, -c, 'exit 7']}]
  containers: [{name: app, image: ${TEST_IMAGE}, command: [sleep, '3600']}]
`;
      write(retry, spec('OnFailure'));
      write(never, spec('Never'));
      const r = await untilPod(world, ns, retry, 'init retries', (p) => (container(p, 'boom')?.restartCount ?? 0) >= 2);
      expect(container(r, 'app')?.state.waiting?.reason).toBe('PodInitializing');
      expect(r.status.phase).toBe('Pending');
      const n = await untilPod(world, ns, never, 'the pod to fail', (p) => p.status.phase === 'Failed');
      expect(container(n, 'boom')?.state.terminated?.exitCode).toBe(7);
      expect(container(n, 'app')?.state.running).toBeUndefined();
    });

    it('reports OOMKilled for a container over its memory limit', async () => {
      const name = unique('oom');
      write(
        name,
        `  restartPolicy: Never
  containers:
  - name: hog
    image: ${TEST_IMAGE}
    # The shell itself (the container's main process) doubles a string until the limit kills it.
    command: [sh, -c, 'x=a; while true; do x="$x$x"; done']
    resources: {limits: {memory: 32Mi}}
`,
      );
      const p = await untilPod(world, ns, name, 'the OOM kill', (x) => container(x, 'hog')?.state.terminated !== undefined);
      // Podman 4.3 (conmon 2.1.6) on this cgroup v1 host never says OOMKilled: its inspect reads
      // `OOMKilled: false` for the same kill that Docker's reads true for (both exit 137, checked
      // by hand with `podman inspect` and `docker inspect`), and podrun, like the kubelet, takes
      // the runtime's word: the reason is then Error.
      expect(container(p, 'hog')?.state.terminated?.reason).toBe(bed.kind === 'podman' ? 'Error' : 'OOMKilled');
      expect(container(p, 'hog')?.state.terminated?.exitCode).toBe(137);
    });

    it('describe and logs --previous show the crashed instance', async () => {
      const name = unique('prev');
      write(
        name,
        `  containers: [{name: c, image: ${TEST_IMAGE}, command: [sh, -c, 'echo "instance $RANDOM says bye"; sleep 0.3; exit 2']}]
`,
      );
      // The first restart is immediate; the second crash is the first to back off.
      await untilPod(world, ns, name, 'a backed-off restart', (p) => (container(p, 'c')?.restartCount ?? 0) >= 2);
      const prev = await world.cli('logs', '-n', ns, name, '--previous');
      expect(prev.code, prev.err).toBe(0);
      expect(prev.out).toMatch(/^instance \d+ says bye\n$/);
      const d = await world.cli('describe', 'pod', '-n', ns, name);
      expect(d.code, d.err).toBe(0);
      expect(d.out).toMatch(/Last State:\s+Terminated\n\s+Reason:\s+Error\n\s+Exit Code:\s+2/);
      expect(d.out).toMatch(/Restart Count: [1-9]/);
      expect(d.out).toMatch(/Normal\s+Started\s+.*Started container c/);
      expect(d.out).toMatch(/Warning\s+BackOff\s+.*Back-off restarting failed container/);
      expect(d.out).toContain(`Name:         ${name}`);
    });

    it('backs off image pulls: ErrImagePull, then ImagePullBackOff', async () => {
      const name = unique('pull');
      // A registry on a closed loopback port: the pull fails at once, and no traffic leaves the machine.
      write(
        name,
        `  containers: [{name: c, image: 127.0.0.1:1/podrun-test/missing:1}]
`,
      );
      const first = await untilPod(world, ns, name, 'ErrImagePull', (p) =>
        ['ErrImagePull', 'ImagePullBackOff'].includes(container(p, 'c')?.state.waiting?.reason ?? ''),
      );
      expect(container(first, 'c')?.state.waiting?.message).toContain('127.0.0.1:1/podrun-test/missing:1');
      await untilPod(world, ns, name, 'ImagePullBackOff', (p) => container(p, 'c')?.state.waiting?.reason === 'ImagePullBackOff');
      const d = await world.cli('describe', 'pod', '-n', ns, name);
      expect(d.out).toMatch(/Warning\s+Failed\s+.*Failed to pull image "127\.0\.0\.1:1\/podrun-test\/missing:1"/);
      expect(d.out).toMatch(/Normal\s+BackOff\s+.*Back-off pulling image/);
    });
  });
}
