import { containerEndpoint, engineDevice, type ContainerEndpoint } from './container-endpoints.js';
import { pullLogger } from './pull-log.js';
import { timerDelay } from '../base/duration.js';
import { Pacer } from '../base/pacer.js';
import { StatsCollector } from '../stats/collector.js';
import type { NodeSummary } from '../stats/node-view.js';
import type { PodStatsV1 } from '../stats/summary.js';
import type { AgentMetrics } from '../metrics/agent-metrics.js';
import { engineObserver, metricsFor, syncObserver } from './agent-observers.js';
import type { Logger } from '../log/logger.js';
import { silentLogger } from '../log/silent.js';
import { chmodSync, mkdirSync } from 'node:fs';
import type { DesiredPod } from '../manifest/types.js';
import { PodCache } from '../pleg/cache.js';
import { DEFAULT_BACKOFF } from '../reconcile/backoff.js';
import { PodTurns } from '../reconcile/pod-turns.js';
import type { PodEvent } from '../status/events.js';
import type { ContainerGcResult, GarbageCollector, ImageGcResult } from '../gc/collector.js';
import { collectorFor, startSweeps, sweepContainers } from './agent-gc.js';
import { startServer } from '../server/server.js';
import type { ApplyAnswer, ApplyAsk, DeleteAnswer, DeleteAsk, PullAnswer, PullAsk } from '../server/client.js';
import { deleteAsked, pullAsked } from './asked-deletion.js';
import { applyAsked } from './asked-apply.js';
import { AppliedSource } from '../sources/applied-source.js';
import { OPEN_POLICY } from '../manifest/policy.js';
import { defaultTokenPath, loadHttpToken } from '../server/http-token.js';
import { ExpiryLog } from './expiry-log.js';
import { PodSyncer } from './pod-syncer.js';
import { PodWorker } from './pod-worker.js';
import { judge, judgeDue, type JudgeDeps } from './update-judge.js';
import { DesiredSet } from './desired-set.js';
import { podList } from './pod-list.js';
import { sourcesFor } from './agent-sources.js';
import type { AgentOptions } from './options.js';
import { DockerEngine } from '../runtime/docker/docker-engine.js';
import type { PodEngine } from '../runtime/roles.js';
import type { RuntimeOptions } from '../runtime/runtime-types.js';
import { acquireAgentLock } from './lock.js';
import { HealthGate } from './health-gate.js';
import { NodeStatus } from './node-status.js';
import { appliedDir } from '../sources/applied-sets.js';
import { redacting } from '../sources/redact.js';

export type { AgentOptions } from './options.js';

/** A merge may take at most 1 / (1 + MERGE_GAP) of the agent's time (see `merges`). */
const MERGE_GAP = 9;

/**
 * `podrun run`: sources feed one desired pod set, and per-pod workers keep the engine converged to
 * it, driven by the engine's events. Stopping the agent leaves the pods running.
 */
export class Agent {
  readonly runtime: PodEngine;
  readonly cache: PodCache;
  /** What the sources declare, merged, and what runs of it. */
  private readonly set: DesiredSet;
  private readonly workers: PodTurns;
  readonly syncer: PodSyncer;
  /** Each pod's phase moved and its turn chosen (pod-worker.ts), deletion being one of them. */
  private readonly worker: PodWorker;
  private readonly gate: HealthGate;
  private release: (() => void) | undefined;
  /** Sources call back file by file while they first load; the desired set is made once all have. */
  private loaded = false;
  private stopped = false;
  private closeServer: (() => Promise<void>) | undefined;
  private resyncTimer: NodeJS.Timeout | undefined;
  /**
   * Source changes, merged at once or with the others that come while the last merge's cost is
   * paid back: a merge costs O(pods) (each pod's version judged by the health gate), and a
   * directory in churn changes files many times a second, which must not hold the agent's one
   * thread (and its deletions) back.
   */
  private readonly merges = new Pacer(() => this.recompute(), MERGE_GAP);
  private gcTimers: NodeJS.Timeout[] = [];
  private readonly expiryLog: ExpiryLog;
  readonly gc: GarbageCollector;
  private readonly log: Logger;
  private readonly metricsRegistry: AgentMetrics;
  private readonly stats: StatsCollector;
  private readonly nodeStatus: NodeStatus;
  /** What judging a health-gated update reads and moves (update-judge.ts). */
  private readonly judging: JudgeDeps;
  /** The applies asked over the socket, one after the other: each reads the records the one before wrote. */
  private applying: Promise<unknown> = Promise.resolve();

