import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ensurePodCgroup, podCgroupParent, removePodCgroup } from '../../src/runtime/cri/pod-cgroup.js';

// The pod cgroup podrun makes for --pod-max-pids on CRI, on a made-up cgroup root (directories
// and files as cgroupfs shows them): where it goes, what it is refused for, what goes with the pod.

const roots: string[] = [];
afterEach(() => {
  for (const r of roots.splice(0)) rmSync(r, { recursive: true, force: true });
});

function v1Root(): string {
  const root = mkdtempSync(join(tmpdir(), 'podrun-cgroot-'));
  roots.push(root);
  for (const h of ['pids', 'memory', 'cpu']) {
    mkdirSync(join(root, h));
    writeFileSync(join(root, h, 'cgroup.procs'), '');
  }
  return root;
}

describe('the pod cgroup (CRI pids limit)', () => {
  it('is named for the instance and the pod; a uid that is not plain (a path, a dot-dot) is refused', () => {
    expect(podCgroupParent('abc123', '0f5e-11')).toBe('/podrun/abc123/pod0f5e-11');
    expect(() => podCgroupParent('abc123', '../../../sys')).toThrow(/not a plain uid/);
    expect(() => podCgroupParent('abc123', 'a/b')).toThrow(/not a plain uid/);
    expect(() => podCgroupParent('../x', 'u1')).toThrow();
  });

  it('on cgroup v1 is made in the pids hierarchy with pids.max; removed from every hierarchy runc made it in', () => {
    const root = v1Root();
    const parent = podCgroupParent('abc123', 'u1');
    ensurePodCgroup(parent, 40, root);
    expect(readFileSync(join(root, 'pids', parent, 'pids.max'), 'utf8')).toBe('40\n');
    // runc made the path under the other controllers (directories only here).
    mkdirSync(join(root, 'memory', parent), { recursive: true });
    mkdirSync(join(root, 'cpu', 'podrun', 'abc123', 'pod-other'), { recursive: true });
    rmSync(join(root, 'pids', parent, 'pids.max'));
    removePodCgroup(parent, root);
    expect(existsSync(join(root, 'pids', 'podrun'))).toBe(false);
    expect(existsSync(join(root, 'memory', 'podrun'))).toBe(false);
    // Another pod's stays, and so does what holds it.
    expect(existsSync(join(root, 'cpu', 'podrun', 'abc123', 'pod-other'))).toBe(true);
  });

  it('says what is missing on a node without the pids controller', () => {
    const root = mkdtempSync(join(tmpdir(), 'podrun-cgroot-'));
    roots.push(root);
    expect(() => ensurePodCgroup('/podrun/a/podu', 10, root)).toThrow(/--pod-max-pids on CRI needs the pids cgroup controller/);
  });
});
