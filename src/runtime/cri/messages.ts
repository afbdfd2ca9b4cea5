// The runtime.v1 messages podrun uses, written for podrun: names in camelCase, field numbers those
// of the published CRI API (kubernetes/cri-api, pkg/apis/runtime/v1/api.proto). Fields podrun
// does not use are left out; the codec skips them when a runtime sends them.

import type { FieldSpec, MessageSpec, WireObject } from './wire.js';
import { decode } from './wire-decode.js';
import { encode } from './wire-encode.js';

// The TypeScript shapes of these messages (what decode returns, what encode accepts) live in
// message-shapes.ts; they are re-exported so callers keep one name for the CRI API.
export type * from './message-shapes.js';

const str = (no: number): FieldSpec => ({ no, kind: 'string' });
const strs = (no: number): FieldSpec => ({ no, kind: 'string', repeated: true });
const bool = (no: number): FieldSpec => ({ no, kind: 'bool' });
const i32 = (no: number): FieldSpec => ({ no, kind: 'int32' });
const u32 = (no: number): FieldSpec => ({ no, kind: 'uint32' });
const i64 = (no: number): FieldSpec => ({ no, kind: 'int64' });
const u64 = (no: number): FieldSpec => ({ no, kind: 'uint64' });
const i64s = (no: number): FieldSpec => ({ no, kind: 'int64', repeated: true });
const enm = (no: number): FieldSpec => ({ no, kind: 'enum' });
const map = (no: number): FieldSpec => ({ no, kind: 'map' });
const msg = (no: number, m: () => MessageSpec): FieldSpec => ({ no, kind: 'message', message: m });
const msgs = (no: number, m: () => MessageSpec): FieldSpec => ({ no, kind: 'message', message: m, repeated: true });
const spec = (name: string, fields: Record<string, FieldSpec>): MessageSpec => ({ name, fields });

// ---- enums ----
export const Protocol = { TCP: 0, UDP: 1, SCTP: 2 } as const;
export const MountPropagation = { PRIVATE: 0, HOST_TO_CONTAINER: 1, BIDIRECTIONAL: 2 } as const;
export const NamespaceMode = { POD: 0, CONTAINER: 1, NODE: 2, TARGET: 3 } as const;
export const PodSandboxState = { READY: 0, NOTREADY: 1 } as const;
export const ContainerState = { CREATED: 0, RUNNING: 1, EXITED: 2, UNKNOWN: 3 } as const;
export const ContainerEventType = { CREATED: 0, STARTED: 1, STOPPED: 2, DELETED: 3 } as const;
export const ProfileType = { RuntimeDefault: 0, Unconfined: 1, Localhost: 2 } as const;

