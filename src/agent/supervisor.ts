import type { Logger } from '../log/logger.js';
import { containerHash } from '../manifest/hash.js';
import type { DesiredPod, Pod } from '../manifest/types.js';
import type { PodCache } from '../pleg/cache.js';
import { ProbeManager, type ProbeEvent, type ProbeTarget } from '../probe/manager.js';
import type { ProbedContainer, ProbeResultLabel } from '../metrics/probe-metrics.js';
import { Backoff, type BackoffPolicy } from '../reconcile/backoff.js';
import { fieldPathOf, specOf, type EventSink } from '../reconcile/lifecycle.js';
import { backoffKeys, gateStarts, imageKey, newestExited, sandboxKey } from '../reconcile/gate.js';
import { computePodActions, hasActions } from '../reconcile/plan.js';
import { ContainerImageError, ContainerStartFailure, executePodActions, pruneDeadInstances } from '../reconcile/sync.js';
import { isActive, latestByName, type ObservedPod } from '../runtime/observed.js';
import type { PodEngine } from '../runtime/roles.js';
import { EventRecorder, type PodRef } from '../status/events.js';
import { containerDetails } from '../status/details.js';
import { podStatus, type PodStatusSummary, type StatusInputs } from '../status/pod-status.js';
import { settled } from '../reconcile/settled.js';
import { deletionUnderway } from '../reconcile/terminating.js';
import { Adoption } from './adoption.js';
import { dropChangedWaiting, newPodRecord, recordSize, trimRecord, type PodRecord } from './pod-record.js';
import { noteHeld } from './held-reasons.js';
import { isImageReason } from '../base/reasons.js';
import { isPodrunBug } from '../runtime/runtime-types.js';

import { notReadyReason, type Readiness } from '../reconcile/rollback.js';

/**
 * What the agent keeps per pod beyond the engine's state: crash and image backoff, waiting
 * reasons, probe workers, events, and the inspect details that status needs. `sync` is one pod
 * worker's turn: probe kills, the plan, backoff, the actions.
 */
/** For metrics: what the supervisor started, failed to start and restarted, and every probe run. */
export interface SupervisorObserver {
  started?(type: 'sandbox' | 'init' | 'app'): void;
  startFailed?(type: 'sandbox' | 'init' | 'app', reason: string): void;
  restarted?(namespace: string, pod: string, container: string): void;
  probed?(where: ProbedContainer, kind: string, result: ProbeResultLabel, seconds: number): void;
  /** The pod is gone: its probe series go too. */
  probesGone?(uid: string): void;
}

/** While someone else deletes a pod, the next look comes this soon. */
const DELETION_LOOK_MS = 500;

/** After a bug of podrun's (a TypeError in a step), the turn is tried again this soon. */
const BUG_RETRY_MS = 5_000;

/** After a failed pull, the next look (which reports ImagePullBackOff) comes this soon. */
const IMAGE_BACKOFF_LOOK_MS = 1000;

export class PodSupervisor {
  readonly events = new EventRecorder();
  readonly probes: ProbeManager;
  private readonly crash: Backoff;
  private readonly imagePulls: Backoff;
  /** Creates and starts the engine refused, per container (or sandbox) and spec hash. */
  private readonly startFailures: Backoff;
  /** One record per pod: everything kept about it beyond the engine's state (pod-record.ts). */
  private readonly records = new Map<string, PodRecord>();
  private readonly adoption: Adoption;
  /** Pods whose sync waited for someone else's deletion of them. */
  private readonly awaitedDeletion = new Set<string>();

  constructor(
    private readonly rt: PodEngine,
    private readonly cache: PodCache,
    backoff: BackoffPolicy,
    private readonly wake: (uid: string, afterMs?: number) => void,
    private readonly log: Logger,
    private readonly keepDead = 1,
    private readonly onPruned: (count: number) => void = () => undefined,
    private readonly observer: SupervisorObserver = {},
  ) {
    this.adoption = new Adoption(rt, cache, log);
    this.crash = new Backoff(backoff);
    this.imagePulls = new Backoff(backoff);
    this.startFailures = new Backoff(backoff);
    const probed = observer.probed;
    this.probes = new ProbeManager(
      (id, cmd, t) => rt.exec(id, cmd, t),
      (e) => this.onProbe(e),
      probed ? (t, kind, result, seconds) => probed({ uid: t.uid, namespace: t.namespace, pod: t.pod, container: t.container.name }, kind, result, seconds) : undefined,
      log,
    );
  }

