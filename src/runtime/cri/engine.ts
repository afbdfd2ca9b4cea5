import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Container, Pod } from '../../manifest/types.js';
import { podDns } from '../dns.js';
import { nodeResolvConf } from '../host.js';
import type { PodEngine } from '../roles.js';
import {
  ContainerStartError,
  ImageError,
  SandboxError,
  type EngineCapabilities,
  type EngineRestartOn,
  type ExecEnd,
  type ExecRef,
  type ExecResult,
  type SandboxInfo,
  type StartRequest,
} from '../runtime-types.js';
import type { PodIdentity } from '../labels.js';
import type { VolumeBacking } from '../runtime-types.js';
import { containerConfig, needsImageUser } from '../kuberuntime/container-config.js';
import { prepareContainerFiles } from '../kuberuntime/container-files.js';
import type { PodSandboxConfig } from '../kuberuntime/cri-types.js';
import { podLogDirectory, podSandboxConfig } from '../kuberuntime/sandbox-config.js';
import { criEngineError, isCriNotFound } from './engine-errors.js';
import { CriError, CriExecTimeoutError } from './errors.js';
import type { PullListener } from './images.js';
import { writeCriLog } from './log-read.js';
import { removeContainerLog } from './log-rotation.js';
import type { LogReadOptions } from './logs.js';
import { ContainerState, PodSandboxState } from './messages.js';
import { containerConfigMessage, sandboxConfigMessage } from './wire-config.js';
import { ensurePodCgroup, podCgroupParent, removePodCgroup } from './pod-cgroup.js';
import { terminationMessageFrom } from '../termination-message.js';
import { procView } from '../exec-reaper.js';
import { endCriExec } from './exec-end.js';
import { ExecStreamError } from './exec-stream-error.js';
import { criEngineFacts } from './engine-facts.js';
import { criExecAttached, criExec } from './exec.js';
import { prepareCriVolumes, removeCriPodVolumes } from './pod-volumes.js';
import { CriRuntimeView } from './engine-view.js';
import { podIPNeededAtStart } from '../env.js';

export { DEFAULT_POD_LOGS_DIR, type CriEngineOptions } from './engine-view.js';

/**
 * PodEngine on a CRI runtime (containerd, CRI-O), through runtime.v1 as the kubelet drives it:
 * a pod is a sandbox (RunPodSandbox) and containers made in it; identity is podrun's own labels
 * and annotations, so a restarted agent adopts what the runtime holds, as on Docker. What reads
 * the runtime is CriRuntimeView (engine-view.ts); what changes it is here.
 */
export class CriEngine extends CriRuntimeView implements PodEngine {
  /**
   * No restart policy: the kubelet (here the agent, `podrun run`) is a CRI runtime's only one.
   * Its endpoint is a unix socket, so its execs' processes are in this host's /proc; its events
   * come from GetContainerEvents where it has it, else from the view's fast relist.
   */
  readonly capabilities: EngineCapabilities = { restartPolicy: false, execKill: true, streaming: true, events: true, stats: true };

  terminationMessage(c: Parameters<PodEngine['terminationMessage']>[0], podUid: string): Promise<string | undefined> {
    return terminationMessageFrom(this.options.stateDir, c, podUid, (tail, out) => this.writeLogs(c.id, { follow: false, timestamps: false, tail }, out, out));
  }

  /**
   * A CRI runtime restarts nothing by itself: the kubelet is its only restart policy. Nothing to
   * take over from it: `never` for every container it holds.
   */
  async takeOverRestarts(id: string): Promise<EngineRestartOn | undefined> {
    return (await this.status(id)) ? 'never' : undefined;
  }

  async prepareVolumes(pod: Pod): Promise<Map<string, VolumeBacking>> {
    return prepareCriVolumes(this.options, pod);
  }

  private sandboxConfigOf(pod: Pod, id: PodIdentity, attempt: number, hash: string): PodSandboxConfig {
    const dns = podDns(pod.spec.dnsPolicy, pod.spec.dnsConfig, nodeResolvConf(this.options.resolvConf ?? '/etc/resolv.conf'), pod.spec.hostNetwork === true);
    const config = podSandboxConfig(pod, id, { instance: this.instance, attempt, hash, logRoot: this.logRoot, ...(dns ? { dns } : {}) });
    // The same parent in RunPodSandbox and in each CreateContainer's sandbox config: the runtime
    // puts a container's cgroup below the parent the latter names.
    return this.pidsLimited ? { ...config, linux: { ...config.linux, cgroupParent: podCgroupParent(this.instance, id.uid) } } : config;
  }

