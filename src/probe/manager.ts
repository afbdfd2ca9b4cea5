import { timerDelay } from '../base/duration.js';
import type { Logger } from '../log/logger.js';
import type { Container, Probe } from '../manifest/types.js';
import { runHandler, type ExecRunner, type ProbeResult } from './handlers.js';

export type ProbeKind = 'liveness' | 'readiness' | 'startup';

/** One running container that may need probing. */
export interface ProbeTarget {
  uid: string;
  /** The pod's namespace and name, for the prober's metrics. */
  namespace: string;
  pod: string;
  container: Container;
  containerId: string;
  /** Pod IP (the node IP for host-network pods). */
  defaultHost: string;
  /** When the container started (ms since epoch): initialDelaySeconds counts from here. */
  startedAt?: number;
}

/** Every probe run, for metrics: the kubelet's prober_probe_total results. */
export type ProbeObserver = (t: ProbeTarget, kind: ProbeKind, result: 'successful' | 'failed' | 'unknown', seconds: number) => void;

/**
 * Every failed run, below the threshold too: the kubelet's prober records an Unhealthy event for
 * each (pkg/kubelet/prober/prober.go probe), not only for the one that changes the result.
 */
export type ProbeFailureSink = (t: ProbeTarget, kind: ProbeKind, message: string) => void;

export interface ProbeEvent {
  uid: string;
  container: string;
  containerId: string;
  kind: ProbeKind;
  /** The probe's settled result changed to this. */
  ok: boolean;
  message: string;
  /** Probe-level terminationGracePeriodSeconds, for a liveness/startup kill. */
  graceSeconds?: number;
}

interface ContainerProbes {
  started: boolean;
  ready: boolean;
  /** Set when liveness or startup failed: the container must be killed. */
  failed?: ProbeEvent;
  workers: Worker[];
  /** Starts liveness and readiness once startup has succeeded. */
  startMain?: () => void;
  /** The last readiness or startup result, threshold or not: what a not-Ready verdict quotes. */
  last?: { kind: ProbeKind; ok: boolean; message: string };
}

/**
 * One probe of one container, after pkg/kubelet/prober/worker.go: it runs on a ticker, not before
 * the container's StartedAt + initialDelaySeconds, and a result changes only after N identical
 * results in a row. A prober error (the engine could not run an exec) is thrown away, not counted
 * as a failure. The ticker is Go's (run's `probeTicker`): a slow probe does not stretch the
 * period, and ticks that fall while a probe runs are not lost but kept, one at most, so a probe
 * slower than the period is followed at once by the next (kubeadm's etcd: timeout 15 s, period
 * 10 s, a hung one fails 8 times in 120 s, not 155 s).
 */
class Worker {
  private timer: NodeJS.Timeout | undefined;
  private successes = 0;
  private failures = 0;
  private stopped = false;
  /** When the ticker's first tick was: ticks fall at first + k * period. */
  private first = 0;
  /** The last tick taken (k): the one that started a probe, or a later one dropped while it ran. */
  private taken = 0;
  result: boolean | undefined;

  constructor(
    readonly kind: ProbeKind,
    private readonly probe: Probe,
    private readonly target: ProbeTarget,
    private readonly exec: ExecRunner,
    private readonly report: (w: Worker, ok: boolean, message: string) => void,
    private readonly observe: ProbeObserver | undefined,
    initial: boolean | undefined,
    private readonly note?: (ok: boolean, message: string) => void,
    private readonly failed: (err: unknown) => void = () => undefined,
    private readonly failure?: (message: string) => void,
  ) {
    this.result = initial;
  }

  /** Starts ticking; the first probe waits until the container has run for initialDelaySeconds. */
  start(): void {
    const now = Date.now();
    const notBefore = (this.target.startedAt ?? now) + (this.probe.initialDelaySeconds ?? 0) * 1000;
    this.first = Math.max(now, notBefore);
    this.taken = 0;
    this.schedule(this.first - now);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.fire(), timerDelay(ms));
    this.timer.unref();
  }

  private fire(): void {
    // Nobody awaits a tick: one that throws past its own handling (a report into the agent) would
    // reject unheard, the agent's exit, and end this container's probing. It is told and ticks on.
    this.tick().catch((err: unknown) => {
      this.failed(err);
      this.next();
    });
  }

  /** After a probe: a tick already waiting starts the next at once (no timer: Node's shortest is 1 ms); else the next tick's timer. */
  private next(): void {
    if (this.stopped) return;
    const ms = this.nextTick();
    if (ms > 0) this.schedule(ms);
    else this.fire();
  }

  /**
   * How long until the next probe, as Go's ticker hands it out: a tick that fell while the last
   * probe ran waits in the channel (one at most; those after it are dropped), so the next probe
   * starts at once; else the next tick on the grid.
   */
  private nextTick(): number {
    const period = (this.probe.periodSeconds ?? 10) * 1000;
    const now = Date.now();
    const due = Math.floor((now - this.first) / period);
    if (due > this.taken) {
      this.taken = due;
      return 0;
    }
    this.taken++;
    return Math.max(0, this.first + this.taken * period - now);
  }

  private async tick(): Promise<void> {
    let r: ProbeResult;
    const t0 = performance.now();
    try {
      r = await runHandler(this.probe, {
        containerId: this.target.containerId,
        container: this.target.container,
        defaultHost: this.target.defaultHost,
        timeoutMs: timerDelay((this.probe.timeoutSeconds ?? 1) * 1000),
        exec: this.exec,
      });
    } catch {
      // The prober could not probe (an engine error): no verdict on the container.
      this.observe?.(this.target, this.kind, 'unknown', (performance.now() - t0) / 1000);
      this.next();
      return;
    }
    if (this.stopped) return;
    this.observe?.(this.target, this.kind, r.ok ? 'successful' : 'failed', (performance.now() - t0) / 1000);
    this.note?.(r.ok, r.message ?? '');
    // A result changes only after N identical results in a row.
    if (r.ok) {
      this.successes++;
      this.failures = 0;
      if (this.result !== true && this.successes >= (this.probe.successThreshold ?? 1)) {
        this.result = true;
        this.report(this, true, r.message ?? '');
      }
    } else {
      // A failure that cannot be told (its event) is logged; it still counts toward the kill.
      try {
        this.failure?.(r.message);
      } catch (err) {
        this.failed(err);
      }
      this.failures++;
      this.successes = 0;
      if (this.result !== false && this.failures >= (this.probe.failureThreshold ?? 3)) {
        this.result = false;
        this.report(this, false, r.message);
      } else if (this.result === false) {
        this.report(this, false, r.message);
      }
    }
    this.next();
  }
}

