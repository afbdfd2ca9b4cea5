import type * as M from './messages.js';

// The calls the CRI engine makes of a runtime, as one interface: CriClient (client.ts) serves them
// over the runtime's socket, and a test's in-memory runtime (test/fakes/fake-cri-runtime.ts) serves
// them the same way, so the engine is driven in unit tests without a containerd. Each call fails
// with the client's typed errors (errors.ts), whichever serves it.

export interface SandboxFilter {
  id?: string;
  state?: { state: number };
  labelSelector?: M.Labels;
}
export interface ContainerFilter {
  id?: string;
  state?: { state: number };
  podSandboxId?: string;
  labelSelector?: M.Labels;
}
export interface ExecOptions {
  tty?: boolean;
  stdin?: boolean;
  stdout?: boolean;
  stderr?: boolean;
}

/** runtime.v1's RuntimeService and ImageService, as far as podrun uses them. */
export interface CriRuntimeService {
  /** `unix:///…`: whether the runtime runs on this host (its cgroups and /proc readable) is told from it. */
  readonly endpoint: string;
  version(): Promise<M.VersionInfo>;
  runPodSandbox(config: M.PodSandboxConfigInput, runtimeHandler?: string): Promise<string>;
  stopPodSandbox(podSandboxId: string): Promise<void>;
  removePodSandbox(podSandboxId: string): Promise<void>;
  /** Throws CriNotFoundError when the runtime has no such sandbox. */
  podSandboxStatus(podSandboxId: string): Promise<M.PodSandboxStatusInfo>;
  podSandboxStatusVerbose(podSandboxId: string): Promise<{ status: M.PodSandboxStatusInfo; info: M.Labels }>;
  listPodSandbox(filter?: SandboxFilter): Promise<M.PodSandboxItem[]>;
  createContainer(podSandboxId: string, config: M.ContainerConfigInput, sandboxConfig: M.PodSandboxConfigInput): Promise<string>;
  startContainer(containerId: string): Promise<void>;
  stopContainer(containerId: string, graceSeconds: number): Promise<void>;
  removeContainer(containerId: string): Promise<void>;
  listContainers(filter?: ContainerFilter): Promise<M.ContainerItem[]>;
  /** Throws CriNotFoundError when the runtime has no such container. */
  containerStatus(containerId: string): Promise<M.ContainerStatusInfo>;
  containerStatusVerbose(containerId: string): Promise<{ status: M.ContainerStatusInfo; info: M.Labels }>;
  containerStats(containerId: string): Promise<M.ContainerStatsInfo | undefined>;
  /** Throws CriExecTimeoutError when the runtime ended the command at its timeout. */
  execSync(containerId: string, cmd: string[], timeoutSeconds: number, marginMs?: number): Promise<M.ExecSyncResult>;
  /** The URL of the session on the runtime's streaming server. */
  exec(containerId: string, cmd: string[], o?: ExecOptions): Promise<string>;
  reopenContainerLog(containerId: string): Promise<void>;
  /** Until `signal` aborts; a runtime without the call throws CriNotSupportedError from the first read. */
  containerEvents(signal?: AbortSignal): AsyncGenerator<M.ContainerEvent>;
  listImages(image?: string): Promise<M.ImageInfo[]>;
  /** Undefined when the runtime does not have the image (not an error in the CRI). */
  imageStatus(image: string): Promise<M.ImageInfo | undefined>;
  pullImage(image: string, auth?: M.AuthConfigInput, sandboxConfig?: M.PodSandboxConfigInput): Promise<string>;
  removeImage(image: string): Promise<void>;
  imageFsInfo(): Promise<{ imageFilesystems: M.FilesystemUsageInfo[]; containerFilesystems: M.FilesystemUsageInfo[] }>;
  runtimeInfo(): Promise<M.Labels>;
  /** The connection up and the calls made so far gone out, or `timeoutMs` past. */
  sent(timeoutMs: number): Promise<void>;
  close(): void;
}