// ---- shared pieces ----
export const Empty = spec('Empty', {});
export const Int64Value = spec('Int64Value', { value: i64(1) });
export const UInt64Value = spec('UInt64Value', { value: u64(1) });
export const KeyValue = spec('KeyValue', { key: str(1), value: str(2) });
export const ImageSpec = spec('ImageSpec', { image: str(1), annotations: map(2), userSpecifiedImage: str(18), runtimeHandler: str(19) });
export const DNSConfig = spec('DNSConfig', { servers: strs(1), searches: strs(2), options: strs(3) });
export const PortMapping = spec('PortMapping', { protocol: enm(1), containerPort: i32(2), hostPort: i32(3), hostIp: str(4) });
export const Mount = spec('Mount', {
  containerPath: str(1),
  hostPath: str(2),
  readonly: bool(3),
  selinuxRelabel: bool(4),
  propagation: enm(5),
  recursiveReadOnly: bool(8),
});
export const NamespaceOption = spec('NamespaceOption', { network: enm(1), pid: enm(2), ipc: enm(3), targetId: str(4) });
export const SecurityProfile = spec('SecurityProfile', { profileType: enm(1), localhostRef: str(2) });
export const LinuxSandboxSecurityContext = spec('LinuxSandboxSecurityContext', {
  namespaceOptions: msg(1, () => NamespaceOption),
  runAsUser: msg(3, () => Int64Value),
  readonlyRootfs: bool(4),
  supplementalGroups: i64s(5),
  privileged: bool(6),
  runAsGroup: msg(8, () => Int64Value),
  seccomp: msg(9, () => SecurityProfile),
  apparmor: msg(10, () => SecurityProfile),
});
export const LinuxContainerResources = spec('LinuxContainerResources', {
  cpuPeriod: i64(1),
  cpuQuota: i64(2),
  cpuShares: i64(3),
  memoryLimitInBytes: i64(4),
  oomScoreAdj: i64(5),
  cpusetCpus: str(6),
  cpusetMems: str(7),
  unified: map(9),
  memorySwapLimitInBytes: i64(10),
});
export const LinuxPodSandboxConfig = spec('LinuxPodSandboxConfig', {
  cgroupParent: str(1),
  securityContext: msg(2, () => LinuxSandboxSecurityContext),
  sysctls: map(3),
  overhead: msg(4, () => LinuxContainerResources),
  resources: msg(5, () => LinuxContainerResources),
});
export const PodSandboxMetadata = spec('PodSandboxMetadata', { name: str(1), uid: str(2), namespace: str(3), attempt: u32(4) });
export const PodSandboxConfig = spec('PodSandboxConfig', {
  metadata: msg(1, () => PodSandboxMetadata),
  hostname: str(2),
  logDirectory: str(3),
  dnsConfig: msg(4, () => DNSConfig),
  portMappings: msgs(5, () => PortMapping),
  labels: map(6),
  annotations: map(7),
  linux: msg(8, () => LinuxPodSandboxConfig),
});
export const Capability = spec('Capability', { addCapabilities: strs(1), dropCapabilities: strs(2), addAmbientCapabilities: strs(3) });
export const LinuxContainerSecurityContext = spec('LinuxContainerSecurityContext', {
  capabilities: msg(1, () => Capability),
  privileged: bool(2),
  namespaceOptions: msg(3, () => NamespaceOption),
  runAsUser: msg(5, () => Int64Value),
  runAsUsername: str(6),
  readonlyRootfs: bool(7),
  supplementalGroups: i64s(8),
  noNewPrivs: bool(11),
  runAsGroup: msg(12, () => Int64Value),
  maskedPaths: strs(13),
  readonlyPaths: strs(14),
  seccomp: msg(15, () => SecurityProfile),
  apparmor: msg(16, () => SecurityProfile),
});
export const LinuxContainerConfig = spec('LinuxContainerConfig', {
  resources: msg(1, () => LinuxContainerResources),
  securityContext: msg(2, () => LinuxContainerSecurityContext),
});
export const ContainerMetadata = spec('ContainerMetadata', { name: str(1), attempt: u32(2) });
export const Device = spec('Device', { containerPath: str(1), hostPath: str(2), permissions: str(3) });
export const ContainerConfig = spec('ContainerConfig', {
  metadata: msg(1, () => ContainerMetadata),
  image: msg(2, () => ImageSpec),
  command: strs(3),
  args: strs(4),
  workingDir: str(5),
  envs: msgs(6, () => KeyValue),
  mounts: msgs(7, () => Mount),
  devices: msgs(8, () => Device),
  labels: map(9),
  annotations: map(10),
  logPath: str(11),
  stdin: bool(12),
  stdinOnce: bool(13),
  tty: bool(14),
  linux: msg(15, () => LinuxContainerConfig),
});

