import { cpus, totalmem } from 'node:os';
import { milliCpu, parseQuantity } from '../manifest/quantity.js';
import type { Container, DownwardAPIVolumeFile, Pod } from '../manifest/types.js';

/** What the downward API needs that only exists once the sandbox runs. */
export interface PodRuntimeContext {
  podIP: string;
  hostIP: string;
  nodeName: string;
  /** The node's memory, for the OOM score of Burstable containers (default: this machine's). */
  nodeMemoryBytes?: number;
  /** The lowest oom_score_adj the engine may set here: 0 where processes cannot lower it. */
  oomScoreFloor?: number;
}

/** Kubernetes' $(VAR) expansion: known names are replaced, `$$` escapes, unknown refs stay as written. */
export function expandVars(input: string, vars: ReadonlyMap<string, string>): string {
  return input.replace(/\$\$|\$\(([^)]*)\)/g, (whole, name: string | undefined) => {
    if (whole === '$$') return '$';
    return name !== undefined && vars.has(name) ? (vars.get(name) ?? '') : whole;
  });
}

function fieldValue(pod: Pod, path: string, ctx: PodRuntimeContext): string {
  const m = /^metadata\.(labels|annotations)\['(.+)'\]$/.exec(path);
  if (m) return (m[1] === 'labels' ? pod.metadata.labels : pod.metadata.annotations)?.[m[2] ?? ''] ?? '';
  switch (path) {
    case 'metadata.name':
      return pod.metadata.name;
    case 'metadata.namespace':
      return pod.metadata.namespace ?? 'default';
    case 'metadata.uid':
      return pod.metadata.uid ?? '';
    case 'spec.nodeName':
      return ctx.nodeName;
    case 'spec.serviceAccountName':
      return '';
    case 'status.podIP':
    case 'status.podIPs':
      return ctx.podIP;
    case 'status.hostIP':
    case 'status.hostIPs':
      return ctx.hostIP;
    default:
      return '';
  }
}

function resourceValue(pod: Pod, self: Container, ref: { containerName?: string; resource: string; divisor?: string | number }): string {
  const c = ref.containerName ? ([...pod.spec.containers, ...(pod.spec.initContainers ?? [])].find((x) => x.name === ref.containerName) ?? self) : self;
  const [kind, res] = ref.resource.split('.') as ['limits' | 'requests', 'cpu' | 'memory'];
  const set = c.resources?.[kind]?.[res] ?? (kind === 'requests' ? c.resources?.limits?.[res] : undefined);
  const divisor = parseQuantity(ref.divisor ?? 1) || 1;
  if (res === 'cpu') {
    // Unset limits report the node's capacity, as the kubelet does.
    const cores = set !== undefined ? milliCpu(set) / 1000 : kind === 'limits' ? cpus().length : 0;
    return String(Math.ceil(cores / divisor));
  }
  const bytes = set !== undefined ? parseQuantity(set) : kind === 'limits' ? totalmem() : 0;
  return String(Math.ceil(bytes / divisor));
}

/** A map as the kubelet writes it into a downwardAPI file (fieldpath.FormatMap): sorted `key="value"` lines. */
export function formatMap(m: Record<string, string> | undefined): string {
  return Object.keys(m ?? {})
    .sort()
    .map((k) => `${k}=${JSON.stringify(m?.[k] ?? '')}`)
    .join('\n');
}

/** What one file of a downwardAPI volume holds (validation allows only these fields in a volume). */
export function downwardFileContent(pod: Pod, item: DownwardAPIVolumeFile): string {
  const path = item.fieldRef?.fieldPath;
  if (path === 'metadata.labels') return formatMap(pod.metadata.labels);
  if (path === 'metadata.annotations') return formatMap(pod.metadata.annotations);
  if (path !== undefined) return fieldValue(pod, path, { podIP: '', hostIP: '', nodeName: '' });
  const ref = item.resourceFieldRef;
  const c = [...pod.spec.containers, ...(pod.spec.initContainers ?? [])].find((x) => x.name === ref?.containerName);
  return ref && c ? resourceValue(pod, c, ref) : '';
}

/** The container's environment, in order, with downward-API values and $(VAR) expansion. */
export function resolveEnv(pod: Pod, c: Container, ctx: PodRuntimeContext): Map<string, string> {
  const vars = new Map<string, string>();
  for (const e of c.env ?? []) {
    let value: string;
    if (e.valueFrom?.fieldRef) value = fieldValue(pod, e.valueFrom.fieldRef.fieldPath, ctx);
    else if (e.valueFrom?.resourceFieldRef) value = resourceValue(pod, c, e.valueFrom.resourceFieldRef as { resource: string });
    else value = expandVars(e.value ?? '', vars);
    vars.set(e.name, value);
  }
  return vars;
}

/**
 * Whether a new sandbox's IP must be known before its containers start: a container's env names
 * `status.podIP(s)`, or a postStart hook reaches the pod over the network (an httpGet or
 * tcpSocket with no host goes to the pod IP). The kubelet asks PodSandboxStatus after every
 * RunPodSandbox (kuberuntime_manager.go SyncPod); for any other pod podrun asks when the IP is
 * first wanted (probes, status), which spares a start one round trip (CRI: PodSandboxStatus;
 * Docker: the sandbox's inspect).
 */
export function podIPNeededAtStart(pod: Pod): boolean {
  if (pod.spec.hostNetwork) return false;
  return [...(pod.spec.initContainers ?? []), ...pod.spec.containers].some((c) => {
    if (c.env?.some((e) => /^status\.podIPs?$/.test(e.valueFrom?.fieldRef?.fieldPath ?? ''))) return true;
    const hook = c.lifecycle?.postStart;
    return hook !== undefined && !hook.exec && !hook.sleep;
  });
}