  /** --pod-max-pids: each pod gets a cgroup of its own with the limit (pod-cgroup.ts). */
  private get pidsLimited(): boolean {
    return (this.options.podPidsLimit ?? 0) > 0;
  }

  /**
   * RunPodSandbox, as the kubelet's createPodSandbox: the pod's log directory first, then the
   * sandbox (the runtime's own pause image: its sandbox_image, not podrun's --pause-image).
   */
  async createSandbox(
    pod: Pod,
    id: PodIdentity,
    attempt: number,
    hash: string,
    engineRestarts: boolean,
    _volumes?: ReadonlyMap<string, VolumeBacking>,
    signal?: AbortSignal,
  ): Promise<SandboxInfo> {
    refuseEngineRestarts(engineRestarts);
    const config = this.sandboxConfigOf(pod, id, attempt, hash);
    mkdirSync(config.logDirectory ?? '', { recursive: true, mode: 0o755 });
    const cgroupParent = config.linux?.cgroupParent;
    if (cgroupParent) {
      try {
        ensurePodCgroup(cgroupParent, this.options.podPidsLimit ?? 0);
      } catch (err) {
        throw new SandboxError(`the pod's cgroup for --pod-max-pids: ${(err as Error).message}`);
      }
    }
    signal?.throwIfAborted();
    // The containers' ImageStatus while the runtime makes the sandbox: their starts find the answer.
    for (const c of [...(pod.spec.initContainers ?? []), ...pod.spec.containers]) if (c.imagePullPolicy !== 'Always') this.presence.lookAhead(c.image);
    const sandboxId = await this.call(`run sandbox for ${id.namespace}/${id.name}`, () => this.client.runPodSandbox(sandboxConfigMessage(config))).catch(
      (err: unknown) => {
        throw new SandboxError(sandboxProblem((err as Error).message, cgroupParent));
      },
    );
    this.created(id.uid, sandboxId, 'sandbox');
    // The IP is asked now only if a start needs it; else on first use (sandbox-lookups.ts).
    return podIPNeededAtStart(pod) ? this.sandboxInfo(sandboxId, pod) : { id: sandboxId, ip: pod.spec.hostNetwork ? this.hostIP : '' };
  }

  /** The pod's IP: asked once per sandbox (fixed for its life; the relist asks for each new one too). */
  async sandboxInfo(id: string, pod: Pod): Promise<SandboxInfo> {
    if (pod.spec.hostNetwork) return { id, ip: this.hostIP };
    const known = this.ips.get(id);
    if (known) return { id, ip: known };
    const s = await this.call('sandbox status', () => this.client.podSandboxStatus(id));
    const ip = s.network?.ip ?? '';
    if (ip && s.state === PodSandboxState.READY) this.ips.set(id, ip);
    return { id, ip };
  }

  async startContainer(pod: Pod, id: PodIdentity, c: Container, o: StartRequest): Promise<string> {
    refuseEngineRestarts(o.engineRestarts);
    if (!o.imageReady) await this.ensureImage(c.image, c.imagePullPolicy, o.onPull, o.signal);
    const imageUser = needsImageUser(pod, c) ? await this.call(`image status ${c.image}`, () => this.images.user(c.image)) : undefined;
    let config;
    try {
      const files = await prepareContainerFiles(this.options, pod, c, o.volumes, o.restartCount);
      config = containerConfig(pod, id, c, {
        ...files,
        instance: this.instance,
        type: o.type,
        restartCount: o.restartCount,
        hash: o.hash,
        volumes: o.volumes,
        ...(imageUser !== undefined ? { imageUser } : {}),
        runtime: { podIP: o.sandbox.ip, hostIP: this.hostIP, nodeName: this.nodeName, oomScoreFloor: this.oomScoreFloor },
      });
    } catch (err) {
      throw new ContainerStartError((err as Error).message, 'CreateContainerConfigError');
    }
    const sandboxConfig = this.sandboxConfigOf(pod, id, 0, '');
    mkdirSync(join(sandboxConfig.logDirectory ?? '', c.name), { recursive: true, mode: 0o755 });
    o.signal?.throwIfAborted();
    const what = `${c.name} of ${id.namespace}/${id.name}`;
    const cid = await this.presence
      .create(
        c.image,
        () =>
          this.call(`create container ${what}`, () =>
            this.client.createContainer(o.sandbox.id, containerConfigMessage(config), sandboxConfigMessage(sandboxConfig)),
          ),
        () => this.ensureImage(c.image, c.imagePullPolicy, o.onPull, o.signal),
        o.signal,
      )
      .catch((err: unknown) => {
        if (err instanceof ImageError) throw err;
        throw new ContainerStartError((err as Error).message, 'CreateContainerError');
      });
    this.created(id.uid, cid, 'container');
    await this.call(`start container ${what}`, () => this.client.startContainer(cid)).catch((err: unknown) => {
      throw new ContainerStartError((err as Error).message, 'RunContainerError');
    });
    this.exitSignals?.watch(cid);
    return cid;
  }

