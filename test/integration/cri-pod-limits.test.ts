import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { TEST_IMAGE, unique, until } from './helpers.js';
import { criTestBed } from './cri-engine.js';

// What a pod may take of the node on CRI: a `medium: Memory` emptyDir is a tmpfs of its
// sizeLimit (memory-volumes.ts), gone with the pod. A private containerd and the built binary.
const { ctrd, world, cri } = criTestBed();

const mountsUnder = (dir: string): string[] => readFileSync('/proc/self/mounts', 'utf8').split('\n').filter((l) => l.split(' ')[1]?.startsWith(dir));

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
});
