import { totalmem } from 'node:os';
import { join } from 'node:path';
import { cpuShares, oomScoreAdj } from '../../manifest/qos.js';
import { milliCpu, parseQuantity } from '../../manifest/quantity.js';
import type { Container, Pod, VolumeMount } from '../../manifest/types.js';
import { expandVars, resolveEnv, type PodRuntimeContext } from '../env.js';
import { containerLabels, LABEL, type PodIdentity } from '../labels.js';
import type { VolumeBacking } from '../runtime-types.js';
import type { ContainerConfig, LinuxContainerResources, LinuxContainerSecurityContext, Mount, MountPropagation } from './cri-types.js';
import { KUBE_LABEL, namespaceOptions, splitLabels } from './sandbox-config.js';

// A container as the kubelet hands it to a runtime (kuberuntime_container.go
// generateContainerConfig, kuberuntime_container_linux.go generateLinuxContainerConfig): made
// once here, whichever engine makes it.

export interface ContainerConfigOptions {
  /** Which podrun (state dir) makes it: labels.ts `instance`. */
  instance: string;
  type: 'init' | 'app';
  restartCount: number;
  /** The container's spec hash (manifest/hash.ts). */
  hash: string;
  volumes: ReadonlyMap<string, VolumeBacking>;
  /**
   * Host paths already checked and pinned (safe-mount.ts), by the mount's index in volumeMounts:
   * every subPath mount must have one, so an unchecked subPath never reaches the engine.
   */
  pinned?: ReadonlyMap<number, string>;
  /** A host file for this instance, mounted at terminationMessagePath (the kubelet's termination log). */
  terminationLog?: string;
  /** A hosts file podrun wrote for the pod (hostNetwork with hostAliases), mounted at /etc/hosts. */
  hostsFile?: string;
  /** The image's USER, when the security context needs it (runAsNonRoot, runAsGroup alone). */
  imageUser?: string;
  runtime: PodRuntimeContext;
}

