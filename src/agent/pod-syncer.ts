import type { Logger } from '../log/logger.js';
import { silentLogger } from '../log/silent.js';
import type { DesiredPod, Pod } from '../manifest/types.js';
import type { PodCache } from '../pleg/cache.js';
import { ProbeManager, type ProbeEvent, type ProbeKind, type ProbeTarget } from '../probe/manager.js';
import type { ProbedContainer, ProbeResultLabel } from '../metrics/probe-metrics.js';
import type { BackoffPolicy } from '../reconcile/backoff.js';
import { fieldPathOf, type EventSink } from '../reconcile/lifecycle.js';
import { applyBackoff } from '../reconcile/start-backoff.js';
import { hasActions, type PodActions } from '../reconcile/plan.js';
import { executePodActions, pruneDeadInstances } from '../reconcile/sync.js';
import { isActive, latestByName, type ObservedContainer, type ObservedPod, type ObservedSandbox } from '../runtime/observed.js';
import type { PodEngine } from '../runtime/roles.js';
import { EventRecorder, type PodRef } from '../status/events.js';
import { podStatus, type PodStatusSummary } from '../status/pod-status.js';
import { probeTargets, readDetails, readinessOf, statusInputs } from './pod-view.js';
import { settled } from '../reconcile/settled.js';
import { Adoption } from './adoption.js';
import type { PodPhase } from './pod-phase.js';
import { newPodRecord, PodRecords, retainKeys, trimRecord, type PodRecord } from './pod-record.js';
import { noteHeld } from './held-reasons.js';
import { logSyncActions } from './sync-log.js';
import { recordFailure } from './turn-failure.js';
import { backoffViewOf, planSync, recordStarted, type StartObserver } from './sync-plan.js';
import type { Readiness } from '../reconcile/rollback.js';

/** For metrics: what the syncer started, failed to start and restarted, and every probe run. */
export interface SyncObserver extends StartObserver {
  startFailed?(type: 'sandbox' | 'init' | 'app', reason: string): void;
  probed?(where: ProbedContainer, kind: string, result: ProbeResultLabel, seconds: number): void;
  /** The pod is gone: its probe series go too. */
  probesGone?(uid: string): void;
}

/**
 * Who the worker works for. The agent (the default): it takes restarts over from the engine and
 * makes containers with no engine restart policy. `apply` with no agent (`engineRestarts`): the
 * engine keeps every pod alive after `apply` exits, so containers are made with the policy the
 * pod's restartPolicy maps to, those restarts are left to the engine, and no liveness probe runs
 * (nobody would act on it once `apply` is done).
 */
export interface WorkerMode {
  engineRestarts?: boolean;
  /** Label that lets `apply --prune` find the pods of the same set later. */
  applySet?: string;
  /** Nothing reads the pod after its turn (`apply --no-wait`): no look at what the turn made, nor the prune and probes that follow it. */
  noLookAfter?: boolean;
}

/**
 * What the agent keeps per pod beyond the engine's state: crash and image backoff, waiting
 * reasons, probe workers, events, and the inspect details that status needs. `turn` is one pod
 * worker's turn: probe kills, the plan, backoff, the actions.
 */
export class PodSyncer {
  readonly events = new EventRecorder();
  readonly probes: ProbeManager;
  /** One record per pod: everything kept about it beyond the engine's state, its back-off too (pod-record.ts). */
  readonly records: PodRecords;
  private readonly adoption: Adoption;
  private readonly unsubscribeCreated: () => void;

  constructor(
    private readonly rt: PodEngine,
    private readonly cache: PodCache,
    private readonly backoff: BackoffPolicy,
    private readonly wake: (uid: string, afterMs?: number) => void,
    private readonly log: Logger,
    private readonly keepDead = 1,
    private readonly onPruned: (count: number) => void = () => undefined,
    private readonly observer: SyncObserver = {},
    private readonly mode: WorkerMode = {},
  ) {
    this.adoption = new Adoption(rt, cache, log);
    this.records = new PodRecords(backoff);
    this.records.onForget((uid) => this.dropOutside(uid));
    // Creates happen in a pod's turn, so its record is there to note them; one made for a pod with
    // none (forgotten meanwhile) is told by its event, or the next relist.
    this.unsubscribeCreated = rt.onCreated((uid, id, kind) => this.records.worked(uid)?.unseen.set(id, kind));
    const probed = observer.probed;
    this.probes = new ProbeManager(
      (id, cmd, t) => rt.exec(id, cmd, t),
      (e) => this.onProbe(e),
      probed
        ? (t, kind, result, seconds) => probed({ uid: t.uid, namespace: t.namespace, pod: t.pod, container: t.container.name }, kind, result, seconds)
        : undefined,
      log,
      (t, kind, message) => this.onProbeFailure(t, kind, message),
    );
  }

