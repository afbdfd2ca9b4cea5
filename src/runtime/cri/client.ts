// A client of a CRI runtime (containerd, CRI-O) over its unix socket: runtime.v1 RuntimeService
// and ImageService, each call with a deadline, each failure a typed error (errors.ts). The engine
// built on it decides what a call means for a pod; this module only speaks the protocol.

import { Channel } from './channel.js';
import { CriNotFoundError } from './errors.js';
import * as M from './messages.js';
import type { ContainerFilter, CriRuntimeService, ExecOptions, SandboxFilter } from './runtime-service.js';

export { socketPathOf } from './channel.js';
export type { ContainerFilter, CriRuntimeService, ExecOptions, SandboxFilter } from './runtime-service.js';

const RUNTIME = '/runtime.v1.RuntimeService/';
const IMAGE = '/runtime.v1.ImageService/';

/** The kubelet's `--runtime-request-timeout` default: 2 minutes. */
export const DEFAULT_CALL_TIMEOUT_MS = 120_000;
/** Pulls run long on slow registries; the kubelet gives them no deadline, podrun a generous one. */
export const DEFAULT_PULL_TIMEOUT_MS = 15 * 60_000;

export interface CriClientOptions {
  /** `unix:///run/containerd/containerd.sock` (a bare absolute path is taken as a unix socket too). */
  endpoint: string;
  /** `--image-service-endpoint`: the runtime endpoint when absent. */
  imageEndpoint?: string;
  timeoutMs?: number;
  pullTimeoutMs?: number;
}

const c = M.codec;
const VersionReq = c<{ version: string }, never>(M.VersionRequest);
const VersionRes = c<never, M.VersionInfo>(M.VersionResponse);
const RunSandboxReq = c<{ config: M.PodSandboxConfigInput; runtimeHandler?: string }, never>(M.RunPodSandboxRequest);
const RunSandboxRes = c<never, { podSandboxId: string }>(M.RunPodSandboxResponse);
const SandboxIdReq = c<{ podSandboxId: string }, never>(M.PodSandboxIdRequest);
const EmptyRes = c<never, Record<string, never>>(M.Empty);
const SandboxStatusReq = c<{ podSandboxId: string; verbose?: boolean }, never>(M.PodSandboxStatusRequest);
const SandboxStatusRes = c<never, { status: M.PodSandboxStatusInfo | undefined; info: M.Labels }>(M.PodSandboxStatusResponse);
const ListSandboxReq = c<{ filter?: SandboxFilter }, never>(M.ListPodSandboxRequest);
const ListSandboxRes = c<never, { items: M.PodSandboxItem[] }>(M.ListPodSandboxResponse);
const CreateReq = c<{ podSandboxId: string; config: M.ContainerConfigInput; sandboxConfig: M.PodSandboxConfigInput }, never>(M.CreateContainerRequest);
const CreateRes = c<never, { containerId: string }>(M.CreateContainerResponse);
const ContainerIdReq = c<{ containerId: string }, never>(M.ContainerIdRequest);
const StopReq = c<{ containerId: string; timeout: number }, never>(M.StopContainerRequest);
const ListReq = c<{ filter?: ContainerFilter }, never>(M.ListContainersRequest);
const ListRes = c<never, { containers: M.ContainerItem[] }>(M.ListContainersResponse);
const StatusReq = c<{ containerId: string; verbose?: boolean }, never>(M.ContainerStatusRequest);
const StatusRes = c<never, { status: M.ContainerStatusInfo | undefined; info: M.Labels }>(M.ContainerStatusResponse);
const StatsReq = c<{ containerId: string }, never>(M.ContainerStatsRequest);
const StatsRes = c<never, { stats: M.ContainerStatsInfo | undefined }>(M.ContainerStatsResponse);
const ExecSyncReq = c<{ containerId: string; cmd: string[]; timeout: number }, never>(M.ExecSyncRequest);
const ExecSyncRes = c<never, M.ExecSyncResult>(M.ExecSyncResponse);
const ExecReq = c<ExecOptions & { containerId: string; cmd: string[] }, never>(M.ExecRequest);
const UrlRes = c<never, { url: string }>(M.UrlResponse);
const EventsReq = c<Record<string, never>, never>(M.Empty);
const EventRes = c<never, M.ContainerEvent>(M.ContainerEventResponse);
const ListImagesReq = c<{ filter?: { image: { image: string } } }, never>(M.ListImagesRequest);
const ListImagesRes = c<never, { images: M.ImageInfo[] }>(M.ListImagesResponse);
const ImageStatusReq = c<{ image: { image: string }; verbose?: boolean }, never>(M.ImageStatusRequest);
const ImageStatusRes = c<never, { image: M.ImageInfo | undefined }>(M.ImageStatusResponse);
const PullReq = c<{ image: { image: string }; auth?: M.AuthConfigInput; sandboxConfig?: M.PodSandboxConfigInput }, never>(M.PullImageRequest);
const PullRes = c<never, { imageRef: string }>(M.PullImageResponse);
const RemoveImageReq = c<{ image: { image: string } }, never>(M.RemoveImageRequest);
const RuntimeStatusReq = c<{ verbose: boolean }, never>(M.StatusRequest);
const RuntimeStatusRes = c<never, { info: M.Labels }>(M.StatusResponse);
const FsInfoReq = c<Record<string, never>, never>(M.Empty);
const FsInfoRes = c<never, { imageFilesystems: M.FilesystemUsageInfo[]; containerFilesystems: M.FilesystemUsageInfo[] }>(M.ImageFsInfoResponse);

