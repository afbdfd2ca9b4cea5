import { join } from 'node:path';
import type { Pod } from '../../manifest/types.js';
import type { ResolvConf } from '../dns.js';
import { LABEL, sandboxLabels, type PodIdentity } from '../labels.js';
import type { Labels, NamespaceOption, PodSandboxConfig, Protocol } from './cri-types.js';

// A pod's sandbox as the kubelet hands it to a runtime (kuberuntime_sandbox.go
// generatePodSandboxConfig): made once here, whichever engine makes it.

/** Labels the kubelet sets on every sandbox and container (kuberuntime/labels.go): crictl and node tools read them. */
export const KUBE_LABEL = {
  podName: 'io.kubernetes.pod.name',
  podNamespace: 'io.kubernetes.pod.namespace',
  podUid: 'io.kubernetes.pod.uid',
  containerName: 'io.kubernetes.container.name',
} as const;

/**
 * What goes in annotations rather than labels: specs as JSON. containerd stores a sandbox's and a
 * container's labels as its own container labels, each at most 4096 bytes; annotations have no
 * such bound (the kubelet keeps its hashes and specs there too).
 */
const ANNOTATED = new Set<string>([LABEL.podSpec, LABEL.containerSpec, LABEL.gracePeriod]);

/** podrun's identity labels split as a runtime keeps them: small identity as labels, specs as annotations. */
export function splitLabels(all: Labels): { labels: Labels; annotations: Labels } {
  const labels: Labels = {};
  const annotations: Labels = {};
  for (const [k, v] of Object.entries(all)) (ANNOTATED.has(k) ? annotations : labels)[k] = v;
  return { labels, annotations };
}

/** `<logRoot>/<namespace>_<name>_<uid>`: the kubelet's pod log directory (BuildPodLogsDirectory). */
export function podLogDirectory(logRoot: string, id: { namespace: string; name: string; uid: string }): string {
  return join(logRoot, `${id.namespace}_${id.name}_${id.uid}`);
}

/** The namespaces a pod's sandbox and containers share (kuberuntime/helpers.go namespacesForPod). */
export function namespaceOptions(pod: Pod): NamespaceOption {
  const s = pod.spec;
  return {
    network: s.hostNetwork ? 'NODE' : 'POD',
    pid: s.hostPID ? 'NODE' : s.shareProcessNamespace ? 'POD' : 'CONTAINER',
    ipc: s.hostIPC ? 'NODE' : 'POD',
  };
}

export interface SandboxConfigOptions {
  /** Which podrun (state dir) makes it: labels.ts `instance`. */
  instance: string;
  attempt: number;
  /** The sandbox's spec hash (manifest/hash.ts). */
  hash: string;
  /** Where pod log directories go; undefined where the engine keeps logs itself. */
  logRoot?: string;
  /** The resolver the pod gets (dns.ts podDns); undefined: the node's file, as it is. */
  dns?: ResolvConf;
}

export function podSandboxConfig(pod: Pod, id: PodIdentity, o: SandboxConfigOptions): PodSandboxConfig {
  const s = pod.spec;
  const { labels, annotations } = splitLabels({ ...sandboxLabels(pod, id, o.attempt, o.hash), [LABEL.instance]: o.instance });
  const containers = [...(s.initContainers ?? []), ...s.containers];
  const ports = s.hostNetwork
    ? []
    : containers.flatMap((c) =>
        (c.ports ?? []).map((p) => ({
          protocol: (p.protocol ?? 'TCP') as Protocol,
          containerPort: p.containerPort,
          ...(p.hostPort ? { hostPort: p.hostPort } : {}),
          ...(p.hostIP ? { hostIp: p.hostIP } : {}),
        })),
      );
  const privileged = containers.some((c) => c.securityContext?.privileged === true);
  const sysctls = Object.fromEntries((s.securityContext?.sysctls ?? []).map((x) => [x.name, x.value]));
  return {
    metadata: { name: id.name, uid: id.uid, namespace: id.namespace, attempt: o.attempt },
    ...(s.hostNetwork ? {} : { hostname: (s.hostname ?? pod.metadata.name).slice(0, 63) }),
    ...(o.logRoot !== undefined ? { logDirectory: podLogDirectory(o.logRoot, id) } : {}),
    ...(o.dns ? { dnsConfig: { servers: o.dns.nameservers, searches: o.dns.searches, options: o.dns.options } } : {}),
    portMappings: ports,
    labels: { ...labels, [KUBE_LABEL.podName]: id.name, [KUBE_LABEL.podNamespace]: id.namespace, [KUBE_LABEL.podUid]: id.uid },
    annotations,
    linux: {
      securityContext: { namespaceOptions: namespaceOptions(pod), ...(privileged ? { privileged: true } : {}) },
      ...(Object.keys(sysctls).length ? { sysctls } : {}),
    },
  };
}
