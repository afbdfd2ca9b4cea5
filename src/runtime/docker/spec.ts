import type Docker from 'dockerode';
import { totalmem } from 'node:os';
import { cpuShares, oomScoreAdj, SANDBOX_OOM_SCORE_ADJ } from '../../manifest/qos.js';
import { milliCpu, parseQuantity } from '../../manifest/quantity.js';
import type { Container, Pod, SecurityContext, VolumeMount } from '../../manifest/types.js';
import type { ResolvConf } from '../dns.js';
import { expandVars, resolveEnv, type PodRuntimeContext } from '../env.js';
import { containerLabels, engineName, sandboxLabels, SANDBOX_NAME, type PodIdentity } from '../labels.js';
import type { VolumeBacking } from '../runtime-types.js';

export type { PodIdentity, VolumeBacking };

// Pure translation of a pod into Docker create options: the sandbox holds the pod's network, IPC
// and UTS namespaces (and its ports, hostname and /etc/hosts); each container joins it.

export interface SandboxOptions {
  pauseImage: string;
  /** The lowest oom_score_adj the engine may set (see PodRuntimeContext). */
  oomScoreFloor?: number;
  /** The pod's volumes: memory ones are mounted in the sandbox too, so they live as long as the pod. */
  volumes?: ReadonlyMap<string, VolumeBacking>;
  attempt: number;
  hash: string;
  /** Docker network for non-host-network pods. */
  network: string;
  /** Engine restart policy: keeps the pod alive when no agent supervises it. */
  restartPolicy: string;
  /** The resolver the pod gets (dns.ts podDns); undefined: the node's file, copied by the engine. */
  dns?: ResolvConf;
  /** The node's podPidsLimit (RuntimeOptions.podPidsLimit). */
  pidsLimit?: number;
}

export interface ContainerOptions {
  /** A hosts file podrun wrote for the pod (hostNetwork with hostAliases), mounted at /etc/hosts. */
  hostsFile?: string;
  /** The engine's log driver and rotation (--container-log-max-size, --container-log-max-files). */
  logConfig?: { Type: string; Config: Record<string, string> };
  /** A host file for this instance, mounted at terminationMessagePath (the kubelet's termination log). */
  terminationLog?: string;
  /** The image's USER, when the security context needs it (runAsNonRoot, runAsGroup alone). */
  imageUser?: string;
  /** The node's podPidsLimit (RuntimeOptions.podPidsLimit). */
  pidsLimit?: number;
  type: 'init' | 'app';
  restartCount: number;
  hash: string;
  sandboxId: string;
  volumes: ReadonlyMap<string, VolumeBacking>;
  /**
   * Host paths already checked and pinned (safe-mount.ts), by the mount's index in volumeMounts:
   * every subPath mount must have one, so an unchecked subPath never reaches the engine.
   */
  pinned?: ReadonlyMap<number, string>;
  runtime: PodRuntimeContext;
  restartPolicy: string;
}

