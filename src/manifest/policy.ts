import { posix } from 'node:path';
import type { PathSegment } from './parse.js';
import type { Pod } from './types.js';

/**
 * What this node lets a manifest do. A manifest is root on the box; an appliance builder may
 * narrow that. The defaults are the kubelet's: everything a Pod can say is allowed.
 */
export interface PodPolicy {
  /** Privileged containers (`--allow-privileged`, the kubelet's old flag). */
  allowPrivileged: boolean;
  /** hostNetwork, hostPID and hostIPC (`--allow-host-namespaces`). */
  allowHostNamespaces: boolean;
  /** hostPath volumes only at or below these paths (`--allowed-host-paths`); undefined: any. */
  allowedHostPaths?: string[];
  /** Sysctls beyond the kubelet's safe set (`--allowed-unsafe-sysctls`), names or `prefix*`. */
  allowedUnsafeSysctls?: string[];
}

export const OPEN_POLICY: PodPolicy = { allowPrivileged: true, allowHostNamespaces: true };

function under(path: string, prefix: string): boolean {
  const p = prefix.length > 1 ? prefix.replace(/\/+$/, '') : prefix;
  return p === '/' || path === p || path.startsWith(`${p}/`);
}

/**
 * The kubelet's safe sysctls (pkg/kubelet/sysctl/safe_sysctls.go): namespaced, and isolated from
 * other pods. Any other needs --allowed-unsafe-sysctls.
 */
export const SAFE_SYSCTLS = [
  'kernel.shm_rmid_forced',
  'net.ipv4.ip_local_port_range',
  'net.ipv4.tcp_syncookies',
  'net.ipv4.ping_group_range',
  'net.ipv4.ip_unprivileged_port_start',
  'net.ipv4.ip_local_reserved_ports',
  'net.ipv4.tcp_keepalive_time',
  'net.ipv4.tcp_fin_timeout',
  'net.ipv4.tcp_keepalive_intvl',
  'net.ipv4.tcp_keepalive_probes',
  'net.ipv4.tcp_rmem',
  'net.ipv4.tcp_wmem',
];

/** Which namespace a sysctl lives in (pkg/kubelet/sysctl/namespace.go); undefined: the node's own, never settable. */
function sysctlNamespace(name: string): 'net' | 'ipc' | undefined {
  if (name.startsWith('net.')) return 'net';
  if (name.startsWith('kernel.shm') || name.startsWith('kernel.msg') || name === 'kernel.sem' || name.startsWith('fs.mqueue.')) return 'ipc';
  return undefined;
}

function sysctlAllowed(name: string, allowed: readonly string[]): boolean {
  return SAFE_SYSCTLS.includes(name) || allowed.some((a) => (a.endsWith('*') ? name.startsWith(a.slice(0, -1)) : a === name));
}

/** The kubelet's sysctl admission (pkg/kubelet/sysctl/allowlist.go), as (field, message). */
function sysctlViolations(pod: Pod, policy: PodPolicy): { path: PathSegment[]; message: string }[] {
  const out: { path: PathSegment[]; message: string }[] = [];
  (pod.spec.securityContext?.sysctls ?? []).forEach((x, i) => {
    const path: PathSegment[] = ['spec', 'securityContext', 'sysctls', i, 'name'];
    const name = x.name.replace(/\//g, '.');
    const ns = sysctlNamespace(name);
    if (!ns) out.push({ path, message: `${JSON.stringify(x.name)} is not a namespaced sysctl: setting it would change the whole node` });
    else if (!sysctlAllowed(name, policy.allowedUnsafeSysctls ?? []))
      out.push({ path, message: `${JSON.stringify(x.name)} is not a safe sysctl; the node must allow it (--allowed-unsafe-sysctls=${name})` });
    else if (ns === 'net' && pod.spec.hostNetwork)
      out.push({ path, message: `${JSON.stringify(x.name)} is not allowed with hostNetwork: it would change the node's network` });
    else if (ns === 'ipc' && pod.spec.hostIPC)
      out.push({ path, message: `${JSON.stringify(x.name)} is not allowed with hostIPC: it would change the node's IPC namespace` });
  });
  return out;
}

/** Each way the pod breaks the node's policy, as (field, message); empty when it keeps to it. */
export function policyViolations(pod: Pod, policy: PodPolicy): { path: PathSegment[]; message: string }[] {
  const out = sysctlViolations(pod, policy);
  if (!policy.allowHostNamespaces) {
    for (const k of ['hostNetwork', 'hostPID', 'hostIPC'] as const) {
      if (pod.spec[k]) out.push({ path: ['spec', k], message: 'host namespaces are not allowed on this node (--allow-host-namespaces=false)' });
    }
  }
  if (!policy.allowPrivileged) {
    for (const list of ['initContainers', 'containers'] as const) {
      (pod.spec[list] ?? []).forEach((c, i) => {
        if (c.securityContext?.privileged)
          out.push({
            path: ['spec', list, i, 'securityContext', 'privileged'],
            message: 'privileged containers are not allowed on this node (--allow-privileged=false)',
          });
      });
    }
  }
  const allowed = policy.allowedHostPaths;
  if (allowed) {
    (pod.spec.volumes ?? []).forEach((v, i) => {
      const p = v.hostPath?.path;
      // The text only; where the path really leads is judged again when it is mounted (runtime/safe-mount.ts).
      if (p !== undefined && !allowed.some((a) => under(posix.normalize(p).replace(/\/+$/, '') || '/', a))) {
        out.push({
          path: ['spec', 'volumes', i, 'hostPath', 'path'],
          message: `${JSON.stringify(p)} is not under an allowed host path (--allowed-host-paths=${allowed.join(',')})`,
        });
      }
    });
  }
  return out;
}