  /** The pod's record, made on its first sync. */
  private rec(uid: string): PodRecord {
    let r = this.records.get(uid);
    if (!r) {
      r = newPodRecord();
      this.records.set(uid, r);
    }
    return r;
  }

  /** The pod's record for a read: a pod with none (not synced yet) reads as an empty one, which is not kept. */
  private peek(uid: string): PodRecord {
    return this.records.get(uid) ?? newPodRecord();
  }

  private ref(d: { uid: string; pod: { metadata: { name: string; namespace?: string } } }): PodRef {
    return { uid: d.uid, name: d.pod.metadata.name, namespace: d.pod.metadata.namespace ?? 'default' };
  }

  private sink(ref: PodRef): EventSink {
    return (type, reason, message, fieldPath) => this.events.record(ref, type, reason, message, fieldPath);
  }

  private onProbe(e: ProbeEvent): void {
    const o = this.cache.pod(e.uid);
    if (o && !e.ok) {
      const kind = e.kind === 'liveness' ? 'Liveness' : e.kind === 'readiness' ? 'Readiness' : 'Startup';
      this.events.record({ uid: o.uid, name: o.name, namespace: o.namespace }, 'Warning', 'Unhealthy', `${kind} probe failed: ${e.message}`, fieldPathOf(o.spec, e.container));
      // As the kubelet's prober ("Probe failed"): every failure, with what the probe said.
      this.log.warn(`pod ${o.namespace}/${o.name}: container ${e.container} ${e.kind} probe failed: ${e.message}`, { pod: `${o.namespace}/${o.name}`, container: e.container, probe: e.kind });
    }
    this.wake(e.uid);
  }

  stop(): void {
    this.probes.stop();
  }

  /** Whether this agent has worked on the pod (it has a record). */
  known(uid: string): boolean {
    return this.records.has(uid);
  }

  /** The pod is gone: everything kept about it goes, in one place. */
  forget(uid: string): void {
    this.probes.removePod(uid);
    this.observer.probesGone?.(uid);
    this.crash.forgetPod(uid);
    this.imagePulls.forgetPod(uid);
    this.startFailures.forgetPod(uid);
    this.events.forget(uid);
    this.records.delete(uid);
    this.awaitedDeletion.delete(uid);
  }

  /**
   * Back-off of what the pod's spec no longer has (an earlier hash or image of a container) goes:
   * the kubelet's back-off restarts with a new hash, and 10,000 updates must not leave 10,000 keys.
   * So does the waiting reason of a container whose spec changed: it was about the version before
   * (an image that could not be pulled is not the new image's). Once per version of the pod.
   */
  private retainBackoff(d: DesiredPod): void {
    const r = this.rec(d.uid);
    const before = r.keysOf;
    if (before === d.pod) return;
    const keys = backoffKeys(d);
    for (const table of [this.crash, this.imagePulls, this.startFailures]) table.retainPod(d.uid, keys);
    dropChangedWaiting(r, before, d.pod);
  }

  /** Entries kept per pod, by kind: what must return to nothing once a pod is gone. */
  stateSize(): Record<string, number> {
    return {
      records: [...this.records.values()].reduce((n, r) => n + recordSize(r), 0),
      crashBackoff: this.crash.size,
      imageBackoff: this.imagePulls.size,
      startBackoff: this.startFailures.size,
      events: this.events.podCount(),
      probes: this.probes.size,
      awaitedDeletions: this.awaitedDeletion.size,
    };
  }

  /** The pod's IP (on the host network, the node's), read once per sandbox; undefined without a running one. */
  async podIP(pod: Pod | undefined, o: ObservedPod | undefined): Promise<string | undefined> {
    const sandbox = o?.sandboxes[0];
    if (!pod || !o || !sandbox || !isActive(sandbox)) return undefined;
    const r = this.records.get(o.uid);
    if (r?.sandbox?.id === sandbox.id) return r.sandbox.ip || undefined;
    const ip = (await this.rt.sandboxInfo(sandbox.id, pod).catch(() => undefined))?.ip;
    if (r && ip !== undefined) r.sandbox = { id: sandbox.id, ip };
    return ip || undefined;
  }

  /** Where hooks and probes go when they name no host: the pod IP, which on the host network is the node IP. */
  private async sandboxAddress(pod: Pod, o: ObservedPod): Promise<string> {
    if (pod.spec.hostNetwork) return this.rt.hostIP;
    return (await this.podIP(pod, o)) ?? '127.0.0.1';
  }