// ---- RuntimeService ----
export const VersionRequest = spec('VersionRequest', { version: str(1) });
export const VersionResponse = spec('VersionResponse', { version: str(1), runtimeName: str(2), runtimeVersion: str(3), runtimeApiVersion: str(4) });
export const RunPodSandboxRequest = spec('RunPodSandboxRequest', { config: msg(1, () => PodSandboxConfig), runtimeHandler: str(2) });
export const RunPodSandboxResponse = spec('RunPodSandboxResponse', { podSandboxId: str(1) });
export const PodSandboxIdRequest = spec('PodSandboxIdRequest', { podSandboxId: str(1) });
export const PodSandboxStatusRequest = spec('PodSandboxStatusRequest', { podSandboxId: str(1), verbose: bool(2) });
export const PodIP = spec('PodIP', { ip: str(1) });
export const PodSandboxNetworkStatus = spec('PodSandboxNetworkStatus', { ip: str(1), additionalIps: msgs(2, () => PodIP) });
export const LinuxPodSandboxStatus = spec('LinuxPodSandboxStatus', { namespaces: msg(1, () => spec('Namespace', { options: msg(2, () => NamespaceOption) })) });
export const PodSandboxStatus = spec('PodSandboxStatus', {
  id: str(1),
  metadata: msg(2, () => PodSandboxMetadata),
  state: enm(3),
  createdAt: i64(4),
  network: msg(5, () => PodSandboxNetworkStatus),
  linux: msg(6, () => LinuxPodSandboxStatus),
  labels: map(7),
  annotations: map(8),
  runtimeHandler: str(9),
});
export const PodSandboxStatusResponse = spec('PodSandboxStatusResponse', { status: msg(1, () => PodSandboxStatus), info: map(2) });
export const PodSandboxStateValue = spec('PodSandboxStateValue', { state: enm(1) });
export const PodSandboxFilter = spec('PodSandboxFilter', { id: str(1), state: msg(2, () => PodSandboxStateValue), labelSelector: map(3) });
export const ListPodSandboxRequest = spec('ListPodSandboxRequest', { filter: msg(1, () => PodSandboxFilter) });
export const PodSandbox = spec('PodSandbox', {
  id: str(1),
  metadata: msg(2, () => PodSandboxMetadata),
  state: enm(3),
  createdAt: i64(4),
  labels: map(5),
  annotations: map(6),
  runtimeHandler: str(7),
});
export const ListPodSandboxResponse = spec('ListPodSandboxResponse', { items: msgs(1, () => PodSandbox) });
export const CreateContainerRequest = spec('CreateContainerRequest', {
  podSandboxId: str(1),
  config: msg(2, () => ContainerConfig),
  sandboxConfig: msg(3, () => PodSandboxConfig),
});
export const CreateContainerResponse = spec('CreateContainerResponse', { containerId: str(1) });
export const ContainerIdRequest = spec('ContainerIdRequest', { containerId: str(1) });
export const StopContainerRequest = spec('StopContainerRequest', { containerId: str(1), timeout: i64(2) });
export const ContainerStateValue = spec('ContainerStateValue', { state: enm(1) });
export const ContainerFilter = spec('ContainerFilter', { id: str(1), state: msg(2, () => ContainerStateValue), podSandboxId: str(3), labelSelector: map(4) });
export const ListContainersRequest = spec('ListContainersRequest', { filter: msg(1, () => ContainerFilter) });
export const Container = spec('Container', {
  id: str(1),
  podSandboxId: str(2),
  metadata: msg(3, () => ContainerMetadata),
  image: msg(4, () => ImageSpec),
  imageRef: str(5),
  state: enm(6),
  createdAt: i64(7),
  labels: map(8),
  annotations: map(9),
  imageId: str(10),
});
export const ListContainersResponse = spec('ListContainersResponse', { containers: msgs(1, () => Container) });
export const ContainerStatusRequest = spec('ContainerStatusRequest', { containerId: str(1), verbose: bool(2) });
export const ContainerStatus = spec('ContainerStatus', {
  id: str(1),
  metadata: msg(2, () => ContainerMetadata),
  state: enm(3),
  createdAt: i64(4),
  startedAt: i64(5),
  finishedAt: i64(6),
  exitCode: i32(7),
  image: msg(8, () => ImageSpec),
  imageRef: str(9),
  reason: str(10),
  message: str(11),
  labels: map(12),
  annotations: map(13),
  mounts: msgs(14, () => Mount),
  logPath: str(15),
  imageId: str(17),
});
export const ContainerStatusResponse = spec('ContainerStatusResponse', { status: msg(1, () => ContainerStatus), info: map(2) });
export const ExecSyncRequest = spec('ExecSyncRequest', { containerId: str(1), cmd: strs(2), timeout: i64(3) });
export const ExecSyncResponse = spec('ExecSyncResponse', { stdout: { no: 1, kind: 'bytes' }, stderr: { no: 2, kind: 'bytes' }, exitCode: i32(3) });
export const ExecRequest = spec('ExecRequest', { containerId: str(1), cmd: strs(2), tty: bool(3), stdin: bool(4), stdout: bool(5), stderr: bool(6) });
export const UrlResponse = spec('UrlResponse', { url: str(1) });
// ContainerStats: the runtime's own reading of a container, where podrun cannot read its cgroup.
export const ContainerStatsRequest = spec('ContainerStatsRequest', { containerId: str(1) });
export const CpuUsage = spec('CpuUsage', { timestamp: i64(1), usageCoreNanoSeconds: msg(2, () => UInt64Value), usageNanoCores: msg(3, () => UInt64Value) });
export const MemoryUsage = spec('MemoryUsage', {
  timestamp: i64(1),
  workingSetBytes: msg(2, () => UInt64Value),
  availableBytes: msg(3, () => UInt64Value),
  usageBytes: msg(4, () => UInt64Value),
  rssBytes: msg(5, () => UInt64Value),
  pageFaults: msg(6, () => UInt64Value),
  majorPageFaults: msg(7, () => UInt64Value),
});
export const ContainerStatsSpec = spec('ContainerStats', {
  cpu: msg(2, () => CpuUsage),
  memory: msg(3, () => MemoryUsage),
  writableLayer: msg(4, () => FilesystemUsage),
});
export const ContainerStatsResponse = spec('ContainerStatsResponse', { stats: msg(1, () => ContainerStatsSpec) });
export const ContainerEventResponse = spec('ContainerEventResponse', {
  containerId: str(1),
  containerEventType: enm(2),
  createdAt: i64(3),
  podSandboxStatus: msg(4, () => PodSandboxStatus),
  containersStatuses: msgs(5, () => ContainerStatus),
});

