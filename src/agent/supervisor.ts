import type { Logger } from '../log/logger.js';
import { containerHash } from '../manifest/hash.js';
import type { DesiredPod } from '../manifest/types.js';
import type { PodCache } from '../pleg/cache.js';
import { ProbeManager, type ProbeEvent, type ProbeTarget } from '../probe/manager.js';
import { Backoff, type BackoffPolicy } from '../reconcile/backoff.js';
import { defaultHostOf, fieldPathOf, graceOf, removePod, specOf, type EventSink } from '../reconcile/lifecycle.js';
import { gateStarts, newestExited, sandboxKey } from '../reconcile/gate.js';
import { computePodActions, hasActions } from '../reconcile/plan.js';
import { ContainerImageError, ContainerStartFailure, executePodActions, pruneDeadInstances } from '../reconcile/sync.js';
import { isActive, latestByName, type ObservedContainer, type ObservedPod } from '../runtime/observed.js';
import type { PodRuntime } from '../runtime/runtime.js';
import { EventRecorder, type PodRef } from '../status/events.js';
import { containerDetails } from '../status/details.js';
import { podStatus, settled, type ContainerDetails, type PodStatusSummary, type StatusInputs } from '../status/pod-status.js';
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
  probed?(kind: string, result: 'successful' | 'failed' | 'unknown', seconds: number, where: { namespace: string; pod: string; container: string }): void;
  /** Whether the engine is about to restart this dead container by its own policy. */
  engineRestarts?(c: ObservedContainer): boolean;
}

export class PodSupervisor {
  readonly events = new EventRecorder();
  readonly probes: ProbeManager;
  private readonly crash: Backoff;
  private readonly imagePulls: Backoff;
  /** Creates and starts the engine refused, per container (or sandbox) and spec hash. */
  private readonly startFailures: Backoff;
  private readonly waiting = new Map<string, { reason: string; message: string }>();
  /** Containers whose postStart hook runs now. */
  private readonly postStarting = new Set<string>();
  /** Each pod's sync in progress, to let go of a hook when the pod is to be deleted. */
  private readonly inProgress = new Map<string, AbortController>();
  private readonly details = new Map<string, ContainerDetails>();
  private readonly hosts = new Map<string, string>();