  constructor(private readonly o: AgentOptions) {
    // Whatever a line quotes (an engine or fetch error naming a URL), credentials never reach the log.
    this.log = redacting(o.log ?? silentLogger);
    const m = metricsFor(() => ({ cache: this.cache, set: this.set, gc: this.gc }));
    this.metricsRegistry = m;
    this.runtime =
      o.engine ??
      (o.engineFactory ?? ((x: RuntimeOptions) => new DockerEngine(x)))({
        ...o.runtime,
        ...(o.maxParallel ? { engineSlots: o.maxParallel } : {}),
        onPullProgress: pullLogger(this.log),
        observer: engineObserver(m, this.log),
      });
    this.nodeStatus = new NodeStatus(this.runtime, {
      stateDir: o.runtime.stateDir,
      ...(o.evictionHard ? { evictionHard: o.evictionHard } : {}),
      engineUp: () => this.cache.connected,
      pods: () => this.cache.pods().length,
      ...(o.urlSigners || o.dirSigners ? { setExpiries: () => this.set.expiries() } : {}),
    });
    // One worker per pod and no bound on them: a pod in its grace period, a hook or a back-off holds
    // nothing of anyone else's. What costs the engine is bounded in the runtime (--max-parallel).
    this.workers = new PodTurns(
      (uid, signal) => this.syncPod(uid, signal),
      Number.POSITIVE_INFINITY,
      (uid, err) => this.log.error(`pod ${this.nameOf(uid)}: ${err.message}`, { pod: this.nameOf(uid) }),
    );
    this.cache = new PodCache(this.runtime, (uid) => this.workers.enqueue(uid), {
      relistMs: o.relistMs ?? 60_000,
      log: this.log,
      onRelisted: (seconds) => m.relisted(seconds),
      onReconnected: () => m.reconnected(),
      onConnected: () => {
        this.log.info(`engine connected at ${this.runtime.endpoint}`);
        this.nodeStatus.connected();
        this.enqueueAll();
      },
    });
    this.syncer = new PodSyncer(
      this.runtime,
      this.cache,
      o.backoff ?? DEFAULT_BACKOFF,
      (uid, after) => this.workers.enqueue(uid, after),
      this.log,
      o.gc?.containers?.maxPerPodContainer ?? 1,
      (n) => {
        this.gc.counters.containersRemoved += n;
      },
      syncObserver(m),
    );
    this.gate = new HealthGate({
      stateDir: o.runtime.stateDir,
      defaultMs: o.rollbackAfterMs ?? 0,
      log: this.log,
      engineUp: () => this.cache.connected,
      // Judged the moment it is due, from what the agent knows (a worker's sync under a loaded
      // engine took over a second, which the deadline's verdict does not need).
      due: (uid) => judgeDue(this.judging, uid),
      // What it keeps per pod lives in the pod's record, and goes with it.
      records: this.syncer.records,
      rolledBack: (pod, message) => {
        this.syncer.events.record(pod, 'Warning', 'RolledBack', message);
        m.rolledBack(pod.namespace, pod.name);
      },
    });
    this.worker = new PodWorker({ rt: this.runtime, cache: this.cache, log: this.log, syncer: this.syncer, mayDelete: (p) => this.set.mayDelete(p) });
    this.stats = new StatsCollector(this.runtime, () => this.cache.pods(), {
      periodMs: o.statsPeriodMs ?? 10_000,
      startedAt: (uid, id) => this.syncer.startedAt(uid, id),
      onCollected: (seconds, calls) => m.statsCollected(seconds, calls),
    });
    this.gc = collectorFor(this.runtime, o, this.log, () => this.set);
    this.set = new DesiredSet(sourcesFor(o, this.log, m, this.runtime.nodeName), {
      stateDir: o.runtime.stateDir,
      log: this.log,
      events: this.syncer.events,
      run: (d) => this.gate.gate(d),
    });
    this.expiryLog = new ExpiryLog({ expiries: () => this.set.expiries(), log: this.log });
    this.judging = { set: this.set, cache: this.cache, gate: this.gate, syncer: this.syncer, workers: this.workers };
  }