// ---- ImageService ----
export const ImageFilter = spec('ImageFilter', { image: msg(1, () => ImageSpec) });
export const ListImagesRequest = spec('ListImagesRequest', { filter: msg(1, () => ImageFilter) });
export const Image = spec('Image', {
  id: str(1),
  repoTags: strs(2),
  repoDigests: strs(3),
  size: u64(4),
  uid: msg(5, () => Int64Value),
  username: str(6),
  spec: msg(7, () => ImageSpec),
  pinned: bool(8),
});
export const ListImagesResponse = spec('ListImagesResponse', { images: msgs(1, () => Image) });
export const ImageStatusRequest = spec('ImageStatusRequest', { image: msg(1, () => ImageSpec), verbose: bool(2) });
export const ImageStatusResponse = spec('ImageStatusResponse', { image: msg(1, () => Image), info: map(2) });
export const AuthConfig = spec('AuthConfig', {
  username: str(1),
  password: str(2),
  auth: str(3),
  serverAddress: str(4),
  identityToken: str(5),
  registryToken: str(6),
});
export const PullImageRequest = spec('PullImageRequest', {
  image: msg(1, () => ImageSpec),
  auth: msg(2, () => AuthConfig),
  sandboxConfig: msg(3, () => PodSandboxConfig),
});
export const PullImageResponse = spec('PullImageResponse', { imageRef: str(1) });
export const RemoveImageRequest = spec('RemoveImageRequest', { image: msg(1, () => ImageSpec) });
export const FilesystemUsage = spec('FilesystemUsage', {
  timestamp: i64(1),
  fsId: msg(2, () => spec('FilesystemIdentifier', { mountpoint: str(1) })),
  usedBytes: msg(3, () => UInt64Value),
  inodesUsed: msg(4, () => UInt64Value),
});
// RuntimeService.Status: only its verbose `info` is read (containerd: its CRI config as JSON under `config`).
export const StatusRequest = spec('StatusRequest', { verbose: bool(1) });
export const StatusResponse = spec('StatusResponse', { info: map(2) });
export const ImageFsInfoResponse = spec('ImageFsInfoResponse', {
  imageFilesystems: msgs(1, () => FilesystemUsage),
  containerFilesystems: msgs(2, () => FilesystemUsage),
});

/** A message's serializer and deserializer for gRPC, typed by the shape podrun gives it. */
export interface Codec<In, Out> {
  spec: MessageSpec;
  serialize(v: In): Buffer;
  deserialize(b: Buffer): Out;
}

export function codec<In, Out>(s: MessageSpec): Codec<In, Out> {
  return {
    spec: s,
    // The shapes (message-shapes.ts) are written to match the specs; the cast is the one place they meet.
    serialize: (v: In) => Buffer.from(encode(s, v as unknown as WireObject)),
    deserialize: (b: Buffer) => decode(s, b) as unknown as Out,
  };
}
