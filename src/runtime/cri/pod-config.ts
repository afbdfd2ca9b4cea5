import type Docker from 'dockerode';
import { join } from 'node:path';
import type { Container, Pod } from '../../manifest/types.js';
import type { ResolvConf } from '../dns.js';
import { LABEL } from '../labels.js';
import { sandboxCreateOptions, type PodIdentity } from '../docker/spec.js';
import {
  NamespaceMode,
  ProfileType,
  Protocol,
  MountPropagation,
  type ContainerConfigInput,
  type Labels,
  type MountSpec,
  type NamespaceOptionInput,
  type PodSandboxConfigInput,
} from './messages.js';

// A pod as the kubelet hands it to a CRI runtime (kuberuntime_sandbox.go generatePodSandboxConfig,
// kuberuntime_container.go generateContainerConfig). What a container is made of (labels, env,
// command, mounts, resources, security) is decided once, in spec.ts, for every engine; this module
// only says it in runtime.v1's words, so identity and spec hashes are the same on both engines.

/** Labels the kubelet sets on every sandbox and container (kuberuntime/labels.go): crictl and node tools read them. */
const KUBE = {
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

/** podrun's identity labels split as the runtime keeps them: small identity as labels, specs as annotations. */
export function splitLabels(all: Record<string, string>): { labels: Labels; annotations: Labels } {
  const labels: Labels = {};
  const annotations: Labels = {};
  for (const [k, v] of Object.entries(all)) (ANNOTATED.has(k) ? annotations : labels)[k] = v;
  return { labels, annotations };
}

/** `<logRoot>/<namespace>_<name>_<uid>`: the kubelet's pod log directory (BuildPodLogsDirectory). */
export function podLogDirectory(logRoot: string, id: { namespace: string; name: string; uid: string }): string {
  return join(logRoot, `${id.namespace}_${id.name}_${id.uid}`);
}

/** The kubelet's container log path, relative to the pod's log directory: `<container>/<restart>.log`. */
export function containerLogPath(name: string, restartCount: number): string {
  return join(name, `${restartCount}.log`);
}

/** The namespaces a pod's sandbox and containers share (kuberuntime/helpers.go namespacesForPod). */
export function namespaceOptions(pod: Pod): NamespaceOptionInput {
  const s = pod.spec;
  return {
    network: s.hostNetwork ? NamespaceMode.NODE : NamespaceMode.POD,
    pid: s.hostPID ? NamespaceMode.NODE : s.shareProcessNamespace ? NamespaceMode.POD : NamespaceMode.CONTAINER,
    ipc: s.hostIPC ? NamespaceMode.NODE : NamespaceMode.POD,
  };
}

export interface SandboxConfigOptions {
  instance: string;
  attempt: number;
  hash: string;
  pauseImage: string;
  logRoot: string;
  dns?: ResolvConf;
}

export function sandboxConfig(pod: Pod, id: PodIdentity, o: SandboxConfigOptions): PodSandboxConfigInput {
  const s = pod.spec;
  // The labels (pod spec included) exactly as on Docker: adoption reads the same identity.
  const docker = sandboxCreateOptions(
    pod,
    { ...id, instance: o.instance },
    { pauseImage: o.pauseImage, attempt: o.attempt, hash: o.hash, network: 'cri', restartPolicy: 'no' },
  );
  const { labels, annotations } = splitLabels({ ...docker.Labels, [LABEL.instance]: o.instance });
  const ports = s.hostNetwork
    ? []
    : [...(s.initContainers ?? []), ...s.containers].flatMap((c) =>
        (c.ports ?? []).map((p) => ({
          protocol: Protocol[p.protocol ?? 'TCP'],
          containerPort: p.containerPort,
          ...(p.hostPort ? { hostPort: p.hostPort } : {}),
          ...(p.hostIP ? { hostIp: p.hostIP } : {}),
        })),
      );
  const privileged = [...(s.initContainers ?? []), ...s.containers].some((c) => c.securityContext?.privileged === true);
  const sysctls = Object.fromEntries((s.securityContext?.sysctls ?? []).map((x) => [x.name, x.value]));
  return {
    metadata: { name: id.name, uid: id.uid, namespace: id.namespace, attempt: o.attempt },
    ...(s.hostNetwork ? {} : { hostname: (s.hostname ?? pod.metadata.name).slice(0, 63) }),
    logDirectory: podLogDirectory(o.logRoot, id),
    ...(o.dns ? { dnsConfig: { servers: o.dns.nameservers, searches: o.dns.searches, options: o.dns.options } } : {}),
    portMappings: ports,
    labels: { ...labels, [KUBE.podName]: id.name, [KUBE.podNamespace]: id.namespace, [KUBE.podUid]: id.uid },
    annotations,
    linux: {
      securityContext: { namespaceOptions: namespaceOptions(pod), ...(privileged ? { privileged: true } : {}) },
      ...(Object.keys(sysctls).length ? { sysctls } : {}),
    },
  };
}

const PROPAGATION: Record<string, number> = {
  rprivate: MountPropagation.PRIVATE,
  rslave: MountPropagation.HOST_TO_CONTAINER,
  rshared: MountPropagation.BIDIRECTIONAL,
};
/** The CFS period the kubelet uses for a CPU limit (100 ms). */
const CPU_PERIOD = 100_000;

function int(v: string): number | undefined {
  return /^\d+$/.test(v) ? Number(v) : undefined;
}

/**
 * The container's runtime.v1 config from what spec.ts decided for it (its Docker create
 * options): same labels, env, command, mounts, limits and security, in the CRI's fields.
 */
export function containerConfig(pod: Pod, c: Container, d: Docker.ContainerCreateOptions, o: { instance: string; restartCount: number }): ContainerConfigInput {
  const h = d.HostConfig ?? {};
  const mounts: MountSpec[] = (h.Mounts ?? []).map((m) => {
    // Memory emptyDirs are host directories on CRI (CriEngine.prepareVolumes): never an engine volume here.
    if (m.Type !== 'bind') throw new Error(`mount ${m.Target}: a ${m.Type} mount cannot be made on a CRI runtime`);
    return {
      containerPath: m.Target,
      hostPath: m.Source,
      readonly: m.ReadOnly === true,
      propagation: PROPAGATION[m.BindOptions?.Propagation ?? 'rprivate'] ?? MountPropagation.PRIVATE,
    };
  });
  const { labels, annotations } = splitLabels({ ...d.Labels, [LABEL.instance]: o.instance });
  const [user = '', group = ''] = (d.User ?? '').split(':');
  const uid = int(user);
  const gid = int(group);
  const caps = (xs: string[] | undefined): string[] | undefined => xs?.map((x) => (x === 'ALL' ? 'ALL' : `CAP_${x}`));
  const add = caps(h.CapAdd);
  const drop = caps(h.CapDrop);
  const opts = h.SecurityOpt ?? [];
  const env = (d.Env ?? []).map((kv) => {
    const i = kv.indexOf('=');
    return { key: kv.slice(0, i), value: kv.slice(i + 1) };
  });
  return {
    metadata: { name: c.name, attempt: o.restartCount },
    image: { image: c.image },
    ...(d.Entrypoint ? { command: d.Entrypoint as string[] } : {}),
    ...(d.Cmd ? { args: d.Cmd as string[] } : {}),
    ...(d.WorkingDir ? { workingDir: d.WorkingDir } : {}),
    envs: env,
    mounts,
    labels: {
      ...labels,
      [KUBE.podName]: pod.metadata.name,
      [KUBE.podNamespace]: pod.metadata.namespace ?? 'default',
      [KUBE.podUid]: pod.metadata.uid ?? '',
      [KUBE.containerName]: c.name,
    },
    annotations,
    logPath: containerLogPath(c.name, o.restartCount),
    tty: d.Tty === true,
    stdin: d.OpenStdin === true,
    stdinOnce: d.StdinOnce === true,
    linux: {
      resources: {
        cpuShares: h.CpuShares ?? 2,
        ...(h.NanoCpus ? { cpuPeriod: CPU_PERIOD, cpuQuota: Math.floor((h.NanoCpus * CPU_PERIOD) / 1e9) } : {}),
        ...(h.Memory ? { memoryLimitInBytes: h.Memory } : {}),
        ...(h.MemorySwap ? { memorySwapLimitInBytes: h.MemorySwap } : {}),
        ...(h.OomScoreAdj !== undefined ? { oomScoreAdj: h.OomScoreAdj } : {}),
      },
      securityContext: {
        namespaceOptions: namespaceOptions(pod),
        ...(h.Privileged ? { privileged: true } : {}),
        ...(h.ReadonlyRootfs ? { readonlyRootfs: true } : {}),
        ...(add || drop ? { capabilities: { ...(add ? { addCapabilities: add } : {}), ...(drop ? { dropCapabilities: drop } : {}) } } : {}),
        ...(uid !== undefined ? { runAsUser: { value: uid } } : user ? { runAsUsername: user } : {}),
        ...(gid !== undefined ? { runAsGroup: { value: gid } } : {}),
        ...(h.GroupAdd?.length ? { supplementalGroups: h.GroupAdd.map(Number).filter(Number.isFinite) } : {}),
        ...(opts.includes('no-new-privileges') ? { noNewPrivs: true } : {}),
        seccomp: { profileType: opts.includes('seccomp=unconfined') ? ProfileType.Unconfined : ProfileType.RuntimeDefault },
      },
    },
  };
}