  private nameOf(uid: string): string {
    const o = this.cache.pod(uid);
    return this.set.get(uid)?.key ?? (o ? `${o.namespace}/${o.name}` : uid);
  }

  async start(): Promise<void> {
    this.release = await acquireAgentLock(this.o.runtime.stateDir);
    // Its files hold manifests (env values), URL caches and status: for root's eyes only.
    chmodSync(this.o.runtime.stateDir, 0o700);
    // Read before any pod is touched: a token file that cannot be trusted is a start-up error, never an open port.
    const tokenFile = this.o.httpTokenFile ?? defaultTokenPath(this.o.runtime.stateDir);
    const token = this.o.httpPort ? loadHttpToken(tokenFile, this.o.httpTokenFile === undefined) : undefined;
    // podrun's own directory: made here, so its source is ready at once (a missing directory
    // would leave it "not loaded yet", and with it every deletion of pods no one declares).
    mkdirSync(appliedDir(this.o.runtime.stateDir), { recursive: true });
    this.gate.load();
    await this.cache.start();
    // A change waits for its (paced) merge: until then no deletion is decided from the set.
    const changed = (): void => {
      this.set.sourcesChanged();
      this.merges.poke();
    };
    await Promise.all(this.set.sources.map((s) => s.start(changed)));
    this.loaded = true;
    this.merges.run();
    this.closeServer = await startServer(this, {
      stateDir: this.o.runtime.stateDir,
      ...(this.o.httpPort ? { port: this.o.httpPort } : {}),
      ...(token ? { token, tokenFile } : {}),
      log: this.log,
    });
    this.resyncTimer = setInterval(() => this.enqueueAll(), timerDelay(this.o.relistMs ?? 60_000));
    this.resyncTimer.unref();
    this.gcTimers = startSweeps(
      this.o,
      this.log,
      () => this.collect(false),
      () => this.gc.collectImages(false),
    );
    if (this.runtime.oomScoreFloor > -1000) {
      this.log.warn('this node cannot lower oom_score_adj (no CAP_SYS_RESOURCE): critical, Guaranteed and sandbox containers run at 0 instead of -997/-998');
    }
    this.log.info(`agent started: ${this.set.sources.map((s) => s.name).join(', ')}`);
  }

  /**
   * Resolves once every source has made its first load (a URL that cannot be reached counts: its
   * cached set, or none) and every declared pod has had one sync with the engine: podrun has acted
   * on everything it was given. A pod that crash-loops or cannot pull its image still counts. This
   * is when the service manager hears READY=1. Resolves with the number of declared pods.
   */
  async converged(): Promise<number> {
    for (;;) {
      if (this.stopped) throw new Error('the agent stopped before it converged');
      if (this.loaded && [...this.set.uids()].every((uid) => this.syncer.records.get(uid)?.synced)) return this.set.size;
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** Stops supervising; the pods keep running, as with the kubelet. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.resyncTimer) clearInterval(this.resyncTimer);
    this.merges.stop();
    for (const t of this.gcTimers) clearInterval(t);
    this.gate.stop();
    this.expiryLog.stop();
    await this.closeServer?.();
    await Promise.all(this.set.sources.map((s) => s.stop()));
    this.stats.stop();
    this.cache.stop();
    this.syncer.stop();
    await this.workers.stop();
    // An agent refused by the lock never supervised anything: it has nothing to say it left.
    if (!this.release) return;
    this.release();
    this.log.info('agent stopped; pods left running');
  }

