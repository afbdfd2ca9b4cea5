import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

// The pod's cgroup, as the kubelet's pod container manager makes it
// (pkg/kubelet/cm/pod_container_manager_linux.go): one cgroup per pod, its pids limit set there
// (podPidsLimit), handed to the runtime as the sandbox's cgroup parent, so the runtime puts the
// sandbox and every container of the pod below it and the limit holds for the pod as a whole.
// runtime.v1 has no pids field, so this is the only way to the limit on CRI. podrun makes it
// with the cgroupfs driver only (a path under each hierarchy; the runtime's containers go below);
// a runtime on the systemd driver names its cgroups as slices, which this does not make.

const CGROUP_ROOT = '/sys/fs/cgroup';

/** `/podrun/<instance>/pod<uid>`: the instance keeps two podruns' pods of one uid apart. */
export function podCgroupParent(instance: string, uid: string): string {
  // Both go into a path under /sys/fs/cgroup: nothing but what podrun itself makes them of.
  if (!/^[0-9a-f]{1,64}$/.test(instance) || !/^[A-Za-z0-9-]{1,128}$/.test(uid))
    throw new Error(`no pod cgroup for pod uid ${JSON.stringify(uid)}: not a plain uid`);
  return `/podrun/${instance}/pod${uid}`;
}

/** cgroup v2 alone (a cgroup.controllers at the root), or v1 with a pids hierarchy of its own. */
function layout(root: string): 'v2' | 'v1' | undefined {
  if (existsSync(join(root, 'cgroup.controllers'))) return 'v2';
  if (existsSync(join(root, 'pids', 'cgroup.procs'))) return 'v1';
  return undefined;
}

/**
 * Makes the pod's cgroup with `pids.max` = `maxPids` (again: an adopted pod's is set anew). On v2
 * the pids controller is enabled down the path first (a child's pids.max exists only then).
 * Throws with what is wrong when the node's cgroups cannot carry the limit.
 */
export function ensurePodCgroup(parent: string, maxPids: number, root = CGROUP_ROOT): void {
  const kind = layout(root);
  if (!kind)
    throw new Error(
      `--pod-max-pids on CRI needs the pids cgroup controller: neither ${join(root, 'cgroup.controllers')} (v2) nor ${join(root, 'pids')} (v1) is there`,
    );
  const base = kind === 'v2' ? root : join(root, 'pids');
  const parts = parent.split('/').filter(Boolean);
  let dir = base;
  for (const part of parts) {
    if (kind === 'v2') enablePids(dir);
    dir = join(dir, part);
    mkdirSync(dir, { recursive: true });
  }
  writeFileSync(join(dir, 'pids.max'), `${maxPids}\n`);
}

function enablePids(dir: string): void {
  const control = join(dir, 'cgroup.subtree_control');
  if (readFileSync(control, 'utf8').split(/\s+/).includes('pids')) return;
  writeFileSync(control, '+pids');
}

/**
 * Removes the pod's cgroup from every hierarchy the runtime made it in (on v1, runc makes the
 * path under each controller), and the podrun directories above it once empty. What is still
 * busy (a process left in it) stays: the next removal of the pod tries again.
 */
export function removePodCgroup(parent: string, root = CGROUP_ROOT): void {
  const kind = layout(root);
  if (!kind) return;
  const bases =
    kind === 'v2'
      ? [root]
      : readdirSync(root, { withFileTypes: true })
          .filter((d) => d.isDirectory())
          .map((d) => join(root, d.name));
  const parts = parent.split('/').filter(Boolean);
  for (const base of bases) {
    for (let n = parts.length; n > 0; n--) {
      try {
        rmdirSync(join(base, ...parts.slice(0, n)));
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        // Gone already: go on up. Not empty or busy: what is above is not empty either.
        if (code !== 'ENOENT') break;
      }
    }
  }
}
