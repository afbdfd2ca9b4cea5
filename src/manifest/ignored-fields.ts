import { isObject, type Report } from './report.js';

const SCHEDULING = 'ignored: it has no meaning on a single node';
/** Fields accepted (a manifest moves to a cluster unchanged) and ignored, each with why; the schema marks them `ignored`. */
export const IGNORED_SPEC: Record<string, string> = {
  nodeSelector: SCHEDULING,
  affinity: SCHEDULING,
  tolerations: SCHEDULING,
  schedulerName: SCHEDULING,
  priority: SCHEDULING,
  preemptionPolicy: SCHEDULING,
  topologySpreadConstraints: SCHEDULING,
  schedulingGates: SCHEDULING,
  overhead: 'ignored: it is set by a RuntimeClass, which podrun does not have',
  nodeName: "ignored: a static pod runs on this node, whatever it names; podrun sets it to the node's name (--node-name), as the kubelet does",
  enableServiceLinks: 'ignored: there are no Services on a node without an apiserver, so there are no service links to inject',
  automountServiceAccountToken: 'ignored: static pods have no ServiceAccount, so there is no token to mount',
};
export const IGNORED_CONTAINER: Record<string, string> = {
  resizePolicy: 'ignored: resources change only with the manifest, which replaces the container',
};

export function ignoredFieldWarnings(pod: Record<string, unknown>, fail: Report): void {
  const spec = pod.spec;
  if (!isObject(spec)) return;
  for (const [k, why] of Object.entries(IGNORED_SPEC)) {
    if (spec[k] !== undefined) fail(['spec', k], why, { atKey: true, severity: 'warning' });
  }
  for (const list of ['initContainers', 'containers'] as const) {
    const cs = spec[list];
    if (!Array.isArray(cs)) continue;
    cs.forEach((c: unknown, i) => {
      if (!isObject(c)) return;
      for (const [k, why] of Object.entries(IGNORED_CONTAINER)) if (c[k] !== undefined) fail(['spec', list, i, k], why, { atKey: true, severity: 'warning' });
    });
  }
}
