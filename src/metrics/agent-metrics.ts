/**
 * The agent's Prometheus metrics (prom-client, on a registry of its own), named after what the
 * kubelet exposes for the same things (pkg/kubelet/metrics/metrics.go and the prober's
 * prober_probe_total), with podrun_ in place of kubelet_. The rest of the agent reports through
 * the plain callbacks below, so no other module loads prom-client.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { ProbeMetrics } from './probe-metrics.js';

/** What the scrape reads from the agent's own state at that moment. */
export interface MetricsView {
  /** Each pod: whether its sandbox is ready, and its containers (sandboxes are not containers). */
  pods(): { running: boolean; containers: { state: string; type: string }[] }[];
  engineConnected(): boolean;
  sources(): { name: string; ready: boolean; errors: number }[];
  /** The expiry of every signed set in force that has one. */
  setExpiries?(): { origin: string; expires: Date }[];
  gc(): { containersRemoved: number; podsRemoved: number; imagesRemoved: number; imageBytesFreed: number };
}

export type FetchResult = 'ok' | 'not_modified' | 'error';

/** The kubelet's buckets for operations that take from milliseconds to minutes. */
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

export class AgentMetrics {
  readonly registry = new Registry();
  private readonly startedContainers: Counter<'container_type'>;
  private readonly startedContainerErrors: Counter<'container_type' | 'code'>;
  private readonly restarts: Counter<'namespace' | 'pod' | 'container'>;
  /** The prober's series: not in /metrics, only at /metrics/probes, as the kubelet serves them. */
  readonly probes = new ProbeMetrics();
  private readonly podWorker: Histogram<'operation'>;
  private readonly relist: Histogram;
  private readonly runtimeOps: Counter<'operation_type'>;
  private readonly runtimeErrors: Counter<'operation_type'>;
  private readonly runtimeDuration: Histogram<'operation_type'>;
  private readonly imagePull: Histogram<'result'>;
  private readonly fetches: Counter<'source' | 'result'>;
  private readonly signatureChecks: Counter<'source' | 'result'>;
  private readonly setRefusals: Counter<'source' | 'reason'>;
  private readonly rollbacks: Counter<'namespace' | 'pod'>;
  private readonly reconnects: Counter;
  private readonly statsDuration: Histogram;
  private readonly statsCalls: Counter;