  /** StopContainer with the grace period: the runtime sends the stop signal, then SIGKILL. Gone already is fine. */
  async stopContainer(id: string, graceSeconds: number): Promise<void> {
    await this.call('stop container', () => this.client.stopContainer(id, Math.max(0, Math.round(graceSeconds)))).catch((err: unknown) => {
      if (!isCriNotFound(err)) throw err;
    });
  }

  /**
   * RemoveContainer, and the container's log with it, as the kubelet's removeContainer
   * (removeContainerLog, kuberuntime_container.go): a runtime leaves the file. Its path is asked
   * first, while the runtime has the container; a removal that fails leaves the log for `logs -p`.
   */
  async removeContainer(id: string): Promise<void> {
    const logPath = await this.call('container status', () => this.client.containerStatus(id)).then(
      (s) => s.logPath,
      () => undefined,
    );
    await this.call('remove container', () => this.client.removeContainer(id)).catch((err: unknown) => {
      if (!isCriNotFound(err)) throw err;
    });
    this.exits.delete(id);
    if (logPath) await removeContainerLog(logPath);
  }

  /** StopPodSandbox: the runtime stops what still runs in it and tears its network down. */
  async stopSandbox(id: string): Promise<void> {
    this.ips.delete(id);
    await this.call('stop sandbox', () => this.client.stopPodSandbox(id)).catch((err: unknown) => {
      if (!isCriNotFound(err)) throw err;
    });
  }

  /**
   * StopPodSandbox, then RemovePodSandbox, as the kubelet's container GC removes one: a sandbox
   * whose pause process died without a stop (killed, OOM) still holds its network, which the
   * stop tears down and the removal alone would refuse or leak.
   */
  async removeSandbox(id: string): Promise<void> {
    await this.stopSandbox(id);
    await this.call('remove sandbox', () => this.client.removePodSandbox(id)).catch((err: unknown) => {
      if (!isCriNotFound(err)) throw err;
    });
    this.ips.delete(id);
  }

  /** The pod's files under the state directory, and its log directory (the kubelet removes both with the pod). */
  async removePodVolumes(uid: string): Promise<void> {
    await removeCriPodVolumes(this.options.stateDir, uid);
    // Whatever the limit is now: the pod may have been made under another one.
    if (/^[A-Za-z0-9-]{1,128}$/.test(uid)) removePodCgroup(podCgroupParent(this.instance, uid));
    const dirs = await this.podLogDirs(uid);
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }

  private async podLogDirs(uid: string): Promise<string[]> {
    const { readdirSync } = await import('node:fs');
    try {
      // `<ns>_<name>_<uid>`: a uid is the name's last part, and names cannot hold `_`.
      return readdirSync(this.logRoot)
        .filter((n) => n.endsWith(`_${uid}`))
        .map((n) => join(this.logRoot, n));
    } catch {
      return [];
    }
  }

  ensureImage(image: string, policy: Container['imagePullPolicy'], onPull?: PullListener, signal?: AbortSignal): Promise<void> {
    return this.presence.ensure(image, policy, () => this.call(`ensure image ${image}`, () => this.images.ensureImage(image, policy, onPull, signal)));
  }

  hasImage(image: string): Promise<boolean> {
    return this.call(`image status ${image}`, () => this.images.present(image));
  }

  imageInventory(pinned: string): ReturnType<PodEngine['imageInventory']> {
    return this.call('image inventory', () => this.images.inventory(pinned));
  }

  async removeImage(id: string): Promise<void> {
    // By id: any reference seen present may have been this image.
    this.presence.forget();
    await this.call(`remove image ${id}`, () => this.images.remove(id)).catch((err: unknown) => {
      if (!isCriNotFound(err)) throw err;
    });
  }

