import type Docker from 'dockerode';
import { SANDBOX_OOM_SCORE_ADJ } from '../../manifest/qos.js';
import type { Container, Pod } from '../../manifest/types.js';
import { engineName, LABEL, SANDBOX_NAME } from '../labels.js';
import type { ContainerConfig, Labels, MountPropagation, NamespaceMode, PodSandboxConfig } from '../kuberuntime/cri-types.js';
import { userOf } from '../kuberuntime/container-config.js';

// The pod's CRI configs (kuberuntime/) said as Docker create options, as cri-dockerd says them:
// the sandbox is a pause container holding the pod's network, IPC and UTS namespaces (its ports,
// hostname and resolver); each container joins it. What CRI has no field for is the Docker
// engine's own choice, passed beside the config (restart policy, network, log driver, pids limit,
// engine volumes, the hosts and domain the sandbox's /etc/hosts gets).

/** What only the Docker engine decides for a sandbox. */
export interface DockerSandboxExtras {
  pauseImage: string;
  /** Docker network for pods off the host network. */
  network: string;
  /** Engine restart policy: keeps the pod alive when no agent supervises it. */
  restartPolicy: string;
  /** The lowest oom_score_adj the engine may set. */
  oomScoreFloor?: number;
  /** The node's podPidsLimit. */
  pidsLimit?: number;
  /** hostAliases: the engine writes them into the sandbox's /etc/hosts, which its containers share. */
  extraHosts?: string[];
  /** The pod's subdomain (the UTS domain name). */
  domainname?: string;
  /**
   * Engine volumes (a `medium: Memory` emptyDir) by pod volume name: the engine unmounts a tmpfs
   * volume when its last container stops, which would empty the emptyDir whenever its only
   * container restarts; the sandbox holds each open.
   */
  heldVolumes?: ReadonlyMap<string, string>;
}

/** What only the Docker engine decides for a container. */
export interface DockerContainerExtras {
  sandboxId: string;
  restartPolicy: string;
  /** The engine's log driver and rotation (--container-log-max-size, --container-log-max-files). */
  logConfig?: { Type: string; Config: Record<string, string> };
  /** The node's podPidsLimit. */
  pidsLimit?: number;
  /** Mount sources that name engine volumes rather than host paths. */
  engineVolumes?: ReadonlySet<string>;
}

/** The engine restart policy that stands in for the agent when none runs (as compose does). */
export function engineRestartPolicy(pod: Pod, type: 'init' | 'app' | 'sandbox', c?: Container): string {
  if (type === 'sandbox') return 'always';
  if (type === 'init') return c?.restartPolicy === 'Always' ? 'always' : 'no';
  switch (pod.spec.restartPolicy) {
    case 'Never':
      return 'no';
    case 'OnFailure':
      return 'on-failure';
    default:
      return 'always';
  }
}

/** Labels and annotations as one set of Docker labels (the kubelet's own labels are for CRI tools: not here). */
function dockerLabels(labels: Labels, annotations: Labels): Labels {
  return Object.fromEntries(Object.entries({ ...labels, ...annotations }).filter(([k]) => !k.startsWith('io.kubernetes.')));
}

/** What names a pod's containers: the sandbox's metadata and the instance label (CreateContainer's sandbox config carries both). */
type SandboxNaming = Pick<PodSandboxConfig, 'metadata' | 'labels'>;

function podOf(sb: SandboxNaming): { name: string; namespace: string; uid: string; instance?: string } {
  const instance = sb.labels[LABEL.instance];
  return { name: sb.metadata.name, namespace: sb.metadata.namespace, uid: sb.metadata.uid, ...(instance ? { instance } : {}) };
}

function isNode(m: NamespaceMode): boolean {
  return m === 'NODE';
}

export function sandboxCreateOptions(sb: PodSandboxConfig, x: DockerSandboxExtras): Docker.ContainerCreateOptions {
  const ns = sb.linux.securityContext.namespaceOptions;
  const exposed: Record<string, object> = {};
  const bindings: Record<string, { HostIp: string; HostPort: string }[]> = {};
  for (const p of sb.portMappings) {
    const key = `${p.containerPort}/${p.protocol.toLowerCase()}`;
    exposed[key] = {};
    if (p.hostPort) (bindings[key] ??= []).push({ HostIp: p.hostIp ?? '', HostPort: String(p.hostPort) });
  }
  const dns = sb.dnsConfig;
  const hostNetwork = isNode(ns.network);
  const hostConfig: Docker.HostConfig = {
    NetworkMode: hostNetwork ? 'host' : x.network,
    PortBindings: bindings,
    IpcMode: isNode(ns.ipc) ? 'host' : 'shareable',
    OomScoreAdj: Math.max(x.oomScoreFloor ?? -1000, SANDBOX_OOM_SCORE_ADJ),
    ...(x.pidsLimit ? { PidsLimit: x.pidsLimit } : {}),
    ...(isNode(ns.pid) ? { PidMode: 'host' } : {}),
    // On the host network the engine would write a fresh /etc/hosts for the aliases, dropping the
    // node's own names; podrun writes the node's file plus the aliases instead (a mount of each container).
    ...(hostNetwork ? {} : { ExtraHosts: x.extraHosts ?? [] }),
    RestartPolicy: { Name: x.restartPolicy },
    // The merged resolver (dns.ts): the node's, with the pod's dnsConfig added; `.` means no search list.
    ...(dns?.servers.length ? { Dns: dns.servers } : {}),
    ...(dns ? { DnsSearch: dns.searches.length ? dns.searches : ['.'] } : {}),
    ...(dns?.options.length ? { DnsOptions: dns.options } : {}),
    ...(sb.linux.sysctls ? { Sysctls: sb.linux.sysctls } : {}),
    Mounts: [...(x.heldVolumes ?? new Map<string, string>())].map(([name, source]) => ({
      Type: 'volume' as const,
      Source: source,
      Target: `/.podrun/volumes/${name}`,
    })),
  };
  return {
    name: engineName(podOf(sb), SANDBOX_NAME, sb.metadata.attempt),
    Image: x.pauseImage,
    Labels: dockerLabels(sb.labels, sb.annotations),
    ...(sb.hostname !== undefined ? { Hostname: sb.hostname } : {}),
    ...(!hostNetwork && x.domainname ? { Domainname: x.domainname } : {}),
    ExposedPorts: exposed,
    HostConfig: hostConfig,
  };
}

