import type { StartReason, StepResult } from '../base/reasons.js';
import { containerHash, sandboxHash } from '../manifest/hash.js';
import { appliedSetOf } from '../sources/origin-names.js';
import type { Container, DesiredPod } from '../manifest/types.js';
import { runHook } from '../probe/handlers.js';
import { isActive, type ObservedPod } from '../runtime/observed.js';
import { ContainerStartError, ImageError, SandboxError, type SandboxInfo } from '../runtime/runtime-types.js';
import type { PodEngine } from '../runtime/roles.js';
import { Cancelled } from '../runtime/slots.js';
import { identityOf } from '../runtime/labels.js';
import { deletionPlan } from './deletion-plan.js';
import { fieldPathOf, killContainer, removePod, specOf, stopPod, type EventSink } from './lifecycle.js';
import type { PodActions } from './plan.js';

export interface SyncOptions {
  /** Label that lets `apply --prune` find the pods of the same set later. */
  applySet?: string;
  /**
   * When no agent supervises the pod, the engine's restart policy (mapped from restartPolicy)
   * keeps it alive; an agent sets `no` and restarts containers itself with backoff.
   */
  engineRestarts: boolean;
  events?: EventSink;
  /**
   * Aborted when the pod is to be deleted: nothing more is made (checked between steps, and every
   * wait for a pull or an engine slot gives up: `Cancelled`); a postStart hook still running is let go.
   */
  signal?: AbortSignal;
  /** A container's postStart hook began (true) or ended: until it ends the container is not yet Running. */
  postStart?: (containerId: string, running: boolean) => void;
}

const POST_START_TIMEOUT_MS = 120_000;

/**
 * A container (or, with no container, the sandbox) the engine would not create or start: the
 * caller backs off. The step's result, typed (`result.reason` is the kubelet's), with the engine's
 * error as its `cause`: wrapped once, never read back from a message.
 */
export class SyncStepFailure extends Error {
  readonly result: StepResult;
  constructor(
    readonly container: string | undefined,
    readonly reason: StartReason | 'FailedCreatePodSandBox',
    readonly detail: string,
    cause: Error,
  ) {
    super(`${reason}: ${detail}`, { cause });
    this.name = 'SyncStepFailure';
    this.result = { action: container ? 'StartContainer' : 'CreatePodSandbox', ...(container ? { container } : {}), reason, message: detail };
  }
}

/** A container could not be started because its image could not be had: the caller backs off. */
export class ContainerImageError extends Error {
  readonly result: StepResult;
  constructor(
    readonly container: string,
    readonly imageError: ImageError,
  ) {
    super(imageError.message, { cause: imageError });
    this.name = 'ContainerImageError';
    this.result = { action: 'PullImage', container, reason: imageError.reason, message: imageError.message };
  }
}

/** The kubelet's image events: Pulling, then Pulled with what it cost. */
function pullEvents(events: EventSink | undefined, image: string, fp: string | undefined): (phase: 'pulling' | 'pulled', message?: string) => void {
  return (phase, message) => {
    if (phase === 'pulling') events?.('Normal', 'Pulling', `Pulling image "${image}"`, fp);
    else events?.('Normal', 'Pulled', `Successfully pulled image "${image}"${message ? ` ${message}` : ''}`, fp);
  };
}

function imageFailed(events: EventSink | undefined, image: string, err: ImageError, fp: string | undefined): void {
  events?.('Warning', 'Failed', `Failed to pull image "${image}": ${err.message}`, fp);
  events?.('Warning', 'Failed', `Error: ${err.reason}`, fp);
}

function findContainer(d: DesiredPod, name: string): Container {
  const c = specOf(d.pod, name);
  if (!c) throw new Error(`pod ${d.key} has no container ${name}`);
  return c;
}

/**
 * Carries out a removal the plan decided (`removePod`: the pod is no longer declared): its
 * containers stopped with their grace periods, everything removed, its directory last. True when
 * the whole pod went; false when the engine had more of it than `observed` (the directory stays).
 */
export async function executeRemoval(rt: PodEngine, observed: ObservedPod, actions: PodActions, events?: EventSink): Promise<boolean> {
  if (!actions.removePod) return false;
  return removePod(rt, observed, actions.deletion ?? deletionPlan(observed), events);
}