  /** The pod's record, its sync begun. */
  private rec(uid: string): PodRecord {
    return this.records.begin(uid);
  }

  /** The pod's record for a read: a pod not synced yet reads as an empty one, which is not kept. */
  private peek(uid: string): PodRecord {
    return this.records.worked(uid) ?? newPodRecord(this.backoff);
  }

  private ref(d: { uid: string; pod: { metadata: { name: string; namespace?: string } } }): PodRef {
    return { uid: d.uid, name: d.pod.metadata.name, namespace: d.pod.metadata.namespace ?? 'default' };
  }

  private sink(ref: PodRef): EventSink {
    return (type, reason, message, fieldPath) => this.events.record(ref, type, reason, message, fieldPath);
  }

  /** A probe's settled result changed (or a failed readiness failed again): the pod's worker looks. */
  private onProbe(e: ProbeEvent): void {
    this.wake(e.uid);
  }

  /** Every failed probe run is an Unhealthy event and a log line, as the kubelet's prober records each. */
  private onProbeFailure(t: ProbeTarget, kind: ProbeKind, message: string): void {
    const o = this.cache.pod(t.uid);
    if (!o) return;
    const name = kind === 'liveness' ? 'Liveness' : kind === 'readiness' ? 'Readiness' : 'Startup';
    this.events.record(
      { uid: o.uid, name: o.name, namespace: o.namespace },
      'Warning',
      'Unhealthy',
      `${name} probe failed: ${message}`,
      fieldPathOf(o.spec, t.container.name),
    );
    // As the kubelet's prober ("Probe failed"): every failure, with what the probe said.
    this.log.warn(`pod ${o.namespace}/${o.name}: container ${t.container.name} ${kind} probe failed: ${message}`, {
      pod: `${o.namespace}/${o.name}`,
      container: t.container.name,
      probe: kind,
    });
  }

  stop(): void {
    this.unsubscribeCreated();
    this.probes.stop();
  }

  /**
   * The cache's authoritative look at the pod (PodCache.refreshPod), with the containers podrun
   * made for it whose create event the cache may not have had yet.
   */
  async refresh(uid: string): Promise<void> {
    const r = this.records.worked(uid);
    const unseen = r ? [...r.unseen] : [];
    r?.unseen.clear();
    await this.cache.refreshPod(uid, unseen);
  }

  /** Whether this agent has worked on the pod (its worker has turned for it). */
  known(uid: string): boolean {
    return this.records.worked(uid) !== undefined;
  }

  /** The pod's phase (pod-phase.ts); undefined with no record. `enter` is its worker's (pod-worker.ts). */
  phase(uid: string): PodPhase | undefined {
    return this.records.get(uid)?.phase;
  }

  enter(uid: string, phase: PodPhase): void {
    this.rec(uid).phase = phase;
  }

  /** What the syncer keeps of the pod outside its record: its probe workers, probe series and events. */
  private dropOutside(uid: string): void {
    this.probes.removePod(uid);
    this.observer.probesGone?.(uid);
    this.events.forget(uid);
  }

  /** Declared again after it terminated: it syncs anew, nothing kept of its sync before (PodRecords.renew). */
  renew(uid: string): void {
    this.dropOutside(uid);
    this.records.renew(uid);
  }

  /** Entries kept per pod, by kind: what must return to nothing once a pod is gone (`records.forget`). */
  stateSize(): Record<string, number> {
    return { ...this.records.stateSize(), events: this.events.podCount(), probes: this.probes.size };
  }

