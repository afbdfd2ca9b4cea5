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
