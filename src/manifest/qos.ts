import { milliCpu, parseQuantity } from './quantity.js';
import { allContainers, type Container, type Pod } from './types.js';

// Quality of service and OOM protection as the kubelet gives them
// (pkg/apis/core/v1/helper/qos/qos.go, pkg/kubelet/qos/policy.go). Pure.

export type QosClass = 'Guaranteed' | 'Burstable' | 'BestEffort';

const GUARANTEED_OOM_SCORE_ADJ = -997;
const BESTEFFORT_OOM_SCORE_ADJ = 1000;
/** The sandbox (the kubelet's PodInfraOOMAdj): it holds the namespaces, it must outlive its containers. */
export const SANDBOX_OOM_SCORE_ADJ = -998;

/** A resource's value in base units (millicores for cpu, bytes for memory); 0 when unset. */
function amount(c: Container, kind: 'requests' | 'limits', res: 'cpu' | 'memory'): number {
  // The apiserver defaults a request to its limit.
  const v = kind === 'requests' ? (c.resources?.requests?.[res] ?? c.resources?.limits?.[res]) : c.resources?.limits?.[res];
  if (v === undefined) return 0;
  return res === 'cpu' ? milliCpu(v) : parseQuantity(v);
}

export function qosClass(pod: Pod): QosClass {
  const requests = new Map<string, number>();
  const limits = new Map<string, number>();
  let guaranteed = true;
  for (const c of allContainers(pod)) {
    for (const res of ['cpu', 'memory'] as const) {
      const r = amount(c, 'requests', res);
      const l = amount(c, 'limits', res);
      if (r > 0) requests.set(res, (requests.get(res) ?? 0) + r);
      if (l > 0) limits.set(res, (limits.get(res) ?? 0) + l);
      if (l <= 0) guaranteed = false;
    }
  }
  if (requests.size === 0 && limits.size === 0) return 'BestEffort';
  if (guaranteed && [...requests].every(([res, r]) => limits.get(res) === r) && requests.size === limits.size) return 'Guaranteed';
  return 'Burstable';
}

/** kube-apiserver, etcd and the rest of a kubeadm control plane are system-node-critical. */
function nodeCritical(pod: Pod): boolean {
  return pod.spec.priorityClassName === 'system-node-critical';
}

function burstableAdj(c: Container, nodeMemoryBytes: number): number {
  const adj = 1000 - Math.floor((1000 * amount(c, 'requests', 'memory')) / nodeMemoryBytes);
  if (adj < 1000 + GUARANTEED_OOM_SCORE_ADJ) return 1000 + GUARANTEED_OOM_SCORE_ADJ;
  if (adj === BESTEFFORT_OOM_SCORE_ADJ) return adj - 1;
  return adj;
}

/** The container's oom_score_adj: lower survives longer when the node runs out of memory. */
export function oomScoreAdj(pod: Pod, c: Container, nodeMemoryBytes: number): number {
  if (nodeCritical(pod)) return GUARANTEED_OOM_SCORE_ADJ;
  const qos = qosClass(pod);
  if (qos === 'Guaranteed') return GUARANTEED_OOM_SCORE_ADJ;
  if (qos === 'BestEffort') return BESTEFFORT_OOM_SCORE_ADJ;
  const own = burstableAdj(c, nodeMemoryBytes);
  // A sidecar must not die before the containers it serves.
  if (c.restartPolicy === 'Always' && (pod.spec.initContainers ?? []).includes(c)) {
    return Math.min(own, ...pod.spec.containers.map((x) => burstableAdj(x, nodeMemoryBytes)));
  }
  return own;
}

/** cpu shares from the cpu request (the kubelet's milliCPUToShares): 2 when there is none. */
export function cpuShares(c: Container): number {
  const req = amount(c, 'requests', 'cpu');
  return Math.max(2, Math.floor((req * 1024) / 1000));
}

/**
 * Why the pod runs less protected from the OOM killer than the kubelet would run it, on a node
 * that cannot lower oom_score_adj below `floor`; undefined when nothing is lost.
 */
export function oomProtectionLost(pod: Pod, floor: number, nodeMemoryBytes: number): string | undefined {
  const wanted = Math.min(...allContainers(pod).map((c) => oomScoreAdj(pod, c, nodeMemoryBytes)));
  if (wanted >= floor) return undefined;
  const why = nodeCritical(pod) ? 'system-node-critical' : qosClass(pod);
  return `runs at oom_score_adj ${floor}, not the ${wanted} a ${why} pod gets: this node cannot lower it (no CAP_SYS_RESOURCE), so under memory pressure the OOM killer may choose it before pods the kubelet would sacrifice first`;
}