/** The kubelet's container log path, relative to the pod's log directory: `<container>/<restart>.log`. */
export function containerLogPath(name: string, restartCount: number): string {
  return join(name, `${restartCount}.log`);
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

const PROPAGATION: Record<NonNullable<VolumeMount['mountPropagation']>, MountPropagation> = {
  None: 'PROPAGATION_PRIVATE',
  HostToContainer: 'PROPAGATION_HOST_TO_CONTAINER',
  Bidirectional: 'PROPAGATION_BIDIRECTIONAL',
};

function mountsOf(c: Container, o: ContainerConfigOptions): Mount[] {
  const pinned = o.pinned ?? new Map<number, string>();
  const volumeMounts = (c.volumeMounts ?? []).map((m, j): Mount => {
    const backing = o.volumes.get(m.name);
    if (!backing) throw new Error(`volume ${m.name} has no backing`);
    const readonly = m.readOnly === true || (backing.kind === 'bind' && backing.readOnly === true);
    if (backing.kind === 'volume') {
      if (m.subPath) throw new Error(`subPath is not supported on a medium: Memory emptyDir (volume ${m.name})`);
      return { containerPath: m.mountPath, hostPath: backing.name, readonly, propagation: 'PROPAGATION_PRIVATE' };
    }
    if (m.subPath && !pinned.has(j)) throw new Error(`subPath ${JSON.stringify(m.subPath)} of volume ${m.name} was not checked`);
    return { containerPath: m.mountPath, hostPath: pinned.get(j) ?? backing.path, readonly, propagation: PROPAGATION[m.mountPropagation ?? 'None'] };
  });
  const file = (containerPath: string, hostPath: string): Mount => ({ containerPath, hostPath, readonly: false, propagation: 'PROPAGATION_PRIVATE' });
  return [
    ...volumeMounts,
    ...(o.terminationLog ? [file(c.terminationMessagePath ?? '/dev/termination-log', o.terminationLog)] : []),
    ...(o.hostsFile ? [file('/etc/hosts', o.hostsFile)] : []),
  ];
}

/** The CFS period the kubelet uses for a CPU limit (100 ms). */
const CPU_PERIOD = 100_000;

function resourcesOf(pod: Pod, c: Container, runtime: PodRuntimeContext): LinuxContainerResources {
  const mem = c.resources?.limits?.memory;
  const cpu = c.resources?.limits?.cpu;
  const bytes = mem !== undefined ? Math.floor(parseQuantity(mem)) : undefined;
  return {
    // The kubelet's shares: the request (else the limit) in millicores * 1024 / 1000, and 2 (the
    // least) with neither, so a BestEffort container yields to every other.
    cpuShares: cpuShares(c),
    ...(cpu !== undefined ? { cpuPeriod: CPU_PERIOD, cpuQuota: milliCpu(cpu) * (CPU_PERIOD / 1000) } : {}),
    // The kubelet runs containers without swap (NoSwap: the swap limit is the memory limit); an
    // engine's default would let a container use as much swap again as its limit.
    ...(bytes !== undefined ? { memoryLimitInBytes: bytes, memorySwapLimitInBytes: bytes } : {}),
    oomScoreAdj: Math.max(runtime.oomScoreFloor ?? -1000, oomScoreAdj(pod, c, runtime.nodeMemoryBytes ?? totalmem())),
  };
}

/** A numeric user or group as the runtime takes it; a name stays a name. */
function numeric(v: string): number | undefined {
  return /^\d+$/.test(v) ? Number(v) : undefined;
}

function securityOf(pod: Pod, c: Container, imageUser: string | undefined): LinuxContainerSecurityContext {
  const sc = c.securityContext;
  const psc = pod.spec.securityContext;
  const user = sc?.runAsUser ?? psc?.runAsUser;
  const group = sc?.runAsGroup ?? psc?.runAsGroup;
  const seccomp = sc?.seccompProfile?.type ?? psc?.seccompProfile?.type;
  const caps = (xs: string[] | undefined): string[] | undefined =>
    xs?.length ? xs.map((x) => (x.toUpperCase() === 'ALL' ? 'ALL' : `CAP_${x.toUpperCase().replace(/^CAP_/, '')}`)) : undefined;
  const add = caps(sc?.capabilities?.add);
  const drop = caps(sc?.capabilities?.drop);
  // runAsGroup alone keeps the image's user (not root's uid 0, as `0:group` would): the image's
  // user is named then, as the kubelet's getImageUser names it.
  const imageName = (imageUser ?? '').split(':')[0] || '0';
  const who = user !== undefined ? { runAsUser: { value: user } } : group !== undefined ? byName(imageName) : {};
  return {
    namespaceOptions: namespaceOptions(pod),
    ...(add || drop ? { capabilities: { ...(add ? { addCapabilities: add } : {}), ...(drop ? { dropCapabilities: drop } : {}) } } : {}),
    ...(sc?.privileged ? { privileged: true } : {}),
    ...who,
    ...(group !== undefined ? { runAsGroup: { value: group } } : {}),
    ...(sc?.readOnlyRootFilesystem ? { readonlyRootfs: true } : {}),
    ...(psc?.supplementalGroups?.length ? { supplementalGroups: [...psc.supplementalGroups] } : {}),
    ...(sc?.allowPrivilegeEscalation === false ? { noNewPrivs: true } : {}),
    // Without a profile the kubelet runs containers Unconfined (unless --seccomp-default); only
    // RuntimeDefault asks for the runtime's profile.
    seccomp: { profileType: seccomp === 'RuntimeDefault' ? 'RuntimeDefault' : 'Unconfined' },
  };
}

function byName(name: string): Pick<LinuxContainerSecurityContext, 'runAsUser' | 'runAsUsername'> {
  const uid = numeric(name);
  return uid !== undefined ? { runAsUser: { value: uid } } : { runAsUsername: name };
}

/** The user a container runs as, as `user[:group]` (for the non-root check and Docker's `User`). */
export function userOf(s: LinuxContainerSecurityContext): string | undefined {
  const user = s.runAsUser !== undefined ? String(s.runAsUser.value) : s.runAsUsername;
  if (user === undefined) return undefined;
  return s.runAsGroup !== undefined ? `${user}:${s.runAsGroup.value}` : user;
}

export function containerConfig(pod: Pod, id: PodIdentity, c: Container, o: ContainerConfigOptions): ContainerConfig {
  const env = resolveEnv(pod, c, o.runtime);
  const security = securityOf(pod, c, o.imageUser);
  const nonRoot = nonRootProblem(pod, c, userOf(security) ?? o.imageUser);
  if (nonRoot) throw new Error(nonRoot);
  const { labels, annotations } = splitLabels({ ...containerLabels(pod, id, c, o.type, o.restartCount, o.hash), [LABEL.instance]: o.instance });
  return {
    metadata: { name: c.name, attempt: o.restartCount },
    image: { image: c.image },
    ...(c.command ? { command: c.command.map((x) => expandVars(x, env)) } : {}),
    ...(c.args ? { args: c.args.map((x) => expandVars(x, env)) } : {}),
    ...(c.workingDir ? { workingDir: c.workingDir } : {}),
    envs: [...env].map(([key, value]) => ({ key, value })),
    mounts: mountsOf(c, o),
    labels: {
      ...labels,
      [KUBE_LABEL.podName]: id.name,
      [KUBE_LABEL.podNamespace]: id.namespace,
      [KUBE_LABEL.podUid]: id.uid,
      [KUBE_LABEL.containerName]: c.name,
    },
    annotations,
    logPath: containerLogPath(c.name, o.restartCount),
    stdin: c.stdin === true,
    stdinOnce: c.stdinOnce === true,
    tty: c.tty === true,
    linux: { resources: resourcesOf(pod, c, o.runtime), securityContext: security },
  };
}
