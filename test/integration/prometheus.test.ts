import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AgentProcess } from './agent-helpers.js';
import { freePort, TEST_IMAGE, unique, until, World } from './helpers.js';
import { untilPod } from './lifecycle-helpers.js';

// A real Prometheus server (Debian's) scrapes the agent's /metrics/cadvisor and /metrics/resource
// with a plain static config, and the queries dashboards use answer with what the test makes its
// containers do: one burns CPU under a 300m limit, one fills 64 MiB of a memory-backed emptyDir.

const world = new World();
const ns = unique('prom');
let prometheus: ChildProcess | undefined;
let agent: AgentProcess | undefined;

afterAll(async () => {
  prometheus?.kill('SIGKILL');
  await agent?.stop();
  await world.cleanup();
});

function get(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, timeout: 5000 }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.end();
  });
}

async function query(port: number, promql: string): Promise<{ metric: Record<string, string>; value: [number, string] }[]> {
  const r = await get(port, `/api/v1/query?query=${encodeURIComponent(promql)}`);
  const body = JSON.parse(r.body) as { status: string; data?: { result: { metric: Record<string, string>; value: [number, string] }[] }; error?: string };
  if (body.status !== 'success') throw new Error(`${promql}: ${body.error ?? r.body}`);
  return body.data?.result ?? [];
}

describe('Prometheus scraping the kubelet\'s container endpoints', () => {
  it('answers the dashboards\' queries with what the containers do', async () => {
    const dir = join(world.dir, 'manifests');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'pods.yaml'), `apiVersion: v1
kind: Pod
metadata: {name: burn, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - name: cpu
    image: ${TEST_IMAGE}
    command: [sh, -c, 'while :; do :; done']
    resources: {limits: {cpu: 300m, memory: 64Mi}}
---
apiVersion: v1
kind: Pod
metadata: {name: hog, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 0
  volumes: [{name: m, emptyDir: {medium: Memory}}]
  containers:
  - name: mem
    image: ${TEST_IMAGE}
    command: [sh, -c, 'head -c 67108864 /dev/zero > /m/fill; echo filled; sleep 3600']
    volumeMounts: [{name: m, mountPath: /m}]
`);
    const port = await freePort();
    agent = new AgentProcess(world.stateDir, ['--manifest-dir', dir, '--http-port', String(port), '--housekeeping-interval', '1s']);
    await agent.started();
    await untilPod(world, ns, 'burn', 'burn running', (p) => p.status.containerStatuses?.[0]?.state.running !== undefined, 40_000);
    await untilPod(world, ns, 'hog', 'hog running', (p) => p.status.containerStatuses?.[0]?.state.running !== undefined, 40_000);

    // The endpoints answer on their own first (what Prometheus will read).
    const cadvisor = await get(port, '/metrics/cadvisor');
    expect(cadvisor.status).toBe(200);
    expect(cadvisor.body).toContain('# TYPE container_cpu_usage_seconds_total counter');
    // Its writable layer and logs, on the device under the engine's root directory.
    expect(cadvisor.body).toMatch(new RegExp(`^container_fs_usage_bytes\\{container="mem",[^}]*namespace="${ns}",pod="hog",device="[^"]+"\\} \\d+ \\d+$`, 'm'));
    expect((await get(port, '/metrics/resource')).body).toContain('# TYPE pod_memory_working_set_bytes gauge');
    expect((await get(port, '/metrics/probes')).body).toContain('prober_probe_total');
    // Read from cgroupfs, as cAdvisor reads them: the engine's stats API was never asked.
    const own = (await get(port, '/metrics')).body;
    expect(Number(/^podrun_stats_collection_duration_seconds_count (\d+)/m.exec(own)?.[1])).toBeGreaterThan(0);
    expect(own).toMatch(/^podrun_stats_engine_calls_total 0$/m);

    const promPort = await freePort();
    const promDir = join(world.dir, 'prometheus');
    mkdirSync(join(promDir, 'data'), { recursive: true });
    const job = (name: string) => `- job_name: ${name}\n  metrics_path: /metrics/${name}\n  static_configs: [{targets: ['127.0.0.1:${port}']}]\n`;
    writeFileSync(join(promDir, 'prometheus.yml'), `global: {scrape_interval: 2s, scrape_timeout: 2s, evaluation_interval: 2s}\nscrape_configs:\n${job('cadvisor')}${job('resource')}`);
    let promLog = '';
    prometheus = spawn('prometheus', [`--config.file=${join(promDir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(promDir, 'data')}`, `--web.listen-address=127.0.0.1:${promPort}`], { stdio: ['ignore', 'pipe', 'pipe'] });
    prometheus.stderr?.on('data', (c: Buffer) => (promLog = (promLog + c.toString()).slice(-4000)));
    await until(`prometheus to be ready (${promLog})`, async () => ((await get(promPort, '/-/ready').catch(() => undefined))?.status === 200 ? true : undefined), 30_000);

    const up = await until('both targets up', async () => {
      const r = await query(promPort, 'up');
      return r.length === 2 && r.every((s) => s.value[1] === '1') ? r : undefined;
    }, 30_000);
    expect(up.map((s) => s.metric.job).sort()).toEqual(['cadvisor', 'resource']);

    // CPU: the burner at its 300m limit, the sleeper near nothing. rate() over [1m] reads low
    // until a series is a minute old (Prometheus extrapolates only half an interval past its
    // first sample): wait for the window to fill.
    const cpu = await until('a full minute of CPU rates for both pods', async () => {
      // The resource endpoint has a series of the same name: dashboards name the cAdvisor scrape.
      const r = await query(promPort, `sum by (pod) (rate(container_cpu_usage_seconds_total{job="cadvisor",container!="",namespace="${ns}"}[1m]))`);
      const by = Object.fromEntries(r.map((s) => [s.metric.pod, Number(s.value[1])]));
      const filled = await query(promPort, `count_over_time(node_cpu_usage_seconds_total[1m])`);
      // 20 of the minute's 30 scrapes: a loaded machine may miss a few.
      return by.burn !== undefined && by.hog !== undefined && Number(filled[0]?.value[1] ?? 0) >= 20 ? by : undefined;
    }, 120_000);
    // At its limit when it gets the CPU; the suite shares two cores, so well above nothing is enough.
    expect(cpu.burn).toBeGreaterThan(0.1);
    expect(cpu.burn).toBeLessThan(0.34);
    expect(cpu.hog).toBeLessThan(0.05);

    // Memory: the 64 MiB the container wrote to its memory-backed volume is in its working set.
    const mem = await until('the hog\'s working set', async () => {
      const r = await query(promPort, `container_memory_working_set_bytes{job="cadvisor",namespace="${ns}",pod="hog",container="mem"}`);
      return r[0] ? Number(r[0].value[1]) : undefined;
    }, 20_000);
    expect(mem).toBeGreaterThan(64 * 2 ** 20);
    expect(mem).toBeLessThan(100 * 2 ** 20);

    // The resource endpoint's pod series, as `kubectl top` and the metrics-server read them.
    const podMem = await until('pod_memory_working_set_bytes', async () => {
      const r = await query(promPort, `pod_memory_working_set_bytes{namespace="${ns}",pod="hog"}`);
      return r[0] ? Number(r[0].value[1]) : undefined;
    }, 20_000);
    expect(podMem).toBeGreaterThanOrEqual(mem);
    const nodeCpu = await query(promPort, 'rate(node_cpu_usage_seconds_total[1m])');
    expect(Number(nodeCpu[0]?.value[1])).toBeGreaterThan(cpu.burn * 0.9);
  }, 240_000);
});