export class CriClient implements CriRuntimeService {
  readonly endpoint: string;
  readonly imageEndpoint: string;
  private readonly runtime: Channel;
  private readonly images: Channel;
  private readonly timeoutMs: number;
  private readonly pullTimeoutMs: number;

  constructor(o: CriClientOptions) {
    this.endpoint = o.endpoint;
    this.imageEndpoint = o.imageEndpoint ?? o.endpoint;
    this.runtime = new Channel(this.endpoint);
    this.images = this.imageEndpoint === this.endpoint ? this.runtime : new Channel(this.imageEndpoint);
    this.timeoutMs = o.timeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
    this.pullTimeoutMs = o.pullTimeoutMs ?? DEFAULT_PULL_TIMEOUT_MS;
  }

  private rt<In, Out>(name: string, req: M.Codec<In, unknown>, res: M.Codec<unknown, Out>, arg: In, timeoutMs = this.timeoutMs): Promise<Out> {
    return this.runtime.unary(RUNTIME + name, req, res, arg, timeoutMs);
  }

  private img<In, Out>(name: string, req: M.Codec<In, unknown>, res: M.Codec<unknown, Out>, arg: In, timeoutMs = this.timeoutMs): Promise<Out> {
    return this.images.unary(IMAGE + name, req, res, arg, timeoutMs);
  }

  /** The runtime's name and version; the first call podrun makes, so it is where a wrong endpoint shows. */
  version(): Promise<M.VersionInfo> {
    return this.rt('Version', VersionReq, VersionRes, { version: 'v1' });
  }

  async runPodSandbox(config: M.PodSandboxConfigInput, runtimeHandler = ''): Promise<string> {
    return (await this.rt('RunPodSandbox', RunSandboxReq, RunSandboxRes, { config, runtimeHandler })).podSandboxId;
  }

  async stopPodSandbox(podSandboxId: string): Promise<void> {
    await this.rt('StopPodSandbox', SandboxIdReq, EmptyRes, { podSandboxId });
  }

  async removePodSandbox(podSandboxId: string): Promise<void> {
    await this.rt('RemovePodSandbox', SandboxIdReq, EmptyRes, { podSandboxId });
  }

  async podSandboxStatus(podSandboxId: string): Promise<M.PodSandboxStatusInfo> {
    const r = await this.rt('PodSandboxStatus', SandboxStatusReq, SandboxStatusRes, { podSandboxId });
    if (!r.status) throw new CriNotFoundError(this.endpoint, 'PodSandboxStatus', `no status for sandbox ${podSandboxId}`);
    return r.status;
  }

  async listPodSandbox(filter?: SandboxFilter): Promise<M.PodSandboxItem[]> {
    return (await this.rt('ListPodSandbox', ListSandboxReq, ListSandboxRes, { filter })).items;
  }

  async createContainer(podSandboxId: string, config: M.ContainerConfigInput, sandboxConfig: M.PodSandboxConfigInput): Promise<string> {
    return (await this.rt('CreateContainer', CreateReq, CreateRes, { podSandboxId, config, sandboxConfig })).containerId;
  }

  async startContainer(containerId: string): Promise<void> {
    await this.rt('StartContainer', ContainerIdReq, EmptyRes, { containerId });
  }

  /** Stops with a grace period in seconds; the deadline covers the grace as well as the call. */
  async stopContainer(containerId: string, graceSeconds: number): Promise<void> {
    await this.rt('StopContainer', StopReq, EmptyRes, { containerId, timeout: graceSeconds }, this.timeoutMs + graceSeconds * 1000);
  }

  async removeContainer(containerId: string): Promise<void> {
    await this.rt('RemoveContainer', ContainerIdReq, EmptyRes, { containerId });
  }

  async listContainers(filter?: ContainerFilter): Promise<M.ContainerItem[]> {
    return (await this.rt('ListContainers', ListReq, ListRes, { filter })).containers;
  }

  async containerStatus(containerId: string): Promise<M.ContainerStatusInfo> {
    const r = await this.rt('ContainerStatus', StatusReq, StatusRes, { containerId });
    if (!r.status) throw new CriNotFoundError(this.endpoint, 'ContainerStatus', `no status for container ${containerId}`);
    return r.status;
  }

