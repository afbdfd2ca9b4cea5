// The runtime.v1 messages and fields podrun sends or reads, by name only: scripts/cri-messages.mjs
// takes their numbers and types from third_party/cri-api/api.proto. A field podrun does not list
// is skipped when a runtime sends it, so a decoded message holds what podrun reads and no more.
//
// An entry is the proto message of the same name and its fields, or { from, fields } when the
// name differs: several proto messages may share one table (StopPodSandboxRequest and
// RemovePodSandboxRequest are the same bytes), and the generator refuses them unless every listed
// field has the same number and type in each. `text` names bytes fields podrun reads and writes as
// UTF-8 strings (the same bytes on the wire).

/** @type {Record<string, string[] | { from?: string[]; fields: string[]; text?: string[] }>} */
export const messages = {
  // Requests and responses with no field podrun writes or reads.
  Empty: { from: ['GetEventsRequest', 'ImageFsInfoRequest', 'StopPodSandboxResponse', 'RemovePodSandboxResponse', 'StartContainerResponse'], fields: [] },
  Int64Value: ['value'],
  UInt64Value: ['value'],
  // An environment variable. cri-api made its value bytes (k8s 1.34.x, "Restore ability to plumb binary
  // data through envvar values"); a manifest's env is text, so podrun writes it as a string.
  KeyValue: { fields: ['key', 'value'], text: ['value'] },
  ImageSpec: ['image', 'annotations', 'userSpecifiedImage', 'runtimeHandler'],
  DNSConfig: ['servers', 'searches', 'options'],
  PortMapping: ['protocol', 'containerPort', 'hostPort', 'hostIp'],
  Mount: ['containerPath', 'hostPath', 'readonly', 'selinuxRelabel', 'propagation', 'recursiveReadOnly'],
  NamespaceOption: ['network', 'pid', 'ipc', 'targetId'],
  SecurityProfile: ['profileType', 'localhostRef'],
  LinuxSandboxSecurityContext: ['namespaceOptions', 'runAsUser', 'readonlyRootfs', 'supplementalGroups', 'privileged', 'runAsGroup', 'seccomp', 'apparmor'],
  LinuxContainerResources: [
    'cpuPeriod',
    'cpuQuota',
    'cpuShares',
    'memoryLimitInBytes',
    'oomScoreAdj',
    'cpusetCpus',
    'cpusetMems',
    'unified',
    'memorySwapLimitInBytes',
  ],
  LinuxPodSandboxConfig: ['cgroupParent', 'securityContext', 'sysctls', 'overhead', 'resources'],
  PodSandboxMetadata: ['name', 'uid', 'namespace', 'attempt'],
  PodSandboxConfig: ['metadata', 'hostname', 'logDirectory', 'dnsConfig', 'portMappings', 'labels', 'annotations', 'linux'],
  Capability: ['addCapabilities', 'dropCapabilities', 'addAmbientCapabilities'],
  LinuxContainerSecurityContext: [
    'capabilities',
    'privileged',
    'namespaceOptions',
    'runAsUser',
    'runAsUsername',
    'readonlyRootfs',
    'supplementalGroups',
    'noNewPrivs',
    'runAsGroup',
    'maskedPaths',
    'readonlyPaths',
    'seccomp',
    'apparmor',
  ],
  LinuxContainerConfig: ['resources', 'securityContext'],
  ContainerMetadata: ['name', 'attempt'],
  Device: ['containerPath', 'hostPath', 'permissions'],
  ContainerConfig: [
    'metadata',
    'image',
    'command',
    'args',
    'workingDir',
    'envs',
    'mounts',
    'devices',
    'labels',
    'annotations',
    'logPath',
    'stdin',
    'stdinOnce',
    'tty',
    'linux',
  ],

  // RuntimeService
  VersionRequest: ['version'],
  VersionResponse: ['version', 'runtimeName', 'runtimeVersion', 'runtimeApiVersion'],
  RunPodSandboxRequest: ['config', 'runtimeHandler'],
  RunPodSandboxResponse: ['podSandboxId'],
  PodSandboxIdRequest: { from: ['StopPodSandboxRequest', 'RemovePodSandboxRequest'], fields: ['podSandboxId'] },
  PodSandboxStatusRequest: ['podSandboxId', 'verbose'],
  PodIP: ['ip'],
  PodSandboxNetworkStatus: ['ip', 'additionalIps'],
  Namespace: ['options'],
  LinuxPodSandboxStatus: ['namespaces'],
  PodSandboxStatus: ['id', 'metadata', 'state', 'createdAt', 'network', 'linux', 'labels', 'annotations', 'runtimeHandler'],
  PodSandboxStatusResponse: ['status', 'info'],
  PodSandboxStateValue: ['state'],
  PodSandboxFilter: ['id', 'state', 'labelSelector'],
  ListPodSandboxRequest: ['filter'],
  PodSandbox: ['id', 'metadata', 'state', 'createdAt', 'labels', 'annotations', 'runtimeHandler'],
  ListPodSandboxResponse: ['items'],
  CreateContainerRequest: ['podSandboxId', 'config', 'sandboxConfig'],
  CreateContainerResponse: ['containerId'],
  ContainerIdRequest: { from: ['StartContainerRequest', 'RemoveContainerRequest'], fields: ['containerId'] },
  StopContainerRequest: ['containerId', 'timeout'],
  ContainerStateValue: ['state'],
  ContainerFilter: ['id', 'state', 'podSandboxId', 'labelSelector'],
  ListContainersRequest: ['filter'],
  Container: ['id', 'podSandboxId', 'metadata', 'image', 'imageRef', 'state', 'createdAt', 'labels', 'annotations', 'imageId'],
  ListContainersResponse: ['containers'],
  ContainerStatusRequest: ['containerId', 'verbose'],
  ContainerStatus: [
    'id',
    'metadata',
    'state',
    'createdAt',
    'startedAt',
    'finishedAt',
    'exitCode',
    'image',
    'imageRef',
    'reason',
    'message',
    'labels',
    'annotations',
    'mounts',
    'logPath',
    'imageId',
  ],
  ContainerStatusResponse: ['status', 'info'],
  ExecSyncRequest: ['containerId', 'cmd', 'timeout'],
  ExecSyncResponse: ['stdout', 'stderr', 'exitCode'],
  ExecRequest: ['containerId', 'cmd', 'tty', 'stdin', 'stdout', 'stderr'],
  UrlResponse: { from: ['ExecResponse', 'AttachResponse', 'PortForwardResponse'], fields: ['url'] },
  // ContainerStats: the runtime's own reading of a container, where podrun cannot read its cgroup.
  ContainerStatsRequest: ['containerId'],
  CpuUsage: ['timestamp', 'usageCoreNanoSeconds', 'usageNanoCores'],
  MemoryUsage: ['timestamp', 'workingSetBytes', 'availableBytes', 'usageBytes', 'rssBytes', 'pageFaults', 'majorPageFaults'],
  ContainerStatsSpec: { from: ['ContainerStats'], fields: ['cpu', 'memory', 'writableLayer'] },
  ContainerStatsResponse: ['stats'],
  ContainerEventResponse: ['containerId', 'containerEventType', 'createdAt', 'podSandboxStatus', 'containersStatuses'],

  // ImageService
  ImageFilter: ['image'],
  ListImagesRequest: ['filter'],
  Image: ['id', 'repoTags', 'repoDigests', 'size', 'uid', 'username', 'spec', 'pinned'],
  ListImagesResponse: ['images'],
  ImageStatusRequest: ['image', 'verbose'],
  ImageStatusResponse: ['image', 'info'],
  AuthConfig: ['username', 'password', 'auth', 'serverAddress', 'identityToken', 'registryToken'],
  PullImageRequest: ['image', 'auth', 'sandboxConfig'],
  PullImageResponse: ['imageRef'],
  RemoveImageRequest: ['image'],
  FilesystemIdentifier: ['mountpoint'],
  FilesystemUsage: ['timestamp', 'fsId', 'usedBytes', 'inodesUsed'],
  // RuntimeService.Status: only its verbose `info` is read (containerd: its CRI config as JSON under `config`).
  StatusRequest: ['verbose'],
  StatusResponse: ['info'],
  ImageFsInfoResponse: ['imageFilesystems', 'containerFilesystems'],
};

// containerd's own version service, asked when a socket answers but not as CRI: it tells containerd
// with its CRI plugin off from any other gRPC server (runtime/cri/channel.ts).
/** @type {typeof messages} */
export const containerdMessages = {
  ContainerdVersionResponse: { from: ['VersionResponse'], fields: ['version', 'revision'] },
};

// The enums podrun names, with the value names shortened as podrun has always spelt them
// (SANDBOX_READY is PodSandboxState.READY): the prefix and suffix are cut from every value.
/** @type {Record<string, { from?: string; prefix?: string; suffix?: string }>} */
export const enums = {
  Protocol: {},
  MountPropagation: { prefix: 'PROPAGATION_' },
  NamespaceMode: {},
  PodSandboxState: { prefix: 'SANDBOX_' },
  ContainerState: { prefix: 'CONTAINER_' },
  ContainerEventType: { prefix: 'CONTAINER_', suffix: '_EVENT' },
  ProfileType: { from: 'SecurityProfile.ProfileType' },
};