  /** The pod's IP (on the host network, the node's), read once per sandbox; undefined without a running one. */
  async podIP(pod: Pod | undefined, o: ObservedPod | undefined): Promise<string | undefined> {
    const sandbox = o?.sandboxes[0];
    if (!pod || !o || !sandbox || !isActive(sandbox)) return undefined;
    const r = this.records.worked(o.uid);
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
    // A pod with no probe needs no address for one (an inspect of its sandbox): status reads it when asked.
    const probed = [...(d.pod.spec.initContainers ?? []), ...d.pod.spec.containers].some((c) => c.livenessProbe || c.readinessProbe || c.startupProbe);
    if (!probed) return this.probes.sync(d.uid, []);
    const host = await this.sandboxAddress(d.pod, o);
    this.probes.sync(d.uid, await probeTargets(this.rt, this.probes, d, o, this.rec(d.uid), host, !this.mode.engineRestarts));
  }

  /**
   * What the pod's next turn would decide from what is known now (the cache, the prober), taking no
   * step of one: no record made, nothing adopted, nothing said. The plan an apply asked over the
   * socket is answered with, for pods that may never be declared (a dry run).
   */
  foresee(d: DesiredPod): PodActions {
    return planSync(d, this.cache.pod(d.uid), this.probes, silentLogger);
  }

  /** The turn's decision alone, made as `turn` makes it (gather, then the plan), for `apply` to print and then hand to `turn`. */
  async decide(d: DesiredPod): Promise<PodActions> {
    const seen = await this.gather(d);
    return planSync(d, seen.r ? seen.o : this.cache.pod(d.uid), this.probes, this.log);
  }

  /** `turn`, for when to look again. */
  async sync(d: DesiredPod, signal?: AbortSignal): Promise<number | undefined> {
    return (await this.turn(d, signal)).again;
  }

  /**
   * One turn of the pod's worker, in four steps: gather (the cache, adoption, what the engine
   * restarts itself), decide (the plan, then the back-off gate: pure), execute (sync.ts), record
   * (back-off, waiting reasons, pruning, probes, the record trimmed). `signal` is aborted when the
   * pod is to be deleted: the turn then makes nothing more and ends, for the deletion to follow.
   * `failed`: the step failure this turn recorded (for `apply`, which reports it).
   */
  async turn(d: DesiredPod, signal?: AbortSignal, planned?: PodActions): Promise<{ again?: number; failed?: Error }> {
    const seen = await this.gather(d);
    if (!seen.r) return { again: seen.again };
    const { r, o } = seen;
    // `apply` hands in the plan it printed: what it said is what is done, not a second decision.
    const actions = planned ?? planSync(d, o, this.probes, this.log);
    if (!hasActions(actions)) {
      await this.updateProbes(d, o);
      this.clearWaiting(r, o);
      trimRecord(r, o);
      // Look again shortly: the engine restarts it, or its time runs out and podrun does.
      return seen.engineRestarting ? { again: 1000 } : {};
    }
    const now = Date.now();
    const gate = applyBackoff(d, o, actions, await backoffViewOf(this.rt, this.cache, r, o, actions, now), now);
    noteHeld(d, r, gate.held, (type, message, name) => this.events.record(this.ref(d), type, 'BackOff', message, fieldPathOf(d.pod, name)));
    for (const x of gate.restarts) r.backoff.crash.restarted(x.key, now, x.after);
    if (!hasActions(gate.actions)) return { again: gate.waitMs };
    logSyncActions(this.log, d, o, actions, gate);
    if (signal?.aborted) return {};
    const sync = signal ?? new AbortController().signal;
    let wait = gate.waitMs;
    let failed: Error | undefined;
    r.inProgress = sync;
    try {
      await executePodActions(this.rt, d, o, gate.actions, {
        engineRestarts: this.mode.engineRestarts === true,
        ...(this.mode.applySet ? { applySet: this.mode.applySet } : {}),
        events: this.sink(this.ref(d)),
        signal: sync,
        postStart: (id, running) => (running ? r.postStarting.add(id) : r.postStarting.delete(id)),
      });
      recordStarted(d, r, gate, this.observer);
    } catch (err) {
      // Cancelled (or failed on the way) because the pod is to be deleted: no back-off, no
      // waiting reason; the deletion that comes next removes whatever was made.
      if (!sync.aborted) {
        const backoffMs = recordFailure(
          err,
          d,
          r,
          { log: this.log, ...(this.observer.startFailed ? { startFailed: this.observer.startFailed } : {}) },
          Date.now(),
        );
        wait = Math.min(wait ?? backoffMs, backoffMs);
        failed = err as Error;
      }
    } finally {
      if (r.inProgress === sync) delete r.inProgress;
      if (!this.mode.noLookAfter) await this.refresh(d.uid);
    }
    if (sync.aborted) return {};
    if (this.mode.noLookAfter) return { again: wait ?? 0, ...(failed ? { failed } : {}) };
    const after = this.cache.pod(d.uid);
    if (after) {
      // Prune right after a death, as the kubelet does: the sweep is only the safety net.
      const pruned = await pruneDeadInstances(this.rt, after, this.keepDead);
      if (pruned) this.onPruned(pruned);
      await this.updateProbes(d, after);
    }
    trimRecord(r, this.cache.pod(d.uid));
    // Look again: the next init container, or what changed meanwhile.
    return { again: wait ?? 0, ...(failed ? { failed } : {}) };
  }