/**
 * The prober: a worker per container and probe, as in pkg/kubelet/prober. Initial results are
 * readiness failure, liveness success, startup unknown; liveness and readiness start only once
 * startup has succeeded; after a liveness or startup failure the container's workers stop and
 * wait for its replacement (a new container id).
 */
export class ProbeManager {
  private readonly byId = new Map<string, ContainerProbes>();
  private readonly podIds = new Map<string, Set<string>>();

  constructor(
    private readonly exec: ExecRunner,
    private readonly onEvent: (e: ProbeEvent) => void,
    private readonly observe?: ProbeObserver,
    private readonly log?: Logger,
    private readonly onFailure?: ProbeFailureSink,
  ) {}

  /** Makes the running containers of pod `uid` exactly `targets`: new ones get workers, gone ones lose them. */
  sync(uid: string, targets: ProbeTarget[]): void {
    const wanted = new Set(targets.map((t) => t.containerId));
    const have = this.podIds.get(uid) ?? new Set<string>();
    for (const id of have) if (!wanted.has(id)) this.drop(id);
    for (const t of targets) if (!this.byId.has(t.containerId)) this.add(t);
    this.podIds.set(uid, wanted);
  }

  /** Stops probing one container (it was killed; its replacement gets fresh workers). */
  forget(containerId: string): void {
    this.drop(containerId);
  }

  /** Containers probed, and pods with a set of them. */
  get size(): number {
    return this.byId.size + this.podIds.size;
  }

  removePod(uid: string): void {
    for (const id of this.podIds.get(uid) ?? []) this.drop(id);
    this.podIds.delete(uid);
  }

  stop(): void {
    for (const id of [...this.byId.keys()]) this.drop(id);
    this.podIds.clear();
  }

  /** started: startup passed (or none); ready: started and readiness passed (or none). */
  state(containerId: string): { started: boolean; ready: boolean; failed?: ProbeEvent; last?: { kind: ProbeKind; ok: boolean; message: string } } | undefined {
    const s = this.byId.get(containerId);
    return s ? { started: s.started, ready: s.ready, ...(s.failed ? { failed: s.failed } : {}), ...(s.last ? { last: s.last } : {}) } : undefined;
  }

  private drop(id: string): void {
    const s = this.byId.get(id);
    for (const w of s?.workers ?? []) w.stop();
    this.byId.delete(id);
  }

  private add(t: ProbeTarget): void {
    const c = t.container;
    const s: ContainerProbes = { started: !c.startupProbe, ready: !c.readinessProbe && !c.startupProbe, workers: [] };
    this.byId.set(t.containerId, s);
    const make = (kind: ProbeKind, probe: Probe, initial: boolean | undefined): Worker => {
      const note = kind === 'liveness' ? undefined : (ok: boolean, message: string): void => void (s.last = { kind, ok, message });
      const w = new Worker(
        kind,
        probe,
        t,
        this.exec,
        (worker, ok, message) => this.report(t, s, worker, ok, message),
        this.observe,
        initial,
        note,
        (err) =>
          this.log?.error(`pod ${t.namespace}/${t.pod}: container ${t.container.name} ${kind} probe: ${err instanceof Error ? err.message : String(err)}`, {
            pod: `${t.namespace}/${t.pod}`,
            container: t.container.name,
            probe: kind,
          }),
        this.onFailure ? (message) => this.onFailure?.(t, kind, message) : undefined,
      );
      s.workers.push(w);
      return w;
    };
    const startMain = (): void => {
      if (c.livenessProbe) make('liveness', c.livenessProbe, true).start();
      if (c.readinessProbe) make('readiness', c.readinessProbe, false).start();
      else s.ready = true;
    };
    if (c.startupProbe) {
      make('startup', c.startupProbe, undefined).start();
      s.startMain = startMain;
    } else {
      startMain();
    }
  }

  private report(t: ProbeTarget, s: ContainerProbes, w: Worker, ok: boolean, message: string): void {
    if (!this.byId.has(t.containerId)) return;
    const event: ProbeEvent = { uid: t.uid, container: t.container.name, containerId: t.containerId, kind: w.kind, ok, message };
    const probe = w.kind === 'liveness' ? t.container.livenessProbe : w.kind === 'startup' ? t.container.startupProbe : undefined;
    if (probe?.terminationGracePeriodSeconds !== undefined) event.graceSeconds = probe.terminationGracePeriodSeconds;
    switch (w.kind) {
      case 'startup':
        if (ok) {
          s.started = true;
          w.stop();
          s.startMain?.();
        } else {
          s.failed = event;
          for (const x of s.workers) x.stop();
        }
        break;
      case 'liveness':
        if (!ok) {
          s.failed = event;
          for (const x of s.workers) x.stop();
        }
        break;
      case 'readiness':
        s.ready = ok;
        break;
    }
    this.onEvent(event);
  }
}