const PROPAGATION: Record<MountPropagation, 'rprivate' | 'rslave' | 'rshared'> = {
  PROPAGATION_PRIVATE: 'rprivate',
  PROPAGATION_HOST_TO_CONTAINER: 'rslave',
  PROPAGATION_BIDIRECTIONAL: 'rshared',
};

function mountsOf(config: ContainerConfig, engineVolumes: ReadonlySet<string>): Docker.MountSettings[] {
  return config.mounts.map((m) =>
    engineVolumes.has(m.hostPath)
      ? { Type: 'volume', Source: m.hostPath, Target: m.containerPath, ReadOnly: m.readonly }
      : { Type: 'bind', Source: m.hostPath, Target: m.containerPath, ReadOnly: m.readonly, BindOptions: { Propagation: PROPAGATION[m.propagation] } },
  );
}

/** A CRI capability (`CAP_NET_ADMIN`) as Docker names it (`NET_ADMIN`). */
function capability(name: string): string {
  return name.replace(/^CAP_/, '');
}

export function containerCreateOptions(config: ContainerConfig, sb: SandboxNaming, x: DockerContainerExtras): Docker.ContainerCreateOptions {
  const s = config.linux.securityContext;
  const r = config.linux.resources;
  const ns = s.namespaceOptions;
  const sandbox = `container:${x.sandboxId}`;
  const opts = [...(s.seccomp.profileType === 'Unconfined' ? ['seccomp=unconfined'] : []), ...(s.noNewPrivs ? ['no-new-privileges'] : [])];
  const user = userOf(s);
  const grace = Number(config.annotations[LABEL.gracePeriod] ?? '30');
  const hostConfig: Docker.HostConfig = {
    NetworkMode: sandbox,
    IpcMode: isNode(ns.ipc) ? 'host' : sandbox,
    ...(isNode(ns.pid) ? { PidMode: 'host' } : ns.pid === 'POD' ? { PidMode: sandbox } : {}),
    Mounts: mountsOf(config, x.engineVolumes ?? new Set()),
    ...(x.logConfig ? { LogConfig: x.logConfig } : {}),
    RestartPolicy: { Name: x.restartPolicy },
    ...(r.memoryLimitInBytes !== undefined ? { Memory: r.memoryLimitInBytes } : {}),
    ...(r.memorySwapLimitInBytes !== undefined ? { MemorySwap: r.memorySwapLimitInBytes } : {}),
    ...(r.cpuQuota !== undefined && r.cpuPeriod ? { NanoCpus: Math.round((r.cpuQuota * 1e9) / r.cpuPeriod) } : {}),
    CpuShares: r.cpuShares,
    ...(x.pidsLimit ? { PidsLimit: x.pidsLimit } : {}),
    OomScoreAdj: r.oomScoreAdj,
    ...(s.privileged ? { Privileged: true } : {}),
    ...(s.readonlyRootfs ? { ReadonlyRootfs: true } : {}),
    ...(s.capabilities?.addCapabilities ? { CapAdd: s.capabilities.addCapabilities.map(capability) } : {}),
    ...(s.capabilities?.dropCapabilities ? { CapDrop: s.capabilities.dropCapabilities.map(capability) } : {}),
    ...(opts.length ? { SecurityOpt: opts } : {}),
    ...(s.supplementalGroups?.length ? { GroupAdd: s.supplementalGroups.map(String) } : {}),
  };
  return {
    name: engineName(podOf(sb), config.metadata.name, config.metadata.attempt),
    Image: config.image.image,
    Labels: dockerLabels(config.labels, config.annotations),
    ...(config.command ? { Entrypoint: config.command } : {}),
    ...(config.args ? { Cmd: config.args } : {}),
    Env: config.envs.map((e) => `${e.key}=${e.value}`),
    ...(config.workingDir ? { WorkingDir: config.workingDir } : {}),
    ...(user ? { User: user } : {}),
    Tty: config.tty,
    OpenStdin: config.stdin,
    StdinOnce: config.stdinOnce,
    StopTimeout: Number.isFinite(grace) ? grace : 30,
    HostConfig: hostConfig,
  };
}