  /** Starts or stops probe workers to match the pod's running containers. */
  private async updateProbes(d: DesiredPod, o: ObservedPod | undefined): Promise<void> {
    if (!o) return this.probes.removePod(d.uid);
    const host = await this.sandboxAddress(d.pod, o);
    const details = this.rec(d.uid).details;
    const targets: ProbeTarget[] = [];
    for (const c of latestByName(o).values()) {
      const spec = specOf(d.pod, c.name);
      if (!spec || c.state !== 'running') continue;
      if (!spec.livenessProbe && !spec.readinessProbe && !spec.startupProbe) continue;
      // initialDelaySeconds counts from the container's start, which only an inspect knows (once).
      if (!this.probes.state(c.id) && !details.get(c.id)?.startedAt) await containerDetails(this.rt, o, details);
      const startedAt = Date.parse(details.get(c.id)?.startedAt ?? '');
      targets.push({ uid: d.uid, namespace: o.namespace, pod: o.name, container: spec, containerId: c.id, defaultHost: host, ...(Number.isFinite(startedAt) ? { startedAt } : {}) });
    }
    this.probes.sync(d.uid, targets);
  }

  /**
   * One turn of the pod's worker. `signal` is aborted when the pod is to be deleted: the turn then
   * makes nothing more (the executor stops at its next step) and ends, for the deletion to follow.
   */
  async sync(d: DesiredPod, signal?: AbortSignal): Promise<number | undefined> {
    const uid = d.uid;
    // `podrun delete` is removing it: the pod is made anew once that is done, not patched meanwhile,
    // and from the engine as the deletion left it (the cache may not have heard of all of it yet).
    if (deletionUnderway(this.rt.options.stateDir, uid, Date.now())) {
      this.awaitedDeletion.add(uid);
      return DELETION_LOOK_MS;
    }
    if (this.awaitedDeletion.delete(uid)) await this.cache.refreshPod(uid);
    const r = this.rec(uid);
    this.retainBackoff(d);
    const cached = this.cache.pod(uid);
    if (cached) await this.adoption.adopt(r, cached);
    // A dead container the engine is about to restart itself (its policy could not be taken
    // over, as on Podman) counts as restarting: podrun restarting it too would make two.
    const engineRestarting = cached ? [...cached.sandboxes, ...cached.containers].filter((c) => this.adoption.engineRestarts(r, c)) : [];
    const o = cached && engineRestarting.length ? { ...cached, containers: cached.containers.map((c) => (engineRestarting.includes(c) ? { ...c, state: 'restarting' as const } : c)), sandboxes: cached.sandboxes.map((c) => (engineRestarting.includes(c) ? { ...c, state: 'restarting' as const } : c)) } : cached;
    const actions = computePodActions(d, o, {
      probeFailure: (id) => {
        const failed = this.probes.state(id)?.failed;
        return failed && failed.kind !== 'readiness' ? { kind: failed.kind, ...(failed.graceSeconds !== undefined ? { graceSeconds: failed.graceSeconds } : {}) } : undefined;
      },
      // No worker yet (the container has just started): started only if it has no startup probe
      // to pass, as the kubelet waits for a startup result it has not got.
      started: (id) => {
        const state = this.probes.state(id);
        if (state) return state.started;
        const name = o?.containers.find((c) => c.id === id)?.name;
        return !(name && specOf(d.pod, name)?.startupProbe);
      },
    });
    for (const k of actions.containersToKill) {
      if (k.probe) this.log.warn(`pod ${d.key}: container ${k.name} ${k.reason}`, { pod: d.key, container: k.name });
    }
    if (!hasActions(actions)) {
      await this.updateProbes(d, o);
      this.clearWaiting(r, o);
      trimRecord(r, o);
      // Look again shortly: the engine restarts it, or its time runs out and podrun does.
      return engineRestarting.length ? 1000 : undefined;
    }

    // Back-off is the gate's decision (pure); what it needs from the engine is gathered first.
    const now = Date.now();
    const finished = new Map<string, number>();
    for (const st of actions.containersToStart) {
      const prev = o ? newestExited(o, st.name) : undefined;
      if (prev) finished.set(prev.id, this.cache.finishedAt(prev.id) ?? (await this.rt.finishedAt(prev.id)) ?? now);
    }
    const gate = gateStarts(d, o, actions, {
      crash: this.crash,
      imagePulls: this.imagePulls,
      refused: this.startFailures,
      waitingOnImage: (name) => isImageReason(r.waiting.get(name)?.reason),
      finishedAt: (id) => finished.get(id),
    }, now);
    let wait = gate.waitMs;
    noteHeld(d, r, gate.held, (type, message, name) => this.events.record(this.ref(d), type, 'BackOff', message, fieldPathOf(d.pod, name)));
    const waitedFor = new Map<string, number>();
    for (const r of gate.restarts) {
      if (r.waitedMs) waitedFor.set(r.name, r.waitedMs);
      this.crash.restarted(r.key, now);
    }
    const allowed = gate.actions.containersToStart;
    const sandboxKeyOf = sandboxKey(d);
    const toRun = gate.actions;
    if (!hasActions(toRun)) return wait;
    if (toRun.createSandbox) this.log.info(`pod ${d.key}: ${o ? `recreating (${actions.reason ?? ''})` : 'creating'}`, { pod: d.key });
    else if (toRun.killPod) this.log.info(`pod ${d.key}: stopping the pod (${actions.reason ?? ''})`, { pod: d.key });
    else {
      for (const s of allowed) {
        const waited = waitedFor.get(s.name);
        this.log.info(`pod ${d.key}: starting ${s.type === 'init' ? 'init container' : 'container'} ${s.name} (${s.reason})${waited ? ` after a back-off of ${Math.round(waited / 1000)}s` : ''}`, { pod: d.key, container: s.name });
      }
    }
    if (signal?.aborted) return undefined;
    const sync = signal ?? new AbortController().signal;
    r.inProgress = sync;
    try {
      await executePodActions(this.rt, d, o, toRun, {
        engineRestarts: false,
        events: this.sink(this.ref(d)),
        signal: sync,
        postStart: (id, running) => (running ? r.postStarting.add(id) : r.postStarting.delete(id)),
      });
      if (toRun.createSandbox) this.observer.started?.('sandbox');
      for (const s of allowed) this.observer.started?.(s.type);
      for (const r of gate.restarts) this.observer.restarted?.(d.pod.metadata.namespace ?? 'default', d.pod.metadata.name, r.name);
      for (const s of allowed) {
        r.waiting.delete(s.name);
        const spec = specOf(d.pod, s.name);
        if (spec) this.startFailures.forget(Backoff.key(uid, s.name, containerHash(d.pod, spec)));
      }
      if (toRun.createSandbox) this.startFailures.forget(sandboxKeyOf);
    } catch (err) {
      if (sync.aborted) {
        // Cancelled (or failed on the way) because the pod is to be deleted: no back-off, no
        // waiting reason; the deletion that comes next removes whatever was made.
      } else if (err instanceof ContainerStartFailure) {
        // As the kubelet: CreateContainerError, RunContainerError and a refused sandbox back off
        // like a crash loop (10 s doubling to 5 min), so a bad mount or a missing binary costs
        // the engine one attempt per back-off, not a hot loop.
        const spec = err.container ? specOf(d.pod, err.container) : undefined;
        const key = err.container && spec ? Backoff.key(uid, err.container, containerHash(d.pod, spec)) : sandboxKeyOf;
        const backoffMs = this.startFailures.restarted(key, Date.now());
        this.observer.startFailed?.(err.container ? (d.pod.spec.initContainers?.some((c) => c.name === err.container) ? 'init' : 'app') : 'sandbox', err.reason);
        const { container, reason, message } = err.result;
        if (container && reason !== 'FailedCreatePodSandBox') r.waiting.set(container, { reason, message });
        this.log.warn(`pod ${d.key}: ${err.container ? `container ${err.container}` : 'sandbox'}: ${err.message}; retrying in ${Math.round(backoffMs / 1000)}s`, { pod: d.key, container: err.container ?? 'POD', reason: err.reason });
        wait = Math.min(wait ?? backoffMs, backoffMs);
      } else if (isPodrunBug(err)) {
        // Neither the manifest's fault nor the engine's: podrun's own (a TypeError and the like).
        // Said as such, with its stack, and the turn tried again later; no waiting reason is made
        // up for the user's container.
        this.log.error(`pod ${d.key}: podrun bug during sync, retrying in ${BUG_RETRY_MS / 1000}s: ${err.stack ?? err.message}`, { pod: d.key });
        wait = Math.min(wait ?? BUG_RETRY_MS, BUG_RETRY_MS);
      } else {
        // The engine went away mid-turn, and the like: the worker logs it and tries again.
        if (!(err instanceof ContainerImageError)) throw err;
        const backoffMs = this.imagePulls.restarted(imageKey(d, err.container), Date.now());
        // As the kubelet: the attempt that failed says ErrImagePull; the look right after finds the
        // pull in back-off and says ImagePullBackOff until the next attempt (kubectl shows both).
        r.waiting.set(err.container, { reason: err.imageError.reason, message: err.message });
        this.log.warn(`pod ${d.key}: container ${err.container}: ${err.message}; retrying in ${Math.round(backoffMs / 1000)}s`, { pod: d.key, container: err.container, reason: err.imageError.reason });
        wait = Math.min(wait ?? backoffMs, backoffMs, IMAGE_BACKOFF_LOOK_MS);
      }
    } finally {
      if (r.inProgress === sync) delete r.inProgress;
      await this.cache.refreshPod(uid);
    }
    if (sync.aborted) return undefined;
    const after = this.cache.pod(uid);
    if (after) {
      // Prune right after a death, as the kubelet does: the sweep is only the safety net.
      const pruned = await pruneDeadInstances(this.rt, after, this.keepDead);
      if (pruned) this.onPruned(pruned);
      await this.updateProbes(d, after);
    }
    trimRecord(r, this.cache.pod(uid));
    // Look again: the next init container, or what changed meanwhile.
    return wait ?? 0;
  }

