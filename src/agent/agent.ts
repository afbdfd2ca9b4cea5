import { timerDelay } from '../base/duration.js';
import { terminatingPods } from '../reconcile/terminating.js';
import { podrunVersion } from '../status/version.js';
import { StatsCollector } from '../stats/collector.js';
import { DEFAULT_EVICTION_HARD, parseEvictionThresholds, type NodeCondition, type Signal, type Threshold } from '../stats/node.js';
import { nodeView, type NodeSummary, type NodeView } from '../stats/node-view.js';
import type { CpuStats, PodStatsV1 } from '../stats/summary.js';
import { AgentMetrics, operationType } from '../metrics/agent-metrics.js';
import { silentLogger, type Logger } from '../log/logger.js';
import { chmodSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { formatIssue } from '../manifest/errors.js';
import { OPEN_POLICY, type PodPolicy } from '../manifest/policy.js';
import type { DesiredPod } from '../manifest/types.js';
import { PodCache } from '../pleg/cache.js';
import { DEFAULT_BACKOFF, type BackoffPolicy } from '../reconcile/backoff.js';
import { PodWorkers } from '../reconcile/workers.js';
import type { ObservedPod } from '../runtime/observed.js';
import type { PodEvent } from '../status/events.js';
import { markRolledBack, toV1Pod } from '../status/v1.js';
import { GarbageCollector, type ContainerGcResult, type ImageGcResult } from '../gc/collector.js';
import type { ContainerGcPolicy, ImageGcPolicy } from '../gc/plan.js';
import { startServer } from '../server/server.js';
import { PodSupervisor } from './supervisor.js';
import { PodRuntime, type RuntimeOptions } from '../runtime/runtime.js';
import type { PodEngine } from '../runtime/roles.js';
import { APPLY_PREFIX, appliedDir, appliedSource } from '../sources/applied-sets.js';
import { writeFileAtomic } from '../base/atomic-file.js';
import { DirectorySource } from '../sources/dir-source.js';
import { redactText, redactUrl } from '../sources/redact.js';
import { mergeOrigins, type Conflict } from '../sources/merge.js';
import type { PodSource, SetExpiry } from '../sources/source.js';
import { UrlSource } from '../sources/url-source.js';
import { acquireAgentLock } from './lock.js';
import { HealthGate } from './health-gate.js';
import type { Signer } from '../sources/sshsig.js';
import { isVerificationRefusal, type SignaturePolicy } from '../sources/signed.js';
import { FreshnessStore } from '../sources/freshness-store.js';

export interface AgentOptions {
  runtime: RuntimeOptions;
  /** The engine to run on (default: the Docker engine `runtime` describes; unit tests give the fake). */
  engine?: PodEngine;
  /** Sources beyond the directories, URLs and applied sets (a program embedding the agent; unit tests). */
  sources?: PodSource[];
  manifestDirs: string[];
  manifestUrls: string[];
  urlHeaders?: Record<string, string>;
  urlCaFile?: string;
  /** Keys a URL's set must be signed with (its detached signature, URL.sig). */
  urlSigners?: Signer[];
  /** Keys a watched directory's files must be signed with (FILE.sig beside each). */
  dirSigners?: Signer[];
  /** Default health gate for every pod's updates (0: only pods annotated podrun.io/rollback-after). */
  rollbackAfterMs?: number;
  /** Directory rescan period (the watcher's safety net). */
  resyncMs?: number;
  urlPeriodMs?: number;
  urlTimeoutMs?: number;
  /** Engine relist period (the event stream's safety net). */
  relistMs?: number;
  removeGraceMs?: number;
  /** Engine calls that create, start, remove or list at once. */
  maxParallel?: number;
  /** Also serve /healthz, /pods, /events on 127.0.0.1:port. */
  httpPort?: number;
  gc?: { periodMs?: number; imagePeriodMs?: number; imageGc?: boolean; containers?: ContainerGcPolicy; images?: ImageGcPolicy };
  backoff?: BackoffPolicy;
  /** What manifests may ask of this node (every source). */
  policy?: PodPolicy;
  log?: Logger;
  /** Node pressure thresholds, in the kubelet's --eviction-hard form (default: the kubelet's). */
  evictionHard?: string;
  /** Resource usage reading period (default 10 s, cAdvisor's housekeeping interval). */
  statsPeriodMs?: number;
}

/**
 * The origin that declares a pod on the engine, as the sources name it: a pod `podrun apply` made
 * (without an agent) carries its file as source and its set as apply-set, and the agent reads
 * that set from the applied directory.
 */
function originOf(o: ObservedPod): string {
  return o.applySet ? `${APPLY_PREFIX}${o.applySet}` : o.source;
}


function redacting(log: Logger): Logger {
  return {
    debug: (msg, f) => log.debug(redactText(msg), f),
    info: (msg, f) => log.info(redactText(msg), f),
    warn: (msg, f) => log.warn(redactText(msg), f),
    error: (msg, f) => log.error(redactText(msg), f),
  };
}


function digestOf(d: DesiredPod): string {
  return JSON.stringify(d.pod);
}

/**
 * `podrun run`: sources feed one desired pod set, and per-pod workers keep the engine converged to
 * it, driven by the engine's events. Stopping the agent leaves the pods running.
 */
export class Agent {
  readonly runtime: PodEngine;
  readonly cache: PodCache;
  private readonly sources: PodSource[];
  private readonly workers: PodWorkers;
  readonly supervisor: PodSupervisor;
  /** What runs: the declared pods, or for a rolled-back update the last version that was Ready. */
  private desired = new Map<string, DesiredPod>();
  private desiredByUid = new Map<string, DesiredPod>();
  /** What the sources declare. */
  private declaredByUid = new Map<string, DesiredPod>();
  private readonly gate: HealthGate;
  private holders = new Map<string, string>();
  private conflicts: Conflict[] = [];
  private readonly reported = new Set<string>();
  private release: (() => void) | undefined;
  /** Sources call back file by file while they first load; the desired set is made once all have. */
  private loaded = false;
  /** Pods that have had a sync with the engine connected since the agent started. */
  private readonly synced = new Set<string>();
  private stopped = false;
  private closeServer: (() => Promise<void>) | undefined;
  private resyncTimer: NodeJS.Timeout | undefined;
  private gcTimers: NodeJS.Timeout[] = [];
  readonly gc: GarbageCollector;
  private readonly log: Logger;
  private readonly metricsRegistry: AgentMetrics;
  private readonly stats: StatsCollector;
  private readonly thresholds: ReadonlyMap<Signal, Threshold>;
  private facts: Awaited<ReturnType<PodEngine['engineFacts']>> | undefined;
  private lastNode: { conditions: NodeCondition[]; cpu: CpuStats } | undefined;
  private readonly startTime = new Date().toISOString();

  constructor(private readonly o: AgentOptions) {
    // Whatever a line quotes (an engine or fetch error naming a URL), credentials never reach the log.
    this.log = redacting(o.log ?? silentLogger);
    const m = new AgentMetrics({
      pods: () => this.cache.pods().map((p) => ({ running: p.sandboxes[0]?.state === 'running', containers: [...p.sandboxes, ...p.containers].map((c) => ({ state: c.state, type: c.type })) })),
      engineConnected: () => this.cache.connected,
      sources: () => this.sources.map((s) => ({ name: s.name, ready: s.ready, errors: s.errors().filter((i) => i.severity === 'error').length })),
      setExpiries: () => this.setExpiries(),
      gc: () => this.gc.counters,
    });
    this.metricsRegistry = m;
    this.gate = new HealthGate({
      stateDir: o.runtime.stateDir,
      defaultMs: o.rollbackAfterMs ?? 0,
      log: this.log,
      engineUp: () => this.cache.connected,
      // Judged the moment it is due, from what the agent knows (a worker's sync under a loaded
      // engine took over a second, which the deadline's verdict does not need).
      due: (uid) => this.judgeDue(uid),
      rolledBack: (pod, message) => {
        this.supervisor.events.record(pod, 'Warning', 'RolledBack', message);
        m.rolledBack(pod.namespace, pod.name);
      },
    });
    // Refused here, before anything starts, so a typo in a threshold is a start-up error.
    this.thresholds = parseEvictionThresholds(o.evictionHard ?? DEFAULT_EVICTION_HARD);
    this.runtime = o.engine ?? new PodRuntime({
      ...o.runtime,
      ...(o.maxParallel ? { engineSlots: o.maxParallel } : {}),
      observer: { call: (what, seconds, failed) => m.engineCall(operationType(what), seconds, failed), pull: (seconds, ok) => m.imagePulled(seconds, ok) },
    });
    // One worker per pod and no bound on them: a pod in its grace period, a hook or a back-off holds
    // nothing of anyone else's. What costs the engine is bounded in the runtime (--max-parallel).
    this.workers = new PodWorkers((uid) => this.syncPod(uid), Number.POSITIVE_INFINITY, (uid, err) => this.log.error(`pod ${this.nameOf(uid)}: ${err.message}`, { pod: this.nameOf(uid) }));
    this.cache = new PodCache(this.runtime, (uid) => this.workers.enqueue(uid), {
      relistMs: o.relistMs ?? 60_000,
      log: this.log,
      onRelisted: (seconds) => m.relisted(seconds),
      onReconnected: () => m.reconnected(),
      onConnected: () => {
        this.log.info(`engine connected at ${this.runtime.endpoint}`);
        void this.runtime.engineFacts().then(
          (f) => (this.facts = f),
          () => undefined,
        );
        this.enqueueAll();
      },
    });
    this.supervisor = new PodSupervisor(
      this.runtime,
      this.cache,
      o.backoff ?? DEFAULT_BACKOFF,
      (uid, after) => this.workers.enqueue(uid, after),
      this.log,
      o.gc?.containers?.maxPerPodContainer ?? 1,
      (n) => {
        this.gc.counters.containersRemoved += n;
      },
      {
        started: (type) => m.containerStarted(type),
        startFailed: (type, reason) => m.containerStartFailed(type, reason),
        restarted: (ns, pod, c) => m.containerRestarted(ns, pod, c),
        probed: (kind, result, seconds, where) => m.probed(kind, result, seconds, where),
      },
    );
    this.stats = new StatsCollector(this.runtime, () => this.cache.pods(), {
      periodMs: o.statsPeriodMs ?? 10_000,
      startedAt: (uid, id) => this.supervisor.startedAt(uid, id),
      onCollected: (seconds, calls) => m.statsCollected(seconds, calls),
    });
    this.gc = new GarbageCollector(this.runtime, {
      stateDir: o.runtime.stateDir,
      pauseImage: o.runtime.pauseImage,
      ...(o.gc?.containers ? { containers: o.gc.containers } : {}),
      ...(o.gc?.images ? { images: o.gc.images } : {}),
      log: this.log,
    });
    const policy = o.policy ?? OPEN_POLICY;
    const checked = (source: string, verified: boolean): void => m.signatureChecked(source, verified);
    // Replay, expiry and node rules on every verified set, recorded in the state dir (freshness.ts).
    const freshness = { store: new FreshnessStore(o.runtime.stateDir, this.log), nodeName: this.runtime.nodeName, onRefused: (source: string, kind: string) => m.setRefused(source, kind) };
    const signatures = (signers: Signer[] | undefined): { signatures?: SignaturePolicy } => (signers ? { signatures: { signers, onCheck: checked, freshness } } : {});
    const dirOpts = { resyncMs: o.resyncMs ?? 20_000, removeGraceMs: o.removeGraceMs ?? 1000, policy, log: this.log, ...signatures(o.dirSigners) };
    this.sources = [
      ...o.manifestDirs.map((d) => new DirectorySource(d, dirOpts)),
      ...o.manifestUrls.map(
        (u) =>
          new UrlSource(u, {
            stateDir: o.runtime.stateDir,
            periodMs: o.urlPeriodMs ?? 20_000,
            timeoutMs: o.urlTimeoutMs ?? 10_000,
            policy,
            ...(o.urlHeaders ? { headers: o.urlHeaders } : {}),
            ...(o.urlCaFile ? { caFile: o.urlCaFile } : {}),
            log: this.log,
            onFetch: (result) => m.fetched(`url:${redactUrl(u)}`, result),
            ...signatures(o.urlSigners),
          }),
      ),
      appliedSource(o.runtime.stateDir, { resyncMs: o.resyncMs ?? 20_000, policy, log: this.log }),
      ...(o.sources ?? []),
    ];
  }

  private nameOf(uid: string): string {
    const d = this.desiredByUid.get(uid);
    if (d) return d.key;
    const o = this.cache.pod(uid);
    return o ? `${o.namespace}/${o.name}` : uid;
  }

  async start(): Promise<void> {
    this.release = await acquireAgentLock(this.o.runtime.stateDir);
    // Its files hold manifests (env values), URL caches and status: for root's eyes only.
    chmodSync(this.o.runtime.stateDir, 0o700);
    // podrun's own directory: made here, so its source is ready at once (a missing directory
    // would leave it "not loaded yet", and with it every deletion of pods no one declares).
    mkdirSync(appliedDir(this.o.runtime.stateDir), { recursive: true });
    this.gate.load();
    await this.cache.start();
    await Promise.all(this.sources.map((s) => s.start(() => this.recompute())));
    this.loaded = true;
    this.recompute();
    this.closeServer = await startServer(this, { stateDir: this.o.runtime.stateDir, ...(this.o.httpPort ? { port: this.o.httpPort } : {}), log: this.log });
    this.resyncTimer = setInterval(() => this.enqueueAll(), timerDelay(this.o.relistMs ?? 60_000));
    this.resyncTimer.unref();
    const every = (ms: number, fn: () => Promise<unknown>): void => {
      const t = setInterval(() => void fn().catch((err: unknown) => this.log.warn(`gc: ${(err as Error).message}`)), timerDelay(ms));
      t.unref();
      this.gcTimers.push(t);
    };
    every(this.o.gc?.periodMs ?? 60_000, () => this.collect(false));
    if (this.o.gc?.imageGc !== false) every(this.o.gc?.imagePeriodMs ?? 300_000, () => this.gc.collectImages(false));
    if (this.runtime.oomScoreFloor > -1000) {
      this.log.warn('this node cannot lower oom_score_adj (no CAP_SYS_RESOURCE): critical, Guaranteed and sandbox containers run at 0 instead of -997/-998');
    }
    this.log.info(`agent started: ${this.sources.map((s) => s.name).join(', ')}`);
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
      if (this.loaded && [...this.desiredByUid.keys()].every((uid) => this.synced.has(uid))) return this.desiredByUid.size;
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** Stops supervising; the pods keep running, as with the kubelet. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.resyncTimer) clearInterval(this.resyncTimer);
    for (const t of this.gcTimers) clearInterval(t);
    this.gate.stop();
    await this.closeServer?.();
    await Promise.all(this.sources.map((s) => s.stop()));
    this.stats.stop();
    this.cache.stop();
    this.supervisor.stop();
    await this.workers.stop();
    this.release?.();
    this.log.info('agent stopped; pods left running');
  }

  /** Resolves when no pod is being synced or waiting to be (for tests and `apply`). */
  idle(): Promise<void> {
    return this.workers.idle();
  }

  desiredPods(): DesiredPod[] {
    return [...this.desired.values()];
  }

  private enqueueAll(): void {
    const uids = new Set([...this.desiredByUid.keys(), ...this.cache.pods().map((p) => p.uid)]);
    for (const uid of uids) this.workers.enqueue(uid);
  }

  /** Merges the sources into the desired set and wakes the workers of the pods that changed. */
  private recompute(): void {
    if (!this.loaded) return;
    // After a restart the engine says who held a contested name: the running pod keeps it.
    const observed = this.cache.pods();
    const holders = new Map(this.holders);
    for (const o of observed) {
      const key = `${o.namespace}/${o.name}`;
      if (!holders.has(key) && o.source) holders.set(key, originOf(o));
    }
    const merged = mergeOrigins(this.sources.flatMap((s) => s.snapshot()), holders);
    for (const c of merged.conflicts) {
      const id = `${c.key}|${c.origins.join('|')}`;
      if (this.reported.has(id)) continue;
      this.reported.add(id);
      this.log.warn(`conflict: pod ${c.key} is declared by ${c.origins.join(' and ')}; keeping the one from ${c.kept}`, { pod: c.key, source: c.kept });
    }
    this.conflicts = merged.conflicts;
    this.recordValidationEvents();
    const before = this.desiredByUid;
    this.declaredByUid = new Map([...merged.pods.values()].map((d) => [d.uid, d]));
    this.desired = new Map([...merged.pods].map(([key, d]) => [key, this.gate.gate(d)]));
    this.desiredByUid = new Map([...this.desired.values()].map((d) => [d.uid, d]));
    this.gate.prune(new Set(this.declaredByUid.keys()), (uid) => this.cache.pod(uid) !== undefined, this.sources.every((s) => s.ready) && this.cache.connected);
    this.holders = new Map([...merged.pods.values()].map((d) => [d.key, d.origin.source]));
    for (const [uid, d] of this.desiredByUid) {
      const prev = before.get(uid);
      if (!prev || digestOf(prev) !== digestOf(d)) this.workers.enqueue(uid);
    }
    for (const uid of before.keys()) {
      if (this.desiredByUid.has(uid)) continue;
      this.supervisor.cancel(uid);
      this.workers.enqueue(uid);
    }
    // Pods on the engine that nothing declares (any more): at start, as soon as their source has
    // loaded, not at the next relist.
    for (const o of observed) if (!this.desiredByUid.has(o.uid) && this.mayDelete(o)) this.workers.enqueue(o.uid);
    this.writeStatus();
  }

  /** An invalid manifest keeps its last good pods; say so on those pods (reason FailedValidation). */
  private recordValidationEvents(): void {
    for (const source of this.sources) {
      const errors = source.errors().filter((i) => i.severity === 'error');
      if (!errors.length) continue;
      for (const { origin, pods } of source.snapshot()) {
        const mine = errors.filter((e) => origin.endsWith(`:${e.file}`));
        for (const e of mine) {
          for (const d of pods) {
            // A refused signature is not a broken manifest: say which, so no one hunts for a typo.
            const reason = isVerificationRefusal(e.message) ? 'FailedVerification' : 'FailedValidation';
            this.supervisor.events.record({ uid: d.uid, name: d.pod.metadata.name, namespace: d.pod.metadata.namespace ?? 'default' }, 'Warning', reason, `${formatIssue(e)} (running the last good version)`);
          }
        }
      }
    }
  }

  private writeStatus(): void {
    const status = {
      pid: process.pid,
      sources: this.sources.map((s) => {
        const signedBy = s.signedBy?.() ?? [];
        const now = Date.now();
        const sets = (s.expiries?.() ?? []).map((e) => ({ origin: e.origin, ...(e.version !== undefined ? { version: e.version } : {}), expires: e.expires.toISOString(), expired: e.expires.getTime() <= now }));
        return { name: s.name, ready: s.ready, errors: s.errors().filter((i) => i.severity === 'error').map(formatIssue), ...(signedBy.length ? { signedBy } : {}), ...(sets.length ? { sets } : {}) };
      }),
      conflicts: this.conflicts,
      desired: [...this.desired.keys()].sort(),
    };
    try {
      writeFileAtomic(join(this.o.runtime.stateDir, 'agent-status.json'), `${JSON.stringify(status, null, 2)}\n`);
    } catch (err) {
      this.log.error(`cannot write status: ${(err as Error).message}`);
    }
  }

  /**
   * A pod not declared anywhere is deleted only once whoever made it has loaded and could read
   * what it made it from (a corrupt or unreadable file protects its pods, as a URL that never
   * answered does).
   */
  private mayDelete(o: ObservedPod): boolean {
    const origin = originOf(o);
    const owner = this.sources.find((s) => s.owns(origin));
    return owner ? owner.canForget(origin) : this.sources.every((s) => s.ready);
  }

  private async syncPod(uid: string): Promise<number | undefined> {
    const t0 = performance.now();
    const deleting = !this.desiredByUid.has(uid);
    const connected = this.cache.connected;
    try {
      return await this.syncPodOnce(uid);
    } finally {
      this.metricsRegistry.podWorked(deleting ? 'delete' : 'sync', (performance.now() - t0) / 1000);
      // A pod that is gone is forgotten, not remembered as synced.
      if (connected && (this.desiredByUid.has(uid) || this.cache.pod(uid))) this.synced.add(uid);
    }
  }

  private async syncPodOnce(uid: string): Promise<number | undefined> {
    if (!this.cache.connected) return 1000;
    const d = this.desiredByUid.get(uid);
    const o = this.cache.pod(uid);
    if (!d) {
      if (!o) {
        // Gone, by whatever hand: nothing of it is kept.
        this.forget(uid);
        return undefined;
      }
      if (!this.mayDelete(o)) return undefined;
      this.log.info(`pod ${o.namespace}/${o.name}: no longer declared; deleting`, { pod: `${o.namespace}/${o.name}` });
      try {
        await this.supervisor.remove(o);
      } finally {
        await this.cache.refreshPod(uid);
      }
      if (!this.cache.pod(uid)) {
        this.log.info(`pod ${o.namespace}/${o.name}: deleted`, { pod: `${o.namespace}/${o.name}` });
        this.forget(uid);
      }
      return undefined;
    }
    const wait = await this.supervisor.sync(d);
    return this.judge(uid, d) ? 0 : wait;
  }

  /**
   * Judges a health-gated update by how the pod does now (unless the sources moved on meanwhile);
   * true when the pod is to run another version from now on.
   */
  private judge(uid: string, d: DesiredPod): boolean {
    const declared = this.declaredByUid.get(uid);
    if (!declared || this.desiredByUid.get(uid) !== d || !this.cache.connected) return false;
    const next = this.gate.gate(declared, { version: this.gate.versionOf(d), readiness: this.supervisor.readiness(d) });
    if (next === d || (next.pod === d.pod && next.origin === d.origin)) return false;
    this.desiredByUid.set(uid, next);
    this.desired.set(next.key, next);
    return true;
  }

  /** An update's deadline came: judged now; the worker runs only to act on a rollback. */
  private judgeDue(uid: string): void {
    const d = this.desiredByUid.get(uid);
    if (!d || !this.cache.connected) {
      this.workers.enqueue(uid);
      return;
    }
    if (this.judge(uid, d)) this.workers.enqueue(uid);
  }

  /** A pod neither declared nor on the engine: everything kept about it goes. */
  private forget(uid: string): void {
    this.gate.forget(uid);
    this.supervisor.forget(uid);
    this.synced.delete(uid);
  }

  /**
   * Entries the agent keeps per pod, by kind, beyond what is declared and what the engine holds:
   * bounded while a pod lives (whatever it does), and nothing once it is gone.
   */
  podState(): Record<string, number> {
    return { ...this.supervisor.stateSize(), ...this.gate.stateSize(), ...this.cache.stateSize(), synced: this.synced.size, workers: this.workers.size };
  }

  /** Every pod the agent knows (desired or present), as v1 Pods with status. */
  async podList(): Promise<Record<string, unknown>[]> {
    const observed = new Map(this.cache.pods().map((p) => [p.uid, p]));
    const uids = new Set([...this.desiredByUid.keys(), ...observed.keys()]);
    const items: Record<string, unknown>[] = [];
    const terminating = terminatingPods(this.o.runtime.stateDir);
    for (const uid of uids) {
      const d = this.desiredByUid.get(uid);
      const o = observed.get(uid) ?? { uid, name: d?.pod.metadata.name ?? '', namespace: d?.pod.metadata.namespace ?? 'default', source: d?.origin.source ?? '', sandboxes: [], containers: [] };
      const view = d ? { ...o, spec: d.pod, source: d.origin.source } : o;
      const status = await this.supervisor.status(d, observed.get(uid));
      if (!status) continue;
      const podIP = await this.supervisor.podIP(view.spec, observed.get(uid));
      const item = toV1Pod(view, status, { hostIP: this.runtime.hostIP, ...(podIP ? { podIP } : {}) }, observed.has(uid) ? terminating.get(uid) : undefined);
      const declared = this.declaredByUid.get(uid);
      const rolledBack = declared ? this.gate.rolledBack(declared) : undefined;
      if (rolledBack) markRolledBack(item, rolledBack);
      items.push(item);
    }
    return items;
  }

  events(uid?: string): PodEvent[] {
    return this.supervisor.events.list(uid);
  }

  healthy(): boolean {
    return this.cache.connected;
  }

  /**
   * One container GC sweep from the cache. Whole pods go only when every source has loaded (else
   * "not desired" may just mean "not read yet").
   */
  async collect(dryRun: boolean): Promise<ContainerGcResult> {
    const ready = this.sources.every((s) => s.ready);
    const pods = this.cache.pods();
    // Protected pods (their source cannot say they are unwanted) count as desired here too.
    const desired = ready ? new Set([...this.desiredByUid.keys(), ...pods.filter((o) => !this.mayDelete(o)).map((o) => o.uid)]) : undefined;
    return this.gc.collectContainers(pods, desired, dryRun);
  }

  async collectImages(dryRun: boolean): Promise<ImageGcResult> {
    return this.gc.collectImages(dryRun);
  }

  /** The node as a v1 Node: addresses, capacity, node info, and conditions from eviction signals. */
  async node(): Promise<Record<string, unknown>> {
    return (await this.nodeNow()).node;
  }

  /** The expiry of every signed set in force that has one. */
  private setExpiries(): SetExpiry[] {
    return this.sources.flatMap((s) => s.expiries?.() ?? []);
  }

  /** The kubelet's Summary API: the node, and every pod from the last resource readings. */
  async statsSummary(): Promise<{ node: NodeSummary; pods: PodStatsV1[] }> {
    return { node: (await this.nodeNow()).summary, pods: (this.o.statsPeriodMs ?? 10_000) > 0 ? await this.stats.summary() : [] };
  }

  private async nodeNow(): Promise<NodeView> {
    // Read once per connection; asked for before that (just after start), read now.
    if (!this.facts && this.cache.connected) this.facts = await this.runtime.engineFacts().catch(() => undefined);
    const v = nodeView({
      rt: this.runtime,
      facts: this.facts,
      stateDir: this.o.runtime.stateDir,
      engineUp: this.cache.connected,
      thresholds: this.thresholds,
      startTime: this.startTime,
      podrunVersion: podrunVersion(),
      pods: this.cache.pods().length,
      ...(this.lastNode ? { previous: this.lastNode.conditions, previousCpu: this.lastNode.cpu } : {}),
      ...(this.o.urlSigners || this.o.dirSigners ? { setExpiries: this.setExpiries() } : {}),
    });
    this.lastNode = { conditions: v.conditions, cpu: v.summary.cpu };
    return v;
  }

  /** The Prometheus exposition of this agent's metrics. */
  async metrics(): Promise<{ contentType: string; text: string }> {
    return { contentType: this.metricsRegistry.contentType, text: await this.metricsRegistry.text() };
  }
}
