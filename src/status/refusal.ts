import { formatIssue, type ManifestIssue } from '../manifest/errors.js';
import { derivedUid } from '../manifest/identity.js';

/**
 * A pod the agent will not run: its manifest is invalid, or breaks the node's policy. The kubelet
 * does the same with a pod its admission refuses (pkg/kubelet/kubelet.go, HandlePodAdditions →
 * canAdmitPod → rejectPod): the pod is Failed with the handler's reason and "Pod was rejected: "
 * and its message, and a Warning event says so.
 */
export interface Refusal {
  key: string;
  namespace: string;
  name: string;
  uid: string;
  /** The kubelet's word where it has one (SysctlForbidden), else Forbidden (policy) or FailedValidation. */
  reason: string;
  /** The first error: file, line, column, field and why. */
  issue: ManifestIssue;
}

/** The reason a refusal carries: the kubelet's for sysctls (pkg/kubelet/sysctl/allowlist.go ForbiddenReason). */
function reasonOf(i: ManifestIssue): string {
  if (!i.policy) return 'FailedValidation';
  return /\.sysctls\[\d+\]/.test(i.field) ? 'SysctlForbidden' : 'Forbidden';
}

/** Each pod named by an error, once, with its first error. Pure. */
export function refusals(issues: readonly ManifestIssue[]): Refusal[] {
  const out = new Map<string, Refusal>();
  for (const i of issues) {
    if (i.severity !== 'error' || !i.pod || i.refused || out.has(i.pod)) continue;
    const slash = i.pod.indexOf('/');
    out.set(i.pod, { key: i.pod, namespace: i.pod.slice(0, slash), name: i.pod.slice(slash + 1), uid: derivedUid(i.pod), reason: reasonOf(i), issue: i });
  }
  return [...out.values()];
}

/** The refused pod's message, as the kubelet's rejectPod words it. */
export function refusalMessage(r: Refusal): string {
  return `Pod was rejected: ${formatIssue(r.issue)}`;
}

/** What a running pod that the policy now refuses is told: it is kept. */
export function keptMessage(r: Refusal): string {
  return `${formatIssue(r.issue)} (the running pod is kept: podrun never stops a pod for a policy read after it started)`;
}

/** A refused pod that never ran, as a v1 Pod: Failed, with the reason and message (kubectl shows the reason as STATUS). */
export function refusedV1Pod(r: Refusal, hostIP: string): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: r.name, namespace: r.namespace, uid: r.uid, annotations: { 'podrun.io/source': r.issue.file } },
    spec: {},
    status: {
      phase: 'Failed',
      reason: r.reason,
      message: refusalMessage(r),
      conditions: [{ type: 'PodScheduled', status: 'True' }, admittedCondition(r, refusalMessage(r))],
      hostIP,
      hostIPs: [{ ip: hostIP }],
    },
  };
}

/** The condition that says the pod is refused: podrun's own (the API has no admission condition). */
function admittedCondition(r: Refusal, message: string): Record<string, string> {
  return { type: 'podrun.io/Admitted', status: 'False', reason: r.reason, message };
}

/** A running pod that the policy now refuses: a condition saying so; it runs on. */
export function markRefusedRunning(pod: Record<string, unknown>, r: Refusal): void {
  const status = pod.status as { conditions?: Record<string, string>[] };
  status.conditions = [...(status.conditions ?? []), admittedCondition(r, keptMessage(r))];
}
