import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { ProbeMetrics } from '../../src/metrics/probe-metrics.js';

// /metrics/probes as the kubelet serves it: the prober's counter and duration histogram per
// probe worker, the process start time, clean for promtool; a removed pod's series go with it.

const web = { uid: 'u-1', namespace: 'demo', pod: 'web', container: 'srv' };
const other = { uid: 'u-2', namespace: 'demo', pod: 'db', container: 'pg"sql' };

describe('ProbeMetrics', () => {
  it('counts results and durations per worker, cumulative buckets, and is clean for promtool', () => {
    const m = new ProbeMetrics();
    m.observe(web, 'liveness', 'successful', 0.005); // on a bound: counted in it (le)
    m.observe(web, 'liveness', 'successful', 0.2);
    m.observe(web, 'liveness', 'failed', 1.5);
    m.observe(web, 'readiness', 'unknown', 0.02);
    m.observe(other, 'startup', 'successful', 30);
    const text = m.text();
    const l = 'container="srv",namespace="demo",pod="web",probe_type="Liveness"';
    expect(text).toContain(`prober_probe_total{${l},pod_uid="u-1",result="successful"} 2\n`);
    expect(text).toContain(`prober_probe_total{${l},pod_uid="u-1",result="failed"} 1\n`);
    expect(text).not.toContain(`prober_probe_total{${l},pod_uid="u-1",result="unknown"}`);
    expect(text).toContain(`prober_probe_duration_seconds_bucket{${l},le="0.005"} 1\n`);
    expect(text).toContain(`prober_probe_duration_seconds_bucket{${l},le="0.25"} 2\n`);
    expect(text).toContain(`prober_probe_duration_seconds_bucket{${l},le="2.5"} 3\n`);
    expect(text).toContain(`prober_probe_duration_seconds_bucket{${l},le="+Inf"} 3\n`);
    expect(text).toContain(`prober_probe_duration_seconds_count{${l}} 3\n`);
    expect(text).toContain(`prober_probe_duration_seconds_sum{${l}} ${0.005 + 0.2 + 1.5}\n`);
    // Longer than the last bucket: only in +Inf.
    expect(text).toContain('prober_probe_duration_seconds_bucket{container="pg\\"sql",namespace="demo",pod="db",probe_type="Startup",le="10"} 0\n');
    expect(text).toMatch(/^process_start_time_seconds \d{10}$/m);
    const r = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
    expect(`${r.stdout}${r.stderr}`).toBe('');
    expect(r.status).toBe(0);
  });

  it("drops a removed pod's series and keeps the others", () => {
    const m = new ProbeMetrics();
    m.observe(web, 'liveness', 'successful', 0.01);
    m.observe(web, 'readiness', 'successful', 0.01);
    m.observe(other, 'liveness', 'successful', 0.01);
    expect(m.size).toBe(3);
    m.forgetPod('u-1');
    expect(m.size).toBe(1);
    expect(m.text()).not.toContain('pod="web"');
    expect(m.text()).toContain('pod="db"');
  });
});