  /** Whether the pod's worker is carrying out actions now (its containers are changing under it). */
  acting(uid: string): boolean {
    return this.records.get(uid)?.inProgress !== undefined;
  }

  /** A running container is waiting for nothing any more. */
  private clearWaiting(r: PodRecord, o: ObservedPod | undefined): void {
    if (!o) return;
    for (const c of latestByName(o).values()) if (isActive(c)) r.waiting.delete(c.name);
  }

  /** When a container started, if its details were read (they are for every running container with probes or status asked). */
  startedAt(uid: string, id: string): string | undefined {
    return this.records.get(uid)?.details.get(id)?.startedAt;
  }

  /**
   * Whether the pod runs `d` and is Ready, and if not, why (which container, which probe or exit
   * code): what a health-gated update is judged by. No engine call: the cache and the prober.
   */
  readiness(d: DesiredPod): Readiness {
    const o = this.cache.pod(d.uid);
    const r = this.peek(d.uid);
    const probed = (name: string | undefined): { readiness: boolean; startup: boolean } => {
      const spec = name ? specOf(d.pod, name) : undefined;
      return { readiness: !!spec?.readinessProbe, startup: !!spec?.startupProbe };
    };
    const inputs: StatusInputs = {
      // Only what was read after a container finished: details read while it ran say exit code 0.
      details: (id) => {
        const known = r.details.get(id);
        return known?.finishedAt ? known : undefined;
      },
      // A probed container without a worker yet has not passed: podStatus applies the initial results.
      probes: (id) => this.probes.state(id),
      waiting: (name) => r.waiting.get(name),
      postStarting: (id) => r.postStarting.has(id),
    };
    const s = settled(d, o, inputs);
    if (s.done && !s.failed) return { ready: true };
    const latest = o ? latestByName(o) : undefined;
    const reason = notReadyReason(
      s.status,
      s.idle,
      (name) => {
        const id = latest?.get(name)?.id;
        return id ? this.probes.state(id)?.last : undefined;
      },
      (name) => {
        const p = probed(name);
        return p.readiness || p.startup;
      },
    );
    return reason === undefined ? { ready: false } : { ready: false, reason };
  }

  /** The pod's status as the agent sees it: engine state, probe results, waiting reasons. */
  async status(d: DesiredPod | undefined, o: ObservedPod | undefined): Promise<PodStatusSummary | undefined> {
    const pod = d?.pod ?? o?.spec;
    if (!pod) return undefined;
    const r = this.peek(d?.uid ?? o?.uid ?? '');
    if (o) {
      // A running container that died after the start we read was restarted in place by the
      // engine (its own policy, on Podman): a new start, one more restart; read it again.
      for (const c of o.containers) {
        const known = r.details.get(c.id)?.startedAt;
        const died = this.cache.finishedAt(c.id);
        if (known && died && isActive(c) && died > Date.parse(known)) r.details.delete(c.id);
      }
      await containerDetails(this.rt, o, r.details);
    }
    return podStatus(pod, o, {
      runtimeName: this.rt.runtimeName,
      details: (id) => r.details.get(id),
      probes: (id) => this.probes.state(id),
      waiting: (name) => r.waiting.get(name),
      postStarting: (id) => r.postStarting.has(id),
    });
  }
}
