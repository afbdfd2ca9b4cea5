// The TypeScript shapes of the runtime.v1 messages in messages.ts: what decode returns and encode
// accepts. Written here, not generated: they say which fields podrun always sets and how it reads
// 64-bit values, which api.proto cannot. codec() in messages.ts is the one cast where a shape and
// its generated table meet.

export type Labels = Record<string, string>;

export interface Metadata {
  name: string;
  uid: string;
  namespace: string;
  attempt: number;
}
export interface MountSpec {
  containerPath: string;
  hostPath: string;
  readonly?: boolean;
  selinuxRelabel?: boolean;
  propagation?: number;
  recursiveReadOnly?: boolean;
}
export interface NamespaceOptionInput {
  network?: number;
  pid?: number;
  ipc?: number;
  targetId?: string;
}
export interface SecurityProfileInput {
  profileType: number;
  localhostRef?: string;
}
export type Int64Input = { value: bigint | number };
export interface PodSandboxConfigInput {
  metadata: Metadata;
  hostname?: string;
  logDirectory?: string;
  dnsConfig?: { servers?: string[]; searches?: string[]; options?: string[] };
  portMappings?: { protocol?: number; containerPort: number; hostPort?: number; hostIp?: string }[];
  labels?: Labels;
  annotations?: Labels;
  linux?: {
    cgroupParent?: string;
    securityContext?: {
      namespaceOptions?: NamespaceOptionInput;
      runAsUser?: Int64Input;
      runAsGroup?: Int64Input;
      readonlyRootfs?: boolean;
      supplementalGroups?: (bigint | number)[];
      privileged?: boolean;
      seccomp?: SecurityProfileInput;
      apparmor?: SecurityProfileInput;
    };
    sysctls?: Labels;
  };
}
export interface LinuxResourcesInput {
  cpuPeriod?: bigint | number;
  cpuQuota?: bigint | number;
  cpuShares?: bigint | number;
  memoryLimitInBytes?: bigint | number;
  oomScoreAdj?: bigint | number;
  cpusetCpus?: string;
  cpusetMems?: string;
  unified?: Labels;
  memorySwapLimitInBytes?: bigint | number;
}
export interface ContainerConfigInput {
  metadata: { name: string; attempt?: number };
  image: { image: string; annotations?: Labels; userSpecifiedImage?: string };
  command?: string[];
  args?: string[];
  workingDir?: string;
  envs?: { key: string; value: string }[];
  mounts?: MountSpec[];
  devices?: { containerPath: string; hostPath: string; permissions: string }[];
  labels?: Labels;
  annotations?: Labels;
  logPath?: string;
  stdin?: boolean;
  stdinOnce?: boolean;
  tty?: boolean;
  linux?: {
    resources?: LinuxResourcesInput;
    securityContext?: {
      capabilities?: { addCapabilities?: string[]; dropCapabilities?: string[] };
      privileged?: boolean;
      namespaceOptions?: NamespaceOptionInput;
      runAsUser?: Int64Input;
      runAsUsername?: string;
      runAsGroup?: Int64Input;
      readonlyRootfs?: boolean;
      supplementalGroups?: (bigint | number)[];
      noNewPrivs?: boolean;
      maskedPaths?: string[];
      readonlyPaths?: string[];
      seccomp?: SecurityProfileInput;
      apparmor?: SecurityProfileInput;
    };
  };
}
export interface VersionInfo {
  version: string;
  runtimeName: string;
  runtimeVersion: string;
  runtimeApiVersion: string;
}
export interface PodSandboxStatusInfo {
  id: string;
  metadata: Metadata | undefined;
  state: number;
  createdAt: bigint;
  network: { ip: string; additionalIps: { ip: string }[] } | undefined;
  labels: Labels;
  annotations: Labels;
  runtimeHandler: string;
}
export interface PodSandboxItem {
  id: string;
  metadata: Metadata | undefined;
  state: number;
  createdAt: bigint;
  labels: Labels;
  annotations: Labels;
  runtimeHandler: string;
}
export interface ContainerItem {
  id: string;
  podSandboxId: string;
  metadata: { name: string; attempt: number } | undefined;
  image: { image: string } | undefined;
  imageRef: string;
  state: number;
  createdAt: bigint;
  labels: Labels;
  annotations: Labels;
  imageId: string;
}
export interface ContainerStatusInfo {
  id: string;
  metadata: { name: string; attempt: number } | undefined;
  state: number;
  createdAt: bigint;
  startedAt: bigint;
  finishedAt: bigint;
  exitCode: number;
  image: { image: string } | undefined;
  imageRef: string;
  reason: string;
  message: string;
  labels: Labels;
  annotations: Labels;
  mounts: Required<MountSpec>[];
  logPath: string;
  imageId: string;
}
export interface ExecSyncResult {
  stdout: Uint8Array;
  stderr: Uint8Array;
  exitCode: number;
}
export interface ImageInfo {
  id: string;
  repoTags: string[];
  repoDigests: string[];
  size: bigint;
  uid: { value: bigint } | undefined;
  username: string;
  pinned: boolean;
}
export interface FilesystemUsageInfo {
  timestamp: bigint;
  fsId: { mountpoint: string } | undefined;
  usedBytes: { value: bigint } | undefined;
  inodesUsed: { value: bigint } | undefined;
}
type U64 = { value: bigint } | undefined;
export interface ContainerStatsInfo {
  cpu?: { timestamp: bigint; usageCoreNanoSeconds: U64; usageNanoCores: U64 };
  memory?: { timestamp: bigint; workingSetBytes: U64; availableBytes: U64; usageBytes: U64; rssBytes: U64; pageFaults: U64; majorPageFaults: U64 };
  writableLayer?: FilesystemUsageInfo;
}

export interface ContainerEvent {
  containerId: string;
  containerEventType: number;
  createdAt: bigint;
  podSandboxStatus: PodSandboxStatusInfo | undefined;
  containersStatuses: ContainerStatusInfo[];
}
export interface AuthConfigInput {
  username?: string;
  password?: string;
  auth?: string;
  serverAddress?: string;
  identityToken?: string;
  registryToken?: string;
}