  constructor(view: MetricsView) {
    const registers = [this.registry];
    // The event-loop delay histogram samples every 10 ms by default: 100 wake-ups a second, a
    // visible share of an idle agent's 1 % budget. A tenth of that still shows a stalled loop.
    collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: 100 });
    // Gauges named like counters, which promtool's lint refuses; the per-type gauges without the
    // suffix carry the same numbers.
    for (const n of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) this.registry.removeSingleMetric(n);
    new Gauge({
      name: 'podrun_running_pods',
      help: 'Pods with a running sandbox.',
      registers,
      collect() {
        this.set(view.pods().filter((p) => p.running).length);
      },
    });
    new Gauge({
      name: 'podrun_running_containers',
      help: 'Containers podrun made (sandboxes not counted), by state.',
      labelNames: ['container_state'],
      registers,
      collect() {
        const by = new Map<string, number>([
          ['created', 0],
          ['running', 0],
          ['exited', 0],
          ['unknown', 0],
        ]);
        for (const p of view.pods()) {
          for (const c of p.containers) {
            const s = by.has(c.state) ? c.state : 'unknown';
            by.set(s, (by.get(s) ?? 0) + 1);
          }
        }
        this.reset();
        for (const [state, n] of by) this.set({ container_state: state }, n);
      },
    });
    new Gauge({
      name: 'podrun_engine_connected',
      help: "Whether the agent follows the engine's event stream now (1) or is reconnecting (0).",
      registers,
      collect() {
        this.set(view.engineConnected() ? 1 : 0);
      },
    });
    new Gauge({
      name: 'podrun_source_errors',
      help: 'Manifests a source cannot take now (invalid, unreadable, refused); their last good pods keep running.',
      labelNames: ['source'],
      registers,
      collect() {
        this.reset();
        for (const s of view.sources()) this.set({ source: s.name }, s.errors);
      },
    });
    new Gauge({
      name: 'podrun_source_ready',
      help: 'Whether a source has loaded (1) or not yet (0).',
      labelNames: ['source'],
      registers,
      collect() {
        this.reset();
        for (const s of view.sources()) this.set({ source: s.name }, s.ready ? 1 : 0);
      },
    });
    new Gauge({
      name: 'podrun_manifest_set_expiry_timestamp_seconds',
      help: 'When each signed set in force expires (its podrun-set header); past it the set keeps running and the node reports ManifestSetExpired.',
      labelNames: ['source'],
      registers,
      collect() {
        this.reset();
        for (const e of view.setExpiries?.() ?? []) this.set({ source: e.origin }, e.expires.getTime() / 1000);
      },
    });
    new Gauge({
      name: 'podrun_manifest_set_expired',
      help: 'Whether a signed set in force has expired (1) and is still run (a clock never takes pods down).',
      labelNames: ['source'],
      registers,
      collect() {
        this.reset();
        const now = Date.now();
        for (const e of view.setExpiries?.() ?? []) this.set({ source: e.origin }, e.expires.getTime() <= now ? 1 : 0);
      },
    });
    const gcCounter = (name: string, help: string, pick: (g: ReturnType<MetricsView['gc']>) => number): void => {
      // A counter the collector keeps: the scrape reads its running total.
      new Counter({
        name,
        help,
        registers,
        collect() {
          this.reset();
          this.inc(pick(view.gc()));
        },
      });
    };
    gcCounter('podrun_gc_containers_removed_total', 'Dead containers removed by garbage collection.', (g) => g.containersRemoved);
    gcCounter('podrun_gc_pods_removed_total', 'Pods whose every container garbage collection removed.', (g) => g.podsRemoved);
    gcCounter('podrun_gc_images_removed_total', 'Unused images removed by image garbage collection.', (g) => g.imagesRemoved);
    gcCounter('podrun_gc_image_freed_bytes_total', 'Bytes of images removed by image garbage collection.', (g) => g.imageBytesFreed);

    this.startedContainers = new Counter({
      name: 'podrun_started_containers_total',
      help: 'Containers started, by type (sandbox, init, app).',
      labelNames: ['container_type'],
      registers,
    });
    this.startedContainerErrors = new Counter({
      name: 'podrun_started_containers_errors_total',
      help: 'Containers that failed to be created or started, by type and reason.',
      labelNames: ['container_type', 'code'],
      registers,
    });
    this.restarts = new Counter({
      name: 'podrun_container_restarts_total',
      help: 'Restarts of a container after it exited or a probe killed it.',
      labelNames: ['namespace', 'pod', 'container'],
      registers,
    });
    this.podWorker = new Histogram({
      name: 'podrun_pod_worker_duration_seconds',
      help: 'How long one pod sync (or deletion) took, grace periods included.',
      labelNames: ['operation'],
      buckets: DURATION_BUCKETS,
      registers,
    });
    this.relist = new Histogram({
      name: 'podrun_pleg_relist_duration_seconds',
      help: 'How long a full relist of the engine took.',
      buckets: DURATION_BUCKETS,
      registers,
    });
    this.runtimeOps = new Counter({ name: 'podrun_runtime_operations_total', help: 'Engine calls, by operation.', labelNames: ['operation_type'], registers });
    this.runtimeErrors = new Counter({
      name: 'podrun_runtime_operations_errors_total',
      help: 'Engine calls that failed, by operation.',
      labelNames: ['operation_type'],
      registers,
    });
    this.runtimeDuration = new Histogram({
      name: 'podrun_runtime_operations_duration_seconds',
      help: 'How long engine calls took, by operation.',
      labelNames: ['operation_type'],
      buckets: DURATION_BUCKETS,
      registers,
    });
    this.imagePull = new Histogram({
      name: 'podrun_image_pull_duration_seconds',
      help: 'How long image pulls took, by result.',
      labelNames: ['result'],
      buckets: [0.5, 1, 5, 10, 30, 60, 120, 300, 600],
      registers,
    });
    this.fetches = new Counter({
      name: 'podrun_url_fetches_total',
      help: 'Fetches of manifest URLs, by result (ok, not_modified: a 304, error).',
      labelNames: ['source', 'result'],
      registers,
    });
    this.rollbacks = new Counter({
      name: 'podrun_pod_rollbacks_total',
      help: 'Health-gated updates that were not Ready in time and went back to the last Ready version.',
      labelNames: ['namespace', 'pod'],
      registers,
    });
    this.signatureChecks = new Counter({
      name: 'podrun_manifest_signature_checks_total',
      help: 'Signature checks of manifests (URL sets, directory files, the URL cache), by result (verified, refused).',
      labelNames: ['source', 'result'],
      registers,
    });
    this.setRefusals = new Counter({
      name: 'podrun_manifest_set_refusals_total',
      help: 'Verified sets refused by their header, by reason: replay (superseded or older), expired, node (signed for another node), header (malformed).',
      labelNames: ['source', 'reason'],
      registers,
    });
    this.statsDuration = new Histogram({
      name: 'podrun_stats_collection_duration_seconds',
      help: "How long one reading of every running container's resource usage took.",
      buckets: DURATION_BUCKETS,
      registers,
    });
    this.statsCalls = new Counter({
      name: 'podrun_stats_engine_calls_total',
      help: 'Engine stats calls made to read resource usage: none while readings come from cgroupfs (a local engine), else one per running container per period.',
      registers,
    });
    this.reconnects = new Counter({
      name: 'podrun_engine_event_stream_reconnects_total',
      help: "Times the engine's event stream was lost and followed again.",
      registers,
    });
  }

  containerStarted(type: string): void {
    this.startedContainers.inc({ container_type: type });
  }

  containerStartFailed(type: string, code: string): void {
    this.startedContainerErrors.inc({ container_type: type, code });
  }

  containerRestarted(namespace: string, pod: string, container: string): void {
    this.restarts.inc({ namespace, pod, container });
  }

  podWorked(operation: 'sync' | 'delete', seconds: number): void {
    this.podWorker.observe({ operation }, seconds);
  }

  relisted(seconds: number): void {
    this.relist.observe(seconds);
  }

  engineCall(operation: string, seconds: number, failed: boolean): void {
    this.runtimeOps.inc({ operation_type: operation });
    this.runtimeDuration.observe({ operation_type: operation }, seconds);
    if (failed) this.runtimeErrors.inc({ operation_type: operation });
  }

  imagePulled(seconds: number, ok: boolean): void {
    this.imagePull.observe({ result: ok ? 'ok' : 'error' }, seconds);
  }

  fetched(source: string, result: FetchResult): void {
    this.fetches.inc({ source, result });
  }

  rolledBack(namespace: string, pod: string): void {
    this.rollbacks.inc({ namespace, pod });
  }

  signatureChecked(source: string, verified: boolean): void {
    this.signatureChecks.inc({ source, result: verified ? 'verified' : 'refused' });
  }

  setRefused(source: string, reason: string): void {
    this.setRefusals.inc({ source, reason });
  }

  statsCollected(seconds: number, calls: number): void {
    this.statsDuration.observe(seconds);
    this.statsCalls.inc(calls);
  }

  reconnected(): void {
    this.reconnects.inc();
  }

  async text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}

/** An engine call's kind from its description: "create container web of ns/p" → create_container. */
export function operationType(what: string): string {
  const m = /^(\w+)(?: (\w+))?/.exec(what);
  return m ? (m[2] ? `${m[1]}_${m[2]}` : m[1]!) : 'unknown';
}
