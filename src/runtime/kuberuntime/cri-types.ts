// podrun's own types for what a pod becomes on its way to an engine: runtime.v1's
// PodSandboxConfig and ContainerConfig (k8s.io/cri-api api.proto), field for field, with the
// enums by their names in api.proto. They are made once from the pod (sandbox-config.ts,
// container-config.ts), as the kubelet makes them; the CRI engine sends them (cri/wire-config.ts
// gives the enums their numbers) and the Docker engine translates them (docker/translate.ts), as
// cri-dockerd does. Only the fields podrun fills are here.

export type Labels = Record<string, string>;

/** NamespaceMode: POD shares the sandbox's, CONTAINER has its own, NODE is the host's. */
export type NamespaceMode = 'POD' | 'CONTAINER' | 'NODE';
export type Protocol = 'TCP' | 'UDP' | 'SCTP';
export type MountPropagation = 'PROPAGATION_PRIVATE' | 'PROPAGATION_HOST_TO_CONTAINER' | 'PROPAGATION_BIDIRECTIONAL';
/** SecurityProfile.ProfileType (Localhost is refused by validation, never made). */
export type SeccompProfileType = 'RuntimeDefault' | 'Unconfined';

export interface PodSandboxMetadata {
  name: string;
  uid: string;
  namespace: string;
  attempt: number;
}

export interface PortMapping {
  protocol: Protocol;
  containerPort: number;
  hostPort?: number;
  hostIp?: string;
}

export interface DNSConfig {
  servers: string[];
  searches: string[];
  options: string[];
}

export interface NamespaceOption {
  network: NamespaceMode;
  pid: NamespaceMode;
  ipc: NamespaceMode;
}

export interface PodSandboxConfig {
  metadata: PodSandboxMetadata;
  /** Absent on the host network: the node's name is the pod's. */
  hostname?: string;
  /** The kubelet's pod log directory; absent where the engine keeps logs itself (Docker). */
  logDirectory?: string;
  /** Absent: the node's resolver as it is. */
  dnsConfig?: DNSConfig;
  portMappings: PortMapping[];
  /** Identity, small (containerd keeps each label under 4096 bytes). */
  labels: Labels;
  /** Specs as JSON (no size bound). */
  annotations: Labels;
  linux: {
    cgroupParent?: string;
    securityContext: { namespaceOptions: NamespaceOption; privileged?: boolean };
    sysctls?: Labels;
  };
}

export interface Mount {
  containerPath: string;
  /**
   * A host path; on Docker it may instead name an engine volume the engine made for the pod (a
   * `medium: Memory` emptyDir): docker/translate.ts is told which.
   */
  hostPath: string;
  readonly: boolean;
  propagation: MountPropagation;
}

export interface LinuxContainerResources {
  cpuShares: number;
  cpuPeriod?: number;
  cpuQuota?: number;
  memoryLimitInBytes?: number;
  memorySwapLimitInBytes?: number;
  oomScoreAdj: number;
}

export interface LinuxContainerSecurityContext {
  namespaceOptions: NamespaceOption;
  capabilities?: { addCapabilities?: string[]; dropCapabilities?: string[] };
  privileged?: boolean;
  runAsUser?: { value: number };
  runAsUsername?: string;
  runAsGroup?: { value: number };
  readonlyRootfs?: boolean;
  supplementalGroups?: number[];
  noNewPrivs?: boolean;
  seccomp: { profileType: SeccompProfileType };
}

export interface ContainerConfig {
  metadata: { name: string; attempt: number };
  image: { image: string };
  command?: string[];
  args?: string[];
  workingDir?: string;
  envs: { key: string; value: string }[];
  mounts: Mount[];
  labels: Labels;
  annotations: Labels;
  /** Relative to the sandbox's logDirectory. */
  logPath: string;
  stdin: boolean;
  stdinOnce: boolean;
  tty: boolean;
  linux: { resources: LinuxContainerResources; securityContext: LinuxContainerSecurityContext };
}

/**
 * PodSandboxState: SANDBOX_READY ('ready') while the sandbox holds the pod's namespaces and
 * network; SANDBOX_NOTREADY ('notready') once it stopped, its pause process died, or it never
 * started. A NOTREADY sandbox never becomes READY again: the kubelet makes a new one.
 */
export type PodSandboxState = 'ready' | 'notready';

/**
 * runtime.v1's PodSandboxStatus (and ListPodSandbox's PodSandbox, its subset) as podrun reads a
 * sandbox back from any engine: the CRI engine takes it from the runtime's answers, the Docker
 * engine from its pause container's (docker/records.ts, as cri-dockerd does).
 */
export interface PodSandboxStatus {
  id: string;
  state: PodSandboxState;
  /**
   * Seconds since the epoch (api.proto's created_at is in ns; podrun keeps whole seconds, as Docker's
   * list gives them). Absent when the runtime gave a zero time: a sandbox that failed to start has one.
   */
  createdAt?: number;
  /** The pod's address, when the answer carried one (PodSandboxStatus does; ListPodSandbox does not). */
  network?: { ip: string };
  /**
   * The sandbox's labels and annotations as one map: podrun's identity (the metadata's name, uid,
   * namespace and attempt among it) is split over both on CRI and is all labels on Docker.
   */
  labels: Labels;
}