  /**
   * Gather: the pod's record and its engine view. A dead container the engine is about to restart
   * itself (a policy podrun could not take over, as on Podman, or the one `apply` gave it) counts
   * as restarting: podrun restarting it too would make two. No record: look again after `again`.
   */
  private async gather(d: DesiredPod): Promise<{ r: PodRecord; o: ObservedPod | undefined; engineRestarting: boolean } | { r?: undefined; again?: number }> {
    const uid = d.uid;
    const r = this.rec(uid);
    retainKeys(r, d);
    const cached = this.cache.pod(uid);
    if (!cached) return { r, o: undefined, engineRestarting: false };
    if (this.mode.engineRestarts) this.adoption.assume(r, cached, d.pod);
    else await this.adoption.adopt(r, cached);
    const restarting = new Set([...cached.sandboxes, ...cached.containers].filter((c) => this.adoption.engineRestarts(r, c)));
    if (restarting.size === 0) return { r, o: cached, engineRestarting: false };
    const mark = (c: ObservedContainer): ObservedContainer => (restarting.has(c) ? { ...c, state: 'unknown', engineRestarting: true } : c);
    // A sandbox stays not ready: the engine restarts it, and until then it holds no pod.
    const markSandbox = (s: ObservedSandbox): ObservedSandbox => (restarting.has(s) ? { ...s, engineRestarting: true } : s);
    return { r, o: { ...cached, containers: cached.containers.map(mark), sandboxes: cached.sandboxes.map(markSandbox) }, engineRestarting: true };
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

  /** Whether the pod runs `d` and is Ready, and if not, why: what a health-gated update is judged by. */
  readiness(d: DesiredPod): Readiness {
    return readinessOf(this.probes, d, this.cache.pod(d.uid), this.peek(d.uid));
  }

  /** The pod's status as the agent sees it: engine state, probe results, waiting reasons (`fresh`: see readDetails). */
  async status(d: DesiredPod | undefined, o: ObservedPod | undefined, fresh = false): Promise<PodStatusSummary | undefined> {
    const pod = d?.pod ?? o?.spec;
    if (!pod) return undefined;
    const r = this.peek(d?.uid ?? o?.uid ?? '');
    if (o) await readDetails(this.rt, (id) => this.cache.finishedAt(id), r, o, fresh);
    return podStatus(pod, o, statusInputs(this.rt, this.probes, r));
  }

  /**
   * Whether `apply` may stop waiting for the pod (reconcile/settled.ts), by the worker's status
   * (`fresh`: see readDetails; `read` false: by what is known, no inspect).
   */
  async settled(d: DesiredPod, fresh = false, read = true): Promise<ReturnType<typeof settled>> {
    const o = this.cache.pod(d.uid);
    const r = this.peek(d.uid);
    if (o && read) await readDetails(this.rt, (id) => this.cache.finishedAt(id), r, o, fresh);
    return settled(d, o, statusInputs(this.rt, this.probes, r));
  }
}