/** What a start request and the node give every container's options (the runtime adds mounts, logs and the image's user). */
export function startOptions(
  pod: Pod,
  c: Container,
  o: {
    type: 'init' | 'app';
    restartCount: number;
    hash: string;
    sandbox: { id: string; ip: string };
    volumes: ReadonlyMap<string, VolumeBacking>;
    engineRestarts: boolean;
  },
  node: Omit<PodRuntimeContext, 'podIP'>,
): ContainerOptions {
  const restartPolicy = o.engineRestarts ? engineRestartPolicy(pod, o.type, c) : 'no';
  return {
    type: o.type,
    restartCount: o.restartCount,
    hash: o.hash,
    sandboxId: o.sandbox.id,
    volumes: o.volumes,
    runtime: { ...node, podIP: o.sandbox.ip },
    restartPolicy,
  };
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

export function sandboxCreateOptions(pod: Pod, id: PodIdentity, o: SandboxOptions): Docker.ContainerCreateOptions {
  const s = pod.spec;
  const labels = sandboxLabels(pod, id, o.attempt, o.hash);
  const exposed: Record<string, object> = {};
  const bindings: Record<string, { HostIp: string; HostPort: string }[]> = {};
  if (!s.hostNetwork) {
    for (const c of [...(s.initContainers ?? []), ...s.containers]) {
      for (const p of c.ports ?? []) {
        const key = `${p.containerPort}/${(p.protocol ?? 'TCP').toLowerCase()}`;
        exposed[key] = {};
        if (p.hostPort) (bindings[key] ??= []).push({ HostIp: p.hostIP ?? '', HostPort: String(p.hostPort) });
      }
    }
  }
  const dns = o.dns;
  const hostConfig: Docker.HostConfig = {
    NetworkMode: s.hostNetwork ? 'host' : o.network,
    PortBindings: bindings,
    IpcMode: s.hostIPC ? 'host' : 'shareable',
    OomScoreAdj: Math.max(o.oomScoreFloor ?? -1000, SANDBOX_OOM_SCORE_ADJ),
    ...(o.pidsLimit ? { PidsLimit: o.pidsLimit } : {}),
    ...(s.hostPID ? { PidMode: 'host' } : {}),
    // On the host network the engine would write a fresh /etc/hosts for the aliases, dropping the
    // node's own names; podrun writes the node's file plus the aliases instead (ContainerOptions.hostsFile).
    ...(s.hostNetwork ? {} : { ExtraHosts: (s.hostAliases ?? []).flatMap((a) => (a.hostnames ?? []).map((h) => `${h}:${a.ip}`)) }),
    RestartPolicy: { Name: o.restartPolicy },
    // The merged resolver (dns.ts): the node's, with the pod's dnsConfig added; `.` means no search list.
    ...(dns?.nameservers.length ? { Dns: dns.nameservers } : {}),
    ...(dns ? { DnsSearch: dns.searches.length ? dns.searches : ['.'] } : {}),
    ...(dns?.options.length ? { DnsOptions: dns.options } : {}),
    ...(s.securityContext?.sysctls?.length ? { Sysctls: Object.fromEntries(s.securityContext.sysctls.map((x) => [x.name, x.value])) } : {}),
    // The engine unmounts a tmpfs volume when its last container stops, which would empty a
    // `medium: Memory` emptyDir whenever its only container restarts; the sandbox holds it open.
    Mounts: [...(o.volumes ?? new Map<string, VolumeBacking>())].flatMap(([name, b]) =>
      b.kind === 'volume' ? [{ Type: 'volume' as const, Source: b.name, Target: `/.podrun/volumes/${name}` }] : [],
    ),
  };
  return {
    name: engineName(id, SANDBOX_NAME, o.attempt),
    Image: o.pauseImage,
    Labels: labels,
    ...(s.hostNetwork ? {} : { Hostname: (s.hostname ?? pod.metadata.name).slice(0, 63) }),
    ...(s.hostNetwork ? {} : s.subdomain ? { Domainname: `${s.subdomain}.${id.namespace}.svc` } : {}),
    ExposedPorts: exposed,
    HostConfig: hostConfig,
  };
}

/** Whether the container needs its image's USER to be run: the caller inspects the image only then. */
export function needsImageUser(pod: Pod, c: Container): boolean {
  const sc = c.securityContext;
  const psc = pod.spec.securityContext;
  const user = sc?.runAsUser ?? psc?.runAsUser;
  const group = sc?.runAsGroup ?? psc?.runAsGroup;
  return user === undefined && (group !== undefined || (sc?.runAsNonRoot ?? psc?.runAsNonRoot) === true);
}

/**
 * The kubelet's runAsNonRoot check (kuberuntime_container_linux.go verifyRunAsNonRoot), on the
 * user the container will run as: the messages are the kubelet's.
 */
export function nonRootProblem(pod: Pod, c: Container, user: string | undefined): string | undefined {
  if ((c.securityContext?.runAsNonRoot ?? pod.spec.securityContext?.runAsNonRoot) !== true) return undefined;
  const who = `(pod: "${pod.metadata.name}_${pod.metadata.namespace ?? 'default'}(${pod.metadata.uid ?? ''})", container: ${c.name})`;
  const explicit = c.securityContext?.runAsUser ?? pod.spec.securityContext?.runAsUser;
  if (explicit !== undefined) return explicit === 0 ? `container's runAsUser breaks non-root policy ${who}` : undefined;
  const name = (user ?? '').split(':')[0] ?? '';
  if (name === '' || name === 'root') return `container has runAsNonRoot and image will run as root ${who}`;
  if (!/^\d+$/.test(name)) return `container has runAsNonRoot and image has non-numeric user (${name}), cannot verify user is non-root ${who}`;
  return Number(name) === 0 ? `container has runAsNonRoot and image will run as root ${who}` : undefined;
}

function securityOf(pod: Pod, sc: SecurityContext | undefined, imageUser?: string): Partial<Docker.HostConfig> & { User?: string } {
  const psc = pod.spec.securityContext;
  const user = sc?.runAsUser ?? psc?.runAsUser;
  const group = sc?.runAsGroup ?? psc?.runAsGroup;
  const seccomp = sc?.seccompProfile?.type ?? psc?.seccompProfile?.type;
  const opts: string[] = [];
  // Without a profile the kubelet runs containers Unconfined (unless --seccomp-default); only
  // RuntimeDefault asks for the engine's profile.
  if (seccomp !== 'RuntimeDefault') opts.push('seccomp=unconfined');
  if (sc?.allowPrivilegeEscalation === false) opts.push('no-new-privileges');
  const caps = (xs: string[] | undefined): string[] | undefined => xs?.map((x) => (x.toUpperCase() === 'ALL' ? 'ALL' : x.toUpperCase().replace(/^CAP_/, '')));
  return {
    // runAsGroup alone keeps the image's user (not root's uid 0, as `0:group` would).
    ...(user !== undefined
      ? { User: group !== undefined ? `${user}:${group}` : String(user) }
      : group !== undefined
        ? { User: `${(imageUser ?? '').split(':')[0] || '0'}:${group}` }
        : {}),
    ...(sc?.privileged ? { Privileged: true } : {}),
    ...(sc?.readOnlyRootFilesystem ? { ReadonlyRootfs: true } : {}),
    ...(sc?.capabilities?.add?.length ? { CapAdd: caps(sc.capabilities.add) } : {}),
    ...(sc?.capabilities?.drop?.length ? { CapDrop: caps(sc.capabilities.drop) } : {}),
    ...(opts.length ? { SecurityOpt: opts } : {}),
    ...(psc?.supplementalGroups?.length ? { GroupAdd: psc.supplementalGroups.map(String) } : {}),
  };
}

function resourcesOf(c: Container): Partial<Docker.HostConfig> {
  const out: Partial<Docker.HostConfig> = {};
  const mem = c.resources?.limits?.memory;
  // The kubelet runs containers without swap (NoSwap: the swap limit is the memory limit); the
  // engine's default would let a container use as much swap again as its limit.
  if (mem !== undefined) out.Memory = out.MemorySwap = Math.floor(parseQuantity(mem));
  const cpuLimit = c.resources?.limits?.cpu;
  if (cpuLimit !== undefined) out.NanoCpus = milliCpu(cpuLimit) * 1_000_000;
  // The kubelet's shares: the request (else the limit) in millicores * 1024 / 1000, and 2 (the
  // least) with neither, so a BestEffort container yields to every other.
  out.CpuShares = cpuShares(c);
  return out;
}

const PROPAGATION = { None: 'rprivate', HostToContainer: 'rslave', Bidirectional: 'rshared' } as const;

/** The container's mounts that must be pinned before the engine sees them, with their index and host directory. */
export function mountsToPin(
  c: Container,
  volumes: ReadonlyMap<string, VolumeBacking>,
  allowList: boolean,
): { index: number; mount: VolumeMount; backing: Extract<VolumeBacking, { kind: 'bind' }> }[] {
  return (c.volumeMounts ?? []).flatMap((mount, index) => {
    const backing = volumes.get(mount.name);
    return backing?.kind === 'bind' && (mount.subPath || (backing.hostPath && allowList)) ? [{ index, mount, backing }] : [];
  });
}

function mountsOf(c: Container, volumes: ReadonlyMap<string, VolumeBacking>, pinned: ReadonlyMap<number, string>): Docker.MountSettings[] {
  return (c.volumeMounts ?? []).map((m, j) => {
    const backing = volumes.get(m.name);
    if (!backing) throw new Error(`volume ${m.name} has no backing`);
    const readOnly = m.readOnly === true || (backing.kind === 'bind' && backing.readOnly === true);
    if (backing.kind === 'volume') {
      if (m.subPath) throw new Error(`subPath is not supported on a medium: Memory emptyDir (volume ${m.name})`);
      return { Type: 'volume', Source: backing.name, Target: m.mountPath, ReadOnly: readOnly };
    }
    const source = pinned.get(j) ?? backing.path;
    if (m.subPath && !pinned.has(j)) throw new Error(`subPath ${JSON.stringify(m.subPath)} of volume ${m.name} was not checked`);
    return {
      Type: 'bind',
      Source: source,
      Target: m.mountPath,
      ReadOnly: readOnly,
      BindOptions: { Propagation: PROPAGATION[m.mountPropagation ?? 'None'] },
    };
  });
}

export function containerCreateOptions(pod: Pod, id: PodIdentity, c: Container, o: ContainerOptions): Docker.ContainerCreateOptions {
  const s = pod.spec;
  const env = resolveEnv(pod, c, o.runtime);
  const { User, ...security } = securityOf(pod, c.securityContext, o.imageUser);
  const nonRoot = nonRootProblem(pod, c, User ?? o.imageUser);
  if (nonRoot) throw new Error(nonRoot);
  const sandbox = `container:${o.sandboxId}`;
  const hostConfig: Docker.HostConfig = {
    NetworkMode: sandbox,
    IpcMode: s.hostIPC ? 'host' : sandbox,
    ...(s.hostPID ? { PidMode: 'host' } : s.shareProcessNamespace ? { PidMode: sandbox } : {}),
    Mounts: [
      ...mountsOf(c, o.volumes, o.pinned ?? new Map()),
      ...(o.terminationLog
        ? [{ Type: 'bind' as const, Source: o.terminationLog, Target: c.terminationMessagePath ?? '/dev/termination-log', ReadOnly: false }]
        : []),
      ...(o.hostsFile ? [{ Type: 'bind' as const, Source: o.hostsFile, Target: '/etc/hosts', ReadOnly: false }] : []),
    ],
    ...(o.logConfig ? { LogConfig: o.logConfig } : {}),
    RestartPolicy: { Name: o.restartPolicy },
    ...resourcesOf(c),
    ...(o.pidsLimit ? { PidsLimit: o.pidsLimit } : {}),
    OomScoreAdj: Math.max(o.runtime.oomScoreFloor ?? -1000, oomScoreAdj(pod, c, o.runtime.nodeMemoryBytes ?? totalmem())),
    ...security,
  };
  return {
    name: engineName(id, c.name, o.restartCount),
    Image: c.image,
    Labels: containerLabels(pod, id, c, o.type, o.restartCount, o.hash),
    ...(c.command ? { Entrypoint: c.command.map((x) => expandVars(x, env)) } : {}),
    ...(c.args ? { Cmd: c.args.map((x) => expandVars(x, env)) } : {}),
    Env: [...env].map(([k, v]) => `${k}=${v}`),
    ...(c.workingDir ? { WorkingDir: c.workingDir } : {}),
    ...(User ? { User } : {}),
    Tty: c.tty === true,
    OpenStdin: c.stdin === true,
    StdinOnce: c.stdinOnce === true,
    StopTimeout: s.terminationGracePeriodSeconds ?? 30,
    HostConfig: hostConfig,
  };
}