  /** Resolves when no pod is being synced or waiting to be (for tests and `apply`). */
  idle(): Promise<void> {
    return this.workers.idle();
  }

  desiredPods(): DesiredPod[] {
    return this.set.pods();
  }

  private enqueueAll(): void {
    const uids = new Set([...this.set.uids(), ...this.cache.pods().map((p) => p.uid)]);
    for (const uid of uids) this.workers.enqueue(uid);
  }

  /** Merges the sources into the desired set and wakes the workers of the pods that changed. */
  private recompute(): void {
    if (!this.loaded) return;
    const observed = this.cache.pods();
    // Names of the pods declared until now: a pod that leaves the set is said to be deleted by name
    // once it is gone, also when no deletion turn saw it on the engine (a create still under way).
    const keys = new Map(this.set.pods().map((d) => [d.uid, d.key]));
    const change = this.set.merge(observed);
    this.gate.prune(this.set.declaredUids(), (uid) => this.cache.pod(uid) !== undefined, this.set.loaded && this.cache.connected);
    this.expiryLog.check();
    for (const uid of change.changed) this.workers.enqueue(uid);
    // A pod no longer declared: its sync under way stops at its next step (a postStart hook is let
    // go, no pull or engine slot is waited for) and the deletion comes right after it.
    for (const uid of change.gone) {
      this.worker.leaving(uid, keys.get(uid));
      this.workers.kill(uid);
    }
    // Pods on the engine that nothing declares (any more): at start, as soon as their source has
    // loaded, not at the next relist.
    for (const o of observed) if (!this.set.get(o.uid) && this.set.mayDelete(o)) this.workers.enqueue(o.uid);
  }

  private async syncPod(uid: string, signal: AbortSignal): Promise<number | undefined> {
    const t0 = performance.now();
    const deleting = !!!this.set.get(uid);
    const connected = this.cache.connected;
    try {
      return await this.syncPodOnce(uid, signal);
    } finally {
      this.metricsRegistry.podWorked(deleting ? 'delete' : 'sync', (performance.now() - t0) / 1000);
      // A pod that is gone is forgotten, not remembered as synced.
      if (connected && (!!this.set.get(uid) || this.cache.pod(uid))) this.syncer.records.make(uid).synced = true;
    }
  }

  /** The pod's worker turn (pod-worker.ts: its phase says whether it syncs or terminates). */
  private async syncPodOnce(uid: string, signal: AbortSignal): Promise<number | undefined> {
    if (!this.cache.connected) return 1000;
    const d = this.set.get(uid);
    const turn = await this.worker.turn(uid, d, signal);
    // Neither declared nor on the engine: everything kept about it goes, its record and what its owners keep beside it.
    if (turn.forgotten) this.syncer.records.forget(uid);
    return d && turn.synced && judge(this.judging, uid, d) ? 0 : turn.again;
  }

  /**
   * Entries the agent keeps per pod, per container and per image, by kind, beyond what is declared
   * and what the engine holds: bounded while a pod lives (whatever it does), and nothing once it is
   * gone. Every such map or set in the process is counted here (test/agent/pod-state.test.ts).
   * Not counted, being bounded by construction and not per pod: the cache's ring of recent events
   * (RECENT_LIMIT) and the sandbox pid cache of local readings (PID_CACHE_MAX).
   */
  podState(): Record<string, number> {
    const kept = [this.syncer, this.gate, this.cache, this.gc, this.set, this.stats].map((m) => m.stateSize());
    return Object.assign({}, ...kept, {
      probeSeries: this.metricsRegistry.probes.size,
      workers: this.workers.size,
    }) as Record<string, number>;
  }

