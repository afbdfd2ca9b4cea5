import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { cadvisorMetrics, resourceMetrics } from '../../src/stats/container-metrics.js';
import type { ContainerSample } from '../../src/stats/summary.js';
import { memoryReading } from '../../src/runtime/cgroup-stats.js';
import type { ContainerReading } from '../../src/runtime/runtime-types.js';

// The kubelet's container endpoints from plain readings: names, types, labels and values, and
// what promtool (Prometheus's own checker) says of the text.

const stats = (cpuNs: number, usage: number, inactive: number, extra: Partial<ContainerReading> = {}): ContainerReading => ({
  time: '2026-12-01T10:00:00.000Z',
  cpu: { usageNs: cpuNs, userNs: cpuNs * 0.8, systemNs: cpuNs * 0.2 },
  memory: memoryReading(usage, 9223372036854771712, { total_inactive_file: inactive, total_rss: usage / 2, total_cache: usage / 4 }),
  ...extra,
});

const pod = { name: 'web', namespace: 'demo', uid: 'u-1' };
const samples: ContainerSample[] = [
  {
    id: 'sb',
    name: 'POD',
    type: 'sandbox',
    pod,
    image: 'registry.k8s.io/pause:3.10',
    engineName: 'k8s_POD_web_demo',
    startedAt: '2026-12-01T09:00:00Z',
    stats: stats(1e8, 1e6, 0, {
      networks: { eth0: { rxBytes: 1000, txBytes: 2000, rxErrors: 0, txErrors: 1, rxPackets: 10, txPackets: 20, rxDropped: 0, txDropped: 0 } },
    }),
  },
  {
    id: 'app1',
    name: 'app',
    type: 'app',
    pod,
    image: 'nginx:1.27',
    engineName: 'k8s_app_web_demo',
    startedAt: '2026-12-01T09:00:01Z',
    stats: stats(3e9, 50e6, 10e6),
  },
  { id: 'side', name: 'log"shipper', type: 'app', pod, image: 'busybox', engineName: 'k8s_side', stats: stats(1e9, 20e6, 0) },
];

function promtool(text: string): { status: number | null; out: string } {
  const r = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

describe('/metrics/cadvisor', () => {
  const text = cadvisorMetrics(samples, { cgroupOf: (id) => `/docker/${id}` });

  it('has cAdvisor\'s series per container, the sandbox as POD, and the pod\'s sums with container=""', () => {
    expect(text).toContain('# TYPE container_cpu_usage_seconds_total counter');
    expect(text).toContain(
      'container_cpu_usage_seconds_total{container="app",id="/docker/app1",image="nginx:1.27",name="k8s_app_web_demo",namespace="demo",pod="web"} 3 1796119200000',
    );
    expect(text).toContain(
      'container_cpu_usage_seconds_total{container="POD",id="/docker/sb",image="registry.k8s.io/pause:3.10",name="k8s_POD_web_demo",namespace="demo",pod="web"} 0.1',
    );
    expect(text).toContain('container_cpu_usage_seconds_total{container="",id="/podrun/podu-1",image="",name="",namespace="demo",pod="web"} 4.1');
    expect(text).toContain(
      'container_memory_working_set_bytes{container="app",id="/docker/app1",image="nginx:1.27",name="k8s_app_web_demo",namespace="demo",pod="web"} 40000000',
    );
    expect(text).toContain('container_memory_working_set_bytes{container="",id="/podrun/podu-1",image="",name="",namespace="demo",pod="web"} 61000000');
    expect(text).toContain(
      'container_spec_memory_limit_bytes{container="app",id="/docker/app1",image="nginx:1.27",name="k8s_app_web_demo",namespace="demo",pod="web"} 0',
    );
    expect(text).toContain(
      'container_network_receive_bytes_total{container="",id="/podrun/podu-1",image="",name="",namespace="demo",pod="web",interface="eth0"} 1000',
    );
    expect(text).toContain(
      'container_start_time_seconds{container="app",id="/docker/app1",image="nginx:1.27",name="k8s_app_web_demo",namespace="demo",pod="web"} 1796115601',
    );
    // A label value is escaped, never breaks the line.
    expect(text).toContain('container="log\\"shipper"');
    expect(text).not.toMatch(/network_receive_bytes_total\{container="app"/);
  });

  it("has the filesystem usage (writable layer and logs) on the engine's device, only when that device is known", () => {
    const withDisk = samples.map((s) => (s.id === 'app1' ? { ...s, rootfsBytes: 4096, logsBytes: 1000 } : s.id === 'side' ? { ...s, rootfsBytes: 100 } : s));
    const fs = cadvisorMetrics(withDisk, { cgroupOf: (id) => `/docker/${id}`, fsDevice: '/dev/vdb1' });
    expect(fs).toContain(
      'container_fs_usage_bytes{container="app",id="/docker/app1",image="nginx:1.27",name="k8s_app_web_demo",namespace="demo",pod="web",device="/dev/vdb1"} 5096',
    );
    expect(fs).toContain('container_fs_usage_bytes{container="",id="/podrun/podu-1",image="",name="",namespace="demo",pod="web",device="/dev/vdb1"} 5196');
    // The sandbox had no disk reading: no series rather than a zero.
    expect(fs).not.toMatch(/container_fs_usage_bytes\{container="POD"/);
    expect(promtool(fs).status).toBe(0);
    expect(cadvisorMetrics(withDisk, { cgroupOf: (id) => `/docker/${id}` })).not.toMatch(/^container_fs_usage_bytes\{/m);
  });

  it('is clean for promtool', () => {
    const r = promtool(text);
    expect(r.out).toBe('');
    expect(r.status).toBe(0);
  });
});

describe('/metrics/resource', () => {
  const text = resourceMetrics(samples, { time: '2026-12-01T10:00:00.000Z', usageCoreNanoSeconds: 7.5e12, workingSetBytes: 2e9 }, false);

  it("has the node, each container (not the sandbox) and each pod, by the kubelet's names", () => {
    expect(text).toContain('node_cpu_usage_seconds_total{} 7500 1796119200000');
    expect(text).toContain('node_memory_working_set_bytes{} 2000000000');
    expect(text).toContain('container_cpu_usage_seconds_total{container="app",namespace="demo",pod="web"} 3 1796119200000');
    expect(text).toContain('container_memory_working_set_bytes{container="app",namespace="demo",pod="web"} 40000000');
    expect(text).not.toContain('container="POD"');
    expect(text).toContain('pod_cpu_usage_seconds_total{namespace="demo",pod="web"} 4.1');
    expect(text).toContain('pod_memory_working_set_bytes{namespace="demo",pod="web"} 61000000');
    expect(text).toContain('scrape_error{} 0');
    expect(resourceMetrics([], undefined, true)).toContain('scrape_error{} 1');
  });

  it('is clean for promtool', () => {
    const r = promtool(text);
    expect(r.out).toBe('');
    expect(r.status).toBe(0);
  });
});
