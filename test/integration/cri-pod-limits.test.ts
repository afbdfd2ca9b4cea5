import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { LABEL } from '../../src/runtime/labels.js';
import { describe, expect, it } from 'vitest';
import { TEST_IMAGE, unique, until } from './helpers.js';
import { criTestBed } from './cri-engine.js';

// What a pod may take of the node on CRI: a `medium: Memory` emptyDir is a tmpfs of its
// sizeLimit (memory-volumes.ts), gone with the pod. A private containerd and the built binary.
const { ctrd, world, cri } = criTestBed();

const mountsUnder = (dir: string): string[] =>
  readFileSync('/proc/self/mounts', 'utf8')
    .split('\n')
    .filter((l) => l.split(' ')[1]?.startsWith(dir));

describe('pod limits on CRI', () => {
  it('a medium: Memory emptyDir is a tmpfs of its sizeLimit, shared by the pod, unmounted with it', async () => {
    const ns = unique('crimem');
    const name = unique('mem');
    const manifest = world.write(
      `${name}.yaml`,
      `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: writer
    image: ${TEST_IMAGE}
    command: [sh, -c, 'echo fs=$(stat -f -c %T /m); echo shared > /m/note; dd if=/dev/zero of=/m/big bs=1024 count=4096 2>/dev/null; echo dd=$?; sleep 3600']
    volumeMounts: [{name: m, mountPath: /m}]
  - name: reader
    image: ${TEST_IMAGE}
    command: [sh, -c, 'until [ -f /m/note ]; do sleep 0.1; done; echo reader-fs=$(stat -f -c %T /m) $(cat /m/note); sleep 3600']
    volumeMounts: [{name: m, mountPath: /m}]
  volumes:
  - {name: m, emptyDir: {medium: Memory, sizeLimit: 1Mi}}
`,
    );
    const applied = await cri(['apply', '-f', manifest, '--timeout', '60s']);
    expect(applied.code, `${applied.out}\n${applied.err}\n${ctrd.recentLog}`).toBe(0);
    try {
      const w = await until('the writer to report', async () => {
        const out = (await cri(['logs', name, '-n', ns, '-c', 'writer'])).out;
        return /dd=\d+/.test(out) ? out : undefined;
      });
      expect(w).toContain('fs=tmpfs');
      // 4 MiB into a 1 MiB tmpfs: the write fails (ENOSPC), the node's memory is not taken.
      expect(w).toMatch(/dd=[1-9]/);
      const r = await until('the reader to report', async () => {
        const out = (await cri(['logs', name, '-n', ns, '-c', 'reader'])).out;
        return /reader-fs/.test(out) ? out : undefined;
      });
      expect(r).toContain('reader-fs=tmpfs shared');
      expect(mountsUnder(world.stateDir).some((l) => l.startsWith('tmpfs ') && l.includes('size=1024k'))).toBe(true);
    } finally {
      const del = await cri(['delete', 'pod', name, '-n', ns]);
      expect(del.code, del.err).toBe(0);
    }
    // Gone with the pod: no tmpfs (or anything) left mounted under the state directory.
    expect(mountsUnder(world.stateDir)).toEqual([]);
  }, 120_000);

  it('--pod-max-pids holds for the pod as a whole: a fork loop in two containers stops at the limit, the node keeps its pids; the cgroup goes with the pod', async () => {
    const ns = unique('cripids');
    const name = unique('forky');
    const LIMIT = 40;
    // Each container starts 100 sleepers (a fork bomb that stops): together they want over 200.
    // Both start first (the pod's limit holds for a container's start too): each waits for the other.
    // Only a child forks once the limit may be near: busybox sh exits (code 2) when a fork of its
    // own fails, so the main shell forks that child first, then uses builtins only (`: >`, `wait $!`,
    // `echo`, `exec`), and the barrier spins instead of forking a `sleep`. `wait $!`, not `wait`: the
    // sleepers are reparented to the shell (the container's init) and a bare wait would wait for them.
    const loop = (me: string): string =>
      `(while [ ! -f /s/a ] || [ ! -f /s/b ]; do :; done; i=0; while [ $i -lt 100 ]; do sleep 3600 & i=$((i+1)); done) 2>/dev/null & : > /s/${me}; wait $!; echo forked; exec sleep 3600`;
    const manifest = world.write(
      `${name}.yaml`,
      `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: a, image: ${TEST_IMAGE}, command: [sh, -c, '${loop('a')}'], volumeMounts: [{name: s, mountPath: /s}]}
  - {name: b, image: ${TEST_IMAGE}, command: [sh, -c, '${loop('b')}'], volumeMounts: [{name: s, mountPath: /s}]}
  volumes:
  - {name: s, emptyDir: {}}
`,
    );
    const applied = await cri(['--pod-max-pids', String(LIMIT), 'apply', '-f', manifest, '--timeout', '60s']);
    const sandboxes = await ctrd.client.listPodSandbox({ labelSelector: { [LABEL.podName]: name } });
    const uid = sandboxes[0]?.metadata?.uid ?? '';
    const cgroup = join('/sys/fs/cgroup/pids/podrun', world.instance, `pod${uid}`);
    try {
      expect(applied.code, `${applied.out}\n${applied.err}\n${ctrd.recentLog}`).toBe(0);
      expect(sandboxes).toHaveLength(1);
      expect(readFileSync(join(cgroup, 'pids.max'), 'utf8').trim()).toBe(String(LIMIT));
      await until(
        'both loops to end',
        async () => {
          const outs = await Promise.all(['a', 'b'].map(async (c) => (await cri(['logs', name, '-n', ns, '-c', c])).out));
          return outs.every((o) => o.includes('forked')) ? true : undefined;
        },
        60_000,
      );
      // The loops wanted 200 sleepers: the pod holds the limit's worth and no more.
      const current = Number(readFileSync(join(cgroup, 'pids.current'), 'utf8'));
      expect(current).toBeLessThanOrEqual(LIMIT);
      expect(current).toBeGreaterThan(LIMIT - 5);
      // The kernel counted refused forks (where: the forking container's cgroup on this kernel's v1).
      const refused = [
        cgroup,
        ...readdirSync(cgroup, { withFileTypes: true })
          .filter((d) => d.isDirectory())
          .map((d) => join(cgroup, d.name)),
      ].reduce((n, d) => n + Number(/max (\d+)/.exec(readFileSync(join(d, 'pids.events'), 'utf8'))?.[1] ?? 0), 0);
      expect(refused).toBeGreaterThan(0);
      // The sandbox and both containers are in it: the limit is the pod's, not each container's.
      const cs = await ctrd.client.listContainers({ labelSelector: { [LABEL.podName]: name } });
      expect(cs.map((c) => existsSync(join(cgroup, c.id))).concat(existsSync(join(cgroup, sandboxes[0]!.id)))).toEqual([true, true, true]);
    } finally {
      const del = await cri(['delete', 'pod', name, '-n', ns]);
      expect(del.code, del.err).toBe(0);
    }
    expect(existsSync(cgroup)).toBe(false);
    expect(existsSync(join('/sys/fs/cgroup/memory/podrun', world.instance, `pod${uid}`))).toBe(false);
  }, 180_000);
});