  exec(containerId: string, command: string[], timeoutMs: number, signal?: AbortSignal): Promise<ExecResult> {
    return criExec(this.client, containerId, command, timeoutMs, (this.procView ??= procView()), signal).catch(async (err: unknown) => {
      if (err instanceof CriExecTimeoutError) return 'timeout' as const;
      // The runtime refuses an exec in a container that is not running only in words (gRPC
      // Unknown): its state, asked after the refusal, says it as data.
      // A container the runtime does not have is NotFound, as on Docker: not an exec that never ran.
      const refused = err instanceof CriError && err.kind !== 'NotFound';
      const now = refused ? await this.containerState(containerId).catch(() => undefined) : undefined;
      if (refused && now?.state !== 'running') return { notRun: 'container-not-running' as const, detail: err.message };
      throw criEngineError(err, `exec in ${containerId}`);
    });
  }

  execAttached(
    containerId: string,
    command: string[],
    o: Parameters<PodEngine['execAttached']>[2],
    streams: Parameters<PodEngine['execAttached']>[3],
  ): Promise<number> {
    // The /proc clock before the exec is asked for: nothing it starts can be older (exec-end.ts).
    const since = (this.procView ??= procView()).now();
    return criExecAttached(this.client, containerId, command, o, streams, since).catch((err: unknown) => {
      if (err instanceof ExecStreamError) throw err;
      throw criEngineError(err, `exec in ${containerId}`);
    });
  }

  /**
   * Ends a `podrun exec` whose client went away: the runtime keeps its command running (measured
   * on containerd 1.6), so its processes are killed from the runtime's /proc (exec-end.ts).
   */
  endAbandonedExec(ref: ExecRef): Promise<ExecEnd> {
    return endCriExec(this.client, ref, (this.procView ??= procView()));
  }

  async writeLogs(id: string, o: LogReadOptions, out: NodeJS.WritableStream, err: NodeJS.WritableStream): Promise<void> {
    const s = await this.call('container status', () => this.client.containerStatus(id));
    const running = async (): Promise<boolean> => (await this.client.containerStatus(id)).state === ContainerState.RUNNING;
    await writeCriLog(s.logPath, o, out, err, running);
  }

  containerStats(id: string, oneShot: boolean, network = true): ReturnType<PodEngine['containerStats']> {
    return this.readings.stats(id, oneShot, network);
  }

  async containerDisk(id: string): ReturnType<PodEngine['containerDisk']> {
    const s = await this.client.containerStatus(id).catch(() => undefined);
    if (!s) return undefined;
    // The runtime's writable layer is its own to tell (ContainerStats); the log is podrun's file.
    const logBytes = s.logPath
      ? await (await import('node:fs/promises')).stat(s.logPath).then(
          (st) => st.size,
          () => undefined,
        )
      : undefined;
    const rwBytes = await this.readings.writableLayerBytes(id);
    return { ...(rwBytes !== undefined ? { rwBytes } : {}), ...(logBytes !== undefined ? { logBytes } : {}) };
  }

  engineFacts(): ReturnType<PodEngine['engineFacts']> {
    return this.call('version', () => criEngineFacts(this.client));
  }

  cgroupLayout(): ReturnType<PodEngine['cgroupLayout']> {
    return this.readings.cgroupLayout();
  }

  /** Each container's cgroup as its last reading found it (containerd's `/k8s.io/<id>` before one). */
  async containerCgroups(): Promise<(id: string) => string> {
    return (id) => this.readings.cgroupName(id);
  }

  /** The pod's log directory (tests and `describe` read it). */
  podLogDirectory(pod: { namespace: string; name: string; uid: string }): string {
    return podLogDirectory(this.logRoot, pod);
  }
}

/** The runtime's refusal of a sandbox, with the fix for the one a new node meets first: no pause image. */
export function sandboxProblem(message: string, cgroupParent?: string): string {
  const m = /failed to get sandbox image "([^"]+)"/.exec(message);
  if (m)
    return `the runtime's sandbox (pause) image ${m[1]} is missing and could not be pulled: pull or import it into the runtime (ctr -n k8s.io images import), or point sandbox_image in /etc/containerd/config.toml at one it has (${message})`;
  // Whatever the refusal, the cgroup parent is podrun's doing: a runtime on the systemd cgroup
  // driver wants a slice, not the cgroupfs path podrun made for the limit.
  if (cgroupParent)
    return `${message} (the sandbox's cgroup parent was ${cgroupParent}, the pod cgroup podrun makes for --pod-max-pids with the cgroupfs driver; a runtime on the systemd cgroup driver (SystemdCgroup = true) refuses it: run without --pod-max-pids there)`;
  return message;
}

/** Restarts by the runtime are asked for only of an engine whose capabilities say it has them: a CRI runtime has none. */
function refuseEngineRestarts(engineRestarts: boolean): void {
  if (engineRestarts) throw new Error('a CRI runtime restarts no container by itself: its capabilities say so (restartPolicy: false)');
}