  /** The status with the runtime's verbose `info` map (containerd: its pid and OCI spec, as JSON under `info`). */
  async containerStatusVerbose(containerId: string): Promise<{ status: M.ContainerStatusInfo; info: M.Labels }> {
    const r = await this.rt('ContainerStatus', StatusReq, StatusRes, { containerId, verbose: true });
    if (!r.status) throw new CriNotFoundError(this.endpoint, 'ContainerStatus', `no status for container ${containerId}`);
    return { status: r.status, info: r.info };
  }

  async podSandboxStatusVerbose(podSandboxId: string): Promise<{ status: M.PodSandboxStatusInfo; info: M.Labels }> {
    const r = await this.rt('PodSandboxStatus', SandboxStatusReq, SandboxStatusRes, { podSandboxId, verbose: true });
    if (!r.status) throw new CriNotFoundError(this.endpoint, 'PodSandboxStatus', `no status for sandbox ${podSandboxId}`);
    return { status: r.status, info: r.info };
  }

  /** The runtime's own reading of a container's CPU, memory and writable layer. */
  async containerStats(containerId: string): Promise<M.ContainerStatsInfo | undefined> {
    return (await this.rt('ContainerStats', StatsReq, StatsRes, { containerId })).stats;
  }

  /**
   * Runs `cmd` in the container and waits for it; the runtime ends it after `timeoutSeconds`
   * (0: no limit from the runtime) and the call throws CriExecTimeoutError. The call's deadline is
   * the timeout plus `marginMs` (the kubelet's is the timeout plus its request timeout; podrun ends
   * the command itself at the timeout: exec.ts).
   */
  execSync(containerId: string, cmd: string[], timeoutSeconds: number, marginMs = this.timeoutMs): Promise<M.ExecSyncResult> {
    return this.rt('ExecSync', ExecSyncReq, ExecSyncRes, { containerId, cmd, timeout: timeoutSeconds }, marginMs + timeoutSeconds * 1000);
  }

  /** The URL on the runtime's streaming server where the exec session is served (kubectl exec -it). */
  async exec(containerId: string, cmd: string[], o: ExecOptions = { stdout: true, stderr: true }): Promise<string> {
    return (await this.rt('Exec', ExecReq, UrlRes, { containerId, cmd, ...o })).url;
  }

  async reopenContainerLog(containerId: string): Promise<void> {
    await this.rt('ReopenContainerLog', ContainerIdReq, EmptyRes, { containerId });
  }

  /**
   * The runtime's container events, for as long as the caller reads (no deadline: a watch lives as
   * long as the agent; the relist covers a runtime that goes quiet). A runtime without the call
   * (containerd before 1.7) throws CriNotSupportedError from the first read.
   */
  containerEvents(signal?: AbortSignal): AsyncGenerator<M.ContainerEvent> {
    return this.runtime.serverStream(RUNTIME + 'GetContainerEvents', EventsReq, EventRes, {}, signal);
  }

  async listImages(image?: string): Promise<M.ImageInfo[]> {
    return (await this.img('ListImages', ListImagesReq, ListImagesRes, { filter: image ? { image: { image } } : undefined })).images;
  }

  /** The image's record, or undefined when the runtime does not have it (not an error in the CRI). */
  async imageStatus(image: string): Promise<M.ImageInfo | undefined> {
    return (await this.img('ImageStatus', ImageStatusReq, ImageStatusRes, { image: { image } })).image;
  }

  /** Pulls with the node's credentials for the registry; returns the runtime's reference to the image. */
  async pullImage(image: string, auth?: M.AuthConfigInput, sandboxConfig?: M.PodSandboxConfigInput): Promise<string> {
    // containerd parses server_address as a URL and compares its host with the image's: a bare
    // `host:port` (a config.json key) fails to parse there, so it gets a scheme.
    const a = auth?.serverAddress && !/^[a-z][a-z0-9+.-]*:\/\//i.test(auth.serverAddress) ? { ...auth, serverAddress: `https://${auth.serverAddress}` } : auth;
    return (await this.img('PullImage', PullReq, PullRes, { image: { image }, auth: a, sandboxConfig }, this.pullTimeoutMs)).imageRef;
  }

  async removeImage(image: string): Promise<void> {
    await this.img('RemoveImage', RemoveImageReq, EmptyRes, { image: { image } });
  }

  imageFsInfo(): Promise<{ imageFilesystems: M.FilesystemUsageInfo[]; containerFilesystems: M.FilesystemUsageInfo[] }> {
    return this.img('ImageFsInfo', FsInfoReq, FsInfoRes, {});
  }

  /** The runtime's verbose Status `info` (containerd: `config`, its CRI section as JSON, with `sandboxImage`). */
  async runtimeInfo(): Promise<M.Labels> {
    return (await this.rt('Status', RuntimeStatusReq, RuntimeStatusRes, { verbose: true })).info;
  }

  /** The runtime's connection up and the calls made so far on their way (Channel.sent), or `timeoutMs` past. */
  sent(timeoutMs: number): Promise<void> {
    return this.runtime.sent(timeoutMs);
  }

  close(): void {
    this.runtime.close();
    if (this.images !== this.runtime) this.images.close();
  }
}