  constructor(
    private readonly rt: PodRuntime,
    private readonly cache: PodCache,
    backoff: BackoffPolicy,
    private readonly wake: (uid: string, afterMs?: number) => void,
    private readonly log: Logger,
    private readonly keepDead = 1,
    private readonly onPruned: (count: number) => void = () => undefined,
    private readonly observer: SupervisorObserver = {},
  ) {
    this.crash = new Backoff(backoff);
    this.imagePulls = new Backoff(backoff);
    this.startFailures = new Backoff(backoff);
    const probed = observer.probed;
    this.probes = new ProbeManager(
      (id, cmd, t) => rt.exec(id, cmd, t),
      (e) => this.onProbe(e),
      probed
        ? (t, kind, result, seconds) => {
            const o = this.cache.pod(t.uid);
            probed(kind, result, seconds, { namespace: o?.namespace ?? '', pod: o?.name ?? '', container: t.container.name });
          }
        : undefined,
    );
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

  /** Deletes a pod no one declares any more, and forgets everything about it. */
  async remove(o: ObservedPod): Promise<void> {
    this.probes.removePod(o.uid);
    await removePod(this.rt, o, graceOf(o), this.sink({ uid: o.uid, name: o.name, namespace: o.namespace }));
    this.crash.forgetPod(o.uid);
    this.imagePulls.forgetPod(o.uid);
    this.startFailures.forgetPod(o.uid);
    this.events.forget(o.uid);
    for (const k of this.waiting.keys()) if (k.startsWith(`${o.uid}/`)) this.waiting.delete(k);
  }

  private async defaultHost(d: DesiredPod, o: ObservedPod | undefined): Promise<string> {
    const sandbox = o?.sandboxes[0];
    if (!sandbox) return '127.0.0.1';
    let host = this.hosts.get(sandbox.id);
    if (!host) {
      host = await defaultHostOf(this.rt, d.pod, o);
      this.hosts.set(sandbox.id, host);
    }
    return host;
  }

  /** Starts or stops probe workers to match the pod's running containers. */
  private async updateProbes(d: DesiredPod, o: ObservedPod | undefined): Promise<void> {
    if (!o) return this.probes.removePod(d.uid);
    const host = await this.defaultHost(d, o);
    const targets: ProbeTarget[] = [];
    for (const c of latestByName(o).values()) {
      const spec = specOf(d.pod, c.name);
      if (!spec || c.state !== 'running') continue;
      if (!spec.livenessProbe && !spec.readinessProbe && !spec.startupProbe) continue;
      // initialDelaySeconds counts from the container's start, which only an inspect knows (once).
      if (!this.probes.state(c.id) && !this.details.get(c.id)?.startedAt) await containerDetails(this.rt, o, this.details);
      const startedAt = Date.parse(this.details.get(c.id)?.startedAt ?? '');
      targets.push({ uid: d.uid, container: spec, containerId: c.id, defaultHost: host, ...(Number.isFinite(startedAt) ? { startedAt } : {}) });
    }
    this.probes.sync(d.uid, targets);
  }

  async sync(d: DesiredPod): Promise<number | undefined> {
    const uid = d.uid;
    const cached = this.cache.pod(uid);
    // A dead container the engine is about to restart itself (its policy could not be taken
    // over, as on Podman) counts as restarting: podrun restarting it too would make two.
    const engineRestarting = cached ? [...cached.sandboxes, ...cached.containers].filter((c) => this.observer.engineRestarts?.(c)) : [];
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
      if (k.reason.startsWith('failed ')) this.log.warn(`pod ${d.key}: container ${k.name} ${k.reason}`, { pod: d.key, container: k.name });
    }
    if (!hasActions(actions)) {
      await this.updateProbes(d, o);
      this.clearWaiting(d, o);
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
      waitingOnImage: (name) => this.waiting.get(`${uid}/${name}`)?.reason.includes('Image') ?? false,
      finishedAt: (id) => finished.get(id),
    }, now);
    let wait = gate.waitMs;
    for (const h of gate.held) {
      if (h.reason !== 'CrashLoopBackOff') continue;
      const message = `back-off ${Math.round(h.waitMs / 1000)}s restarting failed container=${h.name} pod=${d.pod.metadata.name}_${d.pod.metadata.namespace ?? 'default'}(${uid})`;
      if (this.waiting.get(`${uid}/${h.name}`)?.reason !== 'CrashLoopBackOff') {
        this.events.record(this.ref(d), 'Warning', 'BackOff', 'Back-off restarting failed container', fieldPathOf(d.pod, h.name));
      }
      this.waiting.set(`${uid}/${h.name}`, { reason: 'CrashLoopBackOff', message });
    }
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
    const sync = new AbortController();
    this.inProgress.set(uid, sync);
    try {
      await executePodActions(this.rt, d, o, toRun, {
        engineRestarts: false,
        events: this.sink(this.ref(d)),
        signal: sync.signal,
        postStart: (id, running) => (running ? this.postStarting.add(id) : this.postStarting.delete(id)),
      });
      if (toRun.createSandbox) this.observer.started?.('sandbox');
      for (const s of allowed) this.observer.started?.(s.type);
      for (const r of gate.restarts) this.observer.restarted?.(d.pod.metadata.namespace ?? 'default', d.pod.metadata.name, r.name);
      for (const s of allowed) {
        this.waiting.delete(`${uid}/${s.name}`);
        const spec = specOf(d.pod, s.name);
        if (spec) this.startFailures.forget(Backoff.key(uid, s.name, containerHash(d.pod, spec)));
      }
      if (toRun.createSandbox) this.startFailures.forget(sandboxKeyOf);
    } catch (err) {
      if (err instanceof ContainerStartFailure) {
        // As the kubelet: CreateContainerError, RunContainerError and a refused sandbox back off
        // like a crash loop (10 s doubling to 5 min), so a bad mount or a missing binary costs
        // the engine one attempt per back-off, not a hot loop.
        const spec = err.container ? specOf(d.pod, err.container) : undefined;
        const key = err.container && spec ? Backoff.key(uid, err.container, containerHash(d.pod, spec)) : sandboxKeyOf;
        const backoffMs = this.startFailures.restarted(key, Date.now());
        this.observer.startFailed?.(err.container ? (d.pod.spec.initContainers?.some((c) => c.name === err.container) ? 'init' : 'app') : 'sandbox', err.reason);
        if (err.container) this.waiting.set(`${uid}/${err.container}`, { reason: err.reason, message: err.detail });
        this.log.warn(`pod ${d.key}: ${err.container ? `container ${err.container}` : 'sandbox'}: ${err.message}; retrying in ${Math.round(backoffMs / 1000)}s`, { pod: d.key, container: err.container ?? 'POD', reason: err.reason });
        wait = Math.min(wait ?? backoffMs, backoffMs);
      } else {
        if (!(err instanceof ContainerImageError)) throw err;
        const key = `${uid}/${err.container}`;
        const spec = specOf(d.pod, err.container);
        const imageKey = `${uid}/${err.container}/${spec?.image ?? ''}`;
        const backoffMs = this.imagePulls.restarted(imageKey, Date.now());
        const first = !this.waiting.get(key)?.reason.includes('Image');
        this.waiting.set(key, { reason: first ? err.imageError.reason : err.imageError.reason === 'ErrImageNeverPull' ? 'ErrImageNeverPull' : 'ImagePullBackOff', message: err.message });
        if (!first) this.events.record(this.ref(d), 'Normal', 'BackOff', `Back-off pulling image "${spec?.image ?? ''}"`, fieldPathOf(d.pod, err.container));
        wait = Math.min(wait ?? backoffMs, backoffMs);
      }
    } finally {
      if (this.inProgress.get(uid) === sync) this.inProgress.delete(uid);
      await this.cache.refreshPod(uid);
    }
    const after = this.cache.pod(uid);
    if (after) {
      // Prune right after a death, as the kubelet does: the sweep is only the safety net.
      const pruned = await pruneDeadInstances(this.rt, after, this.keepDead);
      if (pruned) this.onPruned(pruned);
      await this.updateProbes(d, after);
    }
    // Look again: the next init container, or what changed meanwhile.
    return wait ?? 0;
  }

  /**
   * The pod is no longer declared: a postStart hook its sync waits for is let go, so the deletion
   * starts now instead of when the hook returns (as the kubelet cancels a terminating pod's sync).
   */
  cancel(uid: string): void {
    this.inProgress.get(uid)?.abort();
  }

  /** A running container is waiting for nothing any more. */
  private clearWaiting(d: DesiredPod, o: ObservedPod | undefined): void {
    if (!o) return;
    for (const c of latestByName(o).values()) if (isActive(c)) this.waiting.delete(`${d.uid}/${c.name}`);
  }

  /** When a container started, if its details were read (they are for every running container with probes or status asked). */
  startedAt(id: string): string | undefined {
    return this.details.get(id)?.startedAt;
  }

  /**
   * Whether the pod runs `d` and is Ready, and if not, why (which container, which probe or exit
   * code): what a health-gated update is judged by. No engine call: the cache and the prober.
   */
  readiness(d: DesiredPod): Readiness {
    const o = this.cache.pod(d.uid);
    const probed = (name: string | undefined): { readiness: boolean; startup: boolean } => {
      const spec = name ? specOf(d.pod, name) : undefined;
      return { readiness: !!spec?.readinessProbe, startup: !!spec?.startupProbe };
    };
    const inputs: StatusInputs = {
      // Only what was read after a container finished: details read while it ran say exit code 0.
      details: (id) => {
        const known = this.details.get(id);
        return known?.finishedAt ? known : undefined;
      },
      // A probed container without a worker yet has not passed: as the kubelet's initial results.
      probes: (id) => {
        const state = this.probes.state(id);
        if (state) return state;
        const p = probed(o?.containers.find((c) => c.id === id)?.name);
        return { started: !p.startup, ready: !p.readiness && !p.startup };
      },
      waiting: (name) => this.waiting.get(`${d.uid}/${name}`),
      postStarting: (id) => this.postStarting.has(id),
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
    if (o) {
      // A running container that died after the start we read was restarted in place by the
      // engine (its own policy, on Podman): a new start, one more restart; read it again.
      for (const c of o.containers) {
        const known = this.details.get(c.id)?.startedAt;
        const died = this.cache.finishedAt(c.id);
        if (known && died && isActive(c) && died > Date.parse(known)) this.details.delete(c.id);
      }
      await containerDetails(this.rt, o, this.details);
    }
    const uid = d?.uid ?? o?.uid ?? '';
    return podStatus(pod, o, {
      details: (id) => this.details.get(id),
      probes: (id) => this.probes.state(id) ?? { started: true, ready: true },
      waiting: (name) => this.waiting.get(`${uid}/${name}`),
      postStarting: (id) => this.postStarting.has(id),
    });
  }
}
