import { escapeLabel } from './text-format.js';

// The kubelet's /metrics/probes (pkg/kubelet/server/server.go registers prober_probe_total,
// prober_probe_duration_seconds and process_start_time_seconds there, and nowhere else), kept as
// plain counters per probe worker: a probe is counted without building or hashing a label set
// (100 probes every 10 s with 50 pods), and a pod's series go with the pod, as the kubelet's
// worker deletes its own when it stops.

export type ProbeResultLabel = 'successful' | 'failed' | 'unknown';

/** prometheus.DefBuckets, which the kubelet's ProberDuration uses (it names none of its own). */
const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export interface ProbedContainer {
  uid: string;
  namespace: string;
  pod: string;
  container: string;
}

interface Series {
  uid: string;
  /** Labels but probe_type and result, written once; the counter's pod_uid label too. */
  labels: string;
  uidLabel: string;
  probeType: string;
  results: Record<ProbeResultLabel, number>;
  buckets: number[];
  sum: number;
  count: number;
}

export class ProbeMetrics {
  private readonly series = new Map<string, Series>();
  private readonly startSeconds = Math.round(Date.now() / 1000 - process.uptime());

  observe(c: ProbedContainer, kind: string, result: ProbeResultLabel, seconds: number): void {
    const key = `${c.uid}\u0000${c.container}\u0000${kind}`;
    let s = this.series.get(key);
    if (!s) {
      s = {
        uid: c.uid,
        labels: `container="${escapeLabel(c.container)}",namespace="${escapeLabel(c.namespace)}",pod="${escapeLabel(c.pod)}"`,
        uidLabel: `pod_uid="${escapeLabel(c.uid)}"`,
        probeType: kind.charAt(0).toUpperCase() + kind.slice(1),
        results: { successful: 0, failed: 0, unknown: 0 },
        buckets: BUCKETS.map(() => 0),
        sum: 0,
        count: 0,
      };
      this.series.set(key, s);
    }
    s.results[result]++;
    for (let i = 0; i < BUCKETS.length; i++) if (seconds <= BUCKETS[i]!) s.buckets[i]!++;
    s.sum += seconds;
    s.count++;
  }

  /** The pod is gone: its series with it. */
  forgetPod(uid: string): void {
    for (const [key, s] of this.series) if (s.uid === uid) this.series.delete(key);
  }

  get size(): number {
    return this.series.size;
  }

  text(): string {
    const total: string[] = [];
    const duration: string[] = [];
    for (const s of this.series.values()) {
      const base = `${s.labels},probe_type="${s.probeType}"`;
      for (const r of ['failed', 'successful', 'unknown'] as const)
        if (s.results[r]) total.push(`prober_probe_total{${base},${s.uidLabel},result="${r}"} ${s.results[r]}`);
      for (let i = 0; i < BUCKETS.length; i++) duration.push(`prober_probe_duration_seconds_bucket{${base},le="${BUCKETS[i]}"} ${s.buckets[i]}`);
      duration.push(
        `prober_probe_duration_seconds_bucket{${base},le="+Inf"} ${s.count}`,
        `prober_probe_duration_seconds_sum{${base}} ${s.sum}`,
        `prober_probe_duration_seconds_count{${base}} ${s.count}`,
      );
    }
    return [
      '# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.',
      '# TYPE process_start_time_seconds gauge',
      `process_start_time_seconds ${this.startSeconds}`,
      '# HELP prober_probe_duration_seconds Duration in seconds for a probe response.',
      '# TYPE prober_probe_duration_seconds histogram',
      ...duration,
      '# HELP prober_probe_total Cumulative number of a liveness, readiness or startup probe for a container by result.',
      '# TYPE prober_probe_total counter',
      ...total,
      '',
    ].join('\n');
  }
}
