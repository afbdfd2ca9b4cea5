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
}

export const OPEN_POLICY: PodPolicy = { allowPrivileged: true, allowHostNamespaces: true };

function under(path: string, prefix: string): boolean {
  const p = prefix.length > 1 ? prefix.replace(/\/+$/, '') : prefix;
  return p === '/' || path === p || path.startsWith(`${p}/`);
}

/** Each way the pod breaks the node's policy, as (field, message); empty when it keeps to it. */
export function policyViolations(pod: Pod, policy: PodPolicy): { path: PathSegment[]; message: string }[] {
  const out: { path: PathSegment[]; message: string }[] = [];
  if (!policy.allowHostNamespaces) {
    for (const k of ['hostNetwork', 'hostPID', 'hostIPC'] as const) {
      if (pod.spec[k]) out.push({ path: ['spec', k], message: 'host namespaces are not allowed on this node (--allow-host-namespaces=false)' });
    }
  }
  if (!policy.allowPrivileged) {
    for (const list of ['initContainers', 'containers'] as const) {
      (pod.spec[list] ?? []).forEach((c, i) => {
        if (c.securityContext?.privileged) out.push({ path: ['spec', list, i, 'securityContext', 'privileged'], message: 'privileged containers are not allowed on this node (--allow-privileged=false)' });
      });
    }
  }
  const allowed = policy.allowedHostPaths;
  if (allowed) {
    (pod.spec.volumes ?? []).forEach((v, i) => {
      const p = v.hostPath?.path;
      if (p !== undefined && !allowed.some((a) => under(p.replace(/\/+$/, '') || '/', a))) {
        out.push({ path: ['spec', 'volumes', i, 'hostPath', 'path'], message: `${JSON.stringify(p)} is not under an allowed host path (--allowed-host-paths=${allowed.join(',')})` });
      }
    });
  }
  return out;
}