  /** Every pod the agent knows (desired or present), as v1 Pods with status. */
  podList(): Promise<Record<string, unknown>[]> {
    return podList({
      set: this.set,
      cache: this.cache,
      syncer: this.syncer,
      gate: this.gate,
      hostIP: this.runtime.hostIP,
      deletion: (uid) => this.worker.deletionShown(uid),
    });
  }

  events(uid?: string): PodEvent[] {
    return this.syncer.events.list(uid);
  }

  healthy(): boolean {
    return this.cache.connected;
  }

  /** /healthz: the engine reachable and its relist fresh (the kubelet's PLEG check), or why not. */
  unhealthy(): string | undefined {
    return this.cache.judgeHealth();
  }

  /** One container GC sweep from the cache (agent-gc.ts). */
  collect(dryRun: boolean): Promise<ContainerGcResult> {
    return sweepContainers({ gc: this.gc, set: this.set, cache: this.cache, workers: this.workers }, dryRun);
  }

  /** `podrun pull` asked over the socket: this agent pulls, with its own credentials. */
  pullImages(ask: PullAsk): Promise<PullAnswer> {
    return pullAsked(this.runtime, ask);
  }

  /** `podrun delete` asked over the socket: this agent deletes (asked-deletion.ts). */
  deletePods(ask: DeleteAsk): Promise<DeleteAnswer> {
    const x = { stateDir: this.o.runtime.stateDir, set: this.set, cache: this.cache, worker: this.worker, workers: this.workers, log: this.log };
    return deleteAsked(x, ask);
  }

  /** `podrun apply` asked over the socket: this agent records the set and carries it out (asked-apply.ts). */
  applyPods(ask: ApplyAsk): Promise<ApplyAnswer> {
    const applied = this.set.sources.find((s) => s instanceof AppliedSource);
    const x = {
      stateDir: this.o.runtime.stateDir,
      policy: this.o.policy ?? OPEN_POLICY,
      cache: this.cache,
      foresee: (d: DesiredPod) => this.syncer.foresee(d),
      // Read back and merged now: the workers start on the set before the answer, whatever the pacing of other changes.
      recorded: () => {
        applied?.readNow();
        this.merges.run();
      },
      log: this.log,
    };
    const answer = this.applying.then(() => applyAsked(x, ask));
    this.applying = answer.catch(() => undefined);
    return answer;
  }

  async collectImages(dryRun: boolean): Promise<ImageGcResult> {
    return this.gc.collectImages(dryRun);
  }

  /** The node as a v1 Node: addresses, capacity, node info, and conditions from eviction signals. */
  async node(): Promise<Record<string, unknown>> {
    return (await this.nodeStatus.now()).node;
  }

  /** The kubelet's Summary API: the node, and every pod from the last resource readings. */
  async statsSummary(): Promise<{ node: NodeSummary; pods: PodStatsV1[] }> {
    return { node: (await this.nodeStatus.now()).summary, pods: (this.o.statsPeriodMs ?? 10_000) > 0 ? await this.stats.summary() : [] };
  }

  /** The Prometheus exposition of this agent's metrics. */
  async metrics(): Promise<{ contentType: string; text: string }> {
    return { contentType: this.metricsRegistry.contentType, text: await this.metricsRegistry.text() };
  }

  /** The kubelet's container metrics endpoints (/metrics/cadvisor, /metrics/resource, /metrics/probes). */
  containerMetrics(kind: ContainerEndpoint): Promise<{ contentType: string; text: string }> {
    const probes = this.metricsRegistry.probes;
    return containerEndpoint(kind, {
      samples: () => this.stats.samples(),
      node: async () => (await this.nodeStatus.now()).summary,
      machine: async () => (await this.nodeStatus.now()).machine,
      cgroups: () => this.runtime.containerCgroups(),
      probes: async () => probes.text(),
      fsDevice: () => engineDevice(this.runtime),
    });
  }
}