/** The I/O half of a pod sync: carries out what computePodActions decided, in the kubelet's order. */
export async function executePodActions(rt: PodEngine, d: DesiredPod, observed: ObservedPod | undefined, actions: PodActions, o: SyncOptions): Promise<void> {
  if (actions.removePod) {
    if (observed) await executeRemoval(rt, observed, actions, o.events);
    return;
  }
  const pod = d.pod;
  // An applied pod is labelled with the file it was applied from, and its set (which says who owns it).
  const id = identityOf(pod, d.origin.shown ?? d.origin.source, o.applySet ?? appliedSetOf(d.origin.source));
  const grace = pod.spec.terminationGracePeriodSeconds ?? 30;
  const events = o.events;
  const podIP = pod.spec.hostNetwork ? rt.hostIP : undefined;
  const signal = o.signal;
  // Between steps: a pod no longer wanted goes no further (the kubelet's pod worker cancels the
  // sync's context when the pod is to terminate; pod_workers.go UpdatePod).
  const step = (): void => {
    if (signal?.aborted) throw new Cancelled(`pod ${d.key} is no longer wanted`);
  };

  // 0. An update's images, before anything running goes (the plan names them); an image two of
  // them use is had once.
  const ready = new Set(actions.imagesFirst);
  const had = new Set<string>();
  for (const name of ready) {
    const c = findContainer(d, name);
    const image = `${c.image}\0${c.imagePullPolicy ?? ''}`;
    if (had.has(image)) continue;
    had.add(image);
    const fp = fieldPathOf(pod, c.name);
    step();
    try {
      await rt.ensureImage(c.image, c.imagePullPolicy, pullEvents(events, c.image, fp), signal);
    } catch (err) {
      if (!(err instanceof ImageError)) throw err;
      imageFailed(events, c.image, err, fp);
      throw new ContainerImageError(c.name, err);
    }
  }

  // 1. Kill what must go.
  step();
  if (actions.killPod && observed) {
    if (actions.createSandbox && actions.reason)
      events?.('Normal', 'SandboxChanged', `Pod sandbox changed (${actions.reason}), it will be killed and re-created.`);
    await stopPod(rt, observed, deletionPlan(observed), events);
  }
  if (actions.containersToKill.length) {
    const current = observed?.sandboxes[0];
    const host = podIP ?? (current && isActive(current) ? (await rt.sandboxInfo(current.id, pod)).ip : '127.0.0.1');
    await Promise.all(
      actions.containersToKill.map(async (k) => {
        const c = observed?.containers.find((x) => x.id === k.id);
        if (!c) return;
        if (c.state === 'created') return rt.removeContainer(k.id);
        const fp = fieldPathOf(pod, c.name);
        // The running instance was made from the old spec: its preStop (its own label) is the one to run.
        await killContainer(rt, c, c.spec ?? specOf(observed?.spec, c.name), k.graceSeconds ?? grace, {
          defaultHost: host,
          reason: k.reason,
          ...(events ? { events } : {}),
          ...(fp ? { fieldPath: fp } : {}),
        });
      }),
    );
  }
  if (actions.containersToStart.length === 0 && !actions.createSandbox) return;

  // 2. The sandbox, new or current.
  step();
  const volumes = await rt.prepareVolumes(pod);
  let sandbox: SandboxInfo;
  if (actions.createSandbox) {
    step();
    try {
      sandbox = await rt.createSandbox(pod, id, actions.sandboxAttempt, sandboxHash(pod), o.engineRestarts, volumes, signal);
    } catch (err) {
      if (!(err instanceof SandboxError)) throw err;
      events?.('Warning', 'FailedCreatePodSandBox', `Failed to create pod sandbox: ${err.message}`);
      throw new SyncStepFailure(undefined, 'FailedCreatePodSandBox', err.message, err);
    }
  } else {
    const current = observed?.sandboxes[0];
    if (!current) throw new Error(`pod ${d.key} has no sandbox to start containers in`);
    sandbox = await rt.sandboxInfo(current.id, pod);
  }
  const defaultHost = podIP ?? (sandbox.ip || '127.0.0.1');

  // 3. Containers, in spec order (init containers come one at a time from the plan).
  for (const s of actions.containersToStart) {
    const c = findContainer(d, s.name);
    const fp = fieldPathOf(pod, c.name);
    let containerId: string;
    step();
    try {
      containerId = await rt.startContainer(pod, id, c, {
        type: s.type,
        restartCount: s.restartCount,
        hash: containerHash(pod, c),
        sandbox,
        volumes,
        engineRestarts: o.engineRestarts,
        onPull: pullEvents(events, c.image, fp),
        ...(ready.has(c.name) ? { imageReady: true } : {}),
        ...(signal ? { signal } : {}),
      });
    } catch (err) {
      if (err instanceof ImageError) {
        imageFailed(events, c.image, err, fp);
        throw new ContainerImageError(c.name, err);
      }
      events?.('Warning', 'Failed', `Error: ${(err as Error).message}`, fp);
      if (err instanceof ContainerStartError) throw new SyncStepFailure(c.name, err.reason, err.message, err);
      throw err;
    }
    events?.('Normal', 'Created', `Created container ${c.name}`, fp);
    events?.('Normal', 'Started', `Started container ${c.name}`, fp);
    const postStart = c.lifecycle?.postStart;
    if (postStart) {
      // The kubelet gives postStart no deadline; podrun bounds it so a hung hook cannot stall the pod forever.
      o.postStart?.(containerId, true);
      const r = await runHook(postStart, {
        containerId,
        container: c,
        defaultHost,
        timeoutMs: POST_START_TIMEOUT_MS,
        exec: (cid, cmd, t, sig) => rt.exec(cid, cmd, t, sig),
        ...(o.signal ? { signal: o.signal } : {}),
      })
        .catch((e: unknown) => ({ ok: false as const, message: (e as Error).message }))
        .finally(() => o.postStart?.(containerId, false));
      // The pod is being deleted: its deletion stops this container, with its grace period.
      if (o.signal?.aborted) return;
      if (!r.ok) {
        // As the kubelet: a failed postStart kills the container, which then restarts by policy.
        events?.('Warning', 'FailedPostStartHook', `PostStart hook for container ${c.name} failed: ${r.message}`, fp);
        await rt.stopContainer(containerId, grace);
      }
    }
  }
}

/**
 * Removes dead instances beyond the newest `keep` per container name, and sandboxes that are
 * neither the newest nor running: the kubelet's MaxPerPodContainer, applied right after a sync.
 */
export async function pruneDeadInstances(rt: PodEngine, observed: ObservedPod, keep = 1): Promise<number> {
  const doomed: string[] = [];
  const seen = new Map<string, number>();
  for (const c of observed.containers) {
    if (isActive(c) || c.state === 'created') continue;
    const n = (seen.get(c.name) ?? 0) + 1;
    seen.set(c.name, n);
    if (n > keep) doomed.push(c.id);
  }
  const sandboxes = observed.sandboxes.slice(1).filter((s) => !isActive(s));
  await Promise.all([...doomed.map((id) => rt.removeContainer(id)), ...sandboxes.map((s) => rt.removeSandbox(s.id))]);
  return doomed.length + sandboxes.length;
}
