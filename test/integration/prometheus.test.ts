import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AgentProcess } from './agent-helpers.js';
import { containerIds, docker, freePort, TEST_IMAGE, unique, until, World } from './helpers.js';
import { untilPod } from './lifecycle-helpers.js';

// A real Prometheus server (Debian's) scrapes the agent's /metrics/cadvisor and /metrics/resource
// with a plain static config, and the queries dashboards use answer with what the test makes its
// containers do: one burns CPU under a 100m limit, one fills 64 MiB of a memory-backed emptyDir,
// one writes to disk with fsync, and one has a child killed for memory every few seconds. The
// PromQL has the shape of kubernetes-mixin's "Compute Resources / Pod" panels and its
// CPUThrottlingHigh alert, loaded as a rule.

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

describe("Prometheus scraping the kubelet's container endpoints", () => {
  it("answers the dashboards' queries with what the containers do", async () => {
    const dir = join(world.dir, 'manifests');
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, 'pods.yaml'),
      `apiVersion: v1
kind: Pod
metadata: {name: burn, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - name: cpu
    image: ${TEST_IMAGE}
    # Two spinners under 100m: its 10 ms a period is spent early in each. The only spinner of
    # the test: under the weight of a 100m request, other busy containers would starve it
    # below its quota (on a shared machine, spinners beside it took its throttling under 0.4).
    command: [sh, -c, 'while :; do :; done & while :; do :; done']
    resources: {limits: {cpu: 100m, memory: 64Mi}}
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
---
apiVersion: v1
kind: Pod
metadata: {name: writer, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - name: disk
    image: ${TEST_IMAGE}
    command: [sh, -c, 'while :; do dd if=/dev/zero of=/tmp/out bs=1M count=4 conv=fsync 2>/dev/null; sleep 1; done']
    resources: {limits: {cpu: '1', memory: 64Mi}}
---
apiVersion: v1
kind: Pod
metadata: {name: oom, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - name: leak
    image: ${TEST_IMAGE}
    # The child outgrows the limit and the kernel kills it; the container's shell lives on.
    command: [sh, -c, 'while :; do sh -c "x=\\$(head -c 60000000 /dev/zero | tr \\"\\\\\\\\0\\" a)"; sleep 3; done']
    resources: {limits: {memory: 32Mi}}
`,
    );
    const port = await freePort();
    agent = new AgentProcess(world.stateDir, ['--manifest-dir', dir, '--http-port', String(port), '--housekeeping-interval', '1s']);
    await agent.started();
    await untilPod(world, ns, 'burn', 'burn running', (p) => p.status.containerStatuses?.[0]?.state.running !== undefined, 40_000);
    await untilPod(world, ns, 'hog', 'hog running', (p) => p.status.containerStatuses?.[0]?.state.running !== undefined, 40_000);
    await untilPod(world, ns, 'writer', 'writer running', (p) => p.status.containerStatuses?.[0]?.state.running !== undefined, 40_000);
    await untilPod(world, ns, 'oom', 'oom running', (p) => p.status.containerStatuses?.[0]?.state.running !== undefined, 40_000);
    // cgroup v1 on recent kernels (6.18 here) counts blkio.throttle.* only on a device with a
    // throttle rule; an operator who wants the IO panels sets one that never binds, as here on
    // the writer's own cgroup (1 TiB/s on the engine's disk). v2's io.stat needs none.
    const writerId = (await containerIds(ns, 'writer')).disk!;
    const blkio = `/sys/fs/cgroup/blkio/docker/${writerId}/blkio.throttle.write_bps_device`;
    if (existsSync(blkio)) {
      const dev = statSync(String((await docker.info()).DockerRootDir)).dev;
      writeFileSync(blkio, `${Math.floor(dev / 256) & 0xfff}:${(dev & 0xff) | ((dev >> 12) & 0xfff00)} 1099511627776`);
    }

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
    // kubernetes-mixin's CPUThrottlingHigh, its job selector naming this scrape.
    writeFileSync(
      join(promDir, 'rules.yml'),
      `groups:
- name: kubernetes-resources
  rules:
  - alert: CPUThrottlingHigh
    expr: |
      sum(increase(container_cpu_cfs_throttled_periods_total{container!="", job="cadvisor"}[1m])) without (id, metrics_path, name, image, endpoint, job, node)
        / on (cluster, namespace, pod, container, instance) group_left
      sum(increase(container_cpu_cfs_periods_total{job="cadvisor"}[1m])) without (id, metrics_path, name, image, endpoint, job, node)
        > ( 25 / 100 )
    for: 15m
`,
    );
    expect(spawnSync('promtool', ['check', 'rules', join(promDir, 'rules.yml')], { encoding: 'utf8' }).status).toBe(0);
    writeFileSync(
      join(promDir, 'prometheus.yml'),
      `global: {scrape_interval: 2s, scrape_timeout: 2s, evaluation_interval: 2s}\nrule_files: ['${join(promDir, 'rules.yml')}']\nscrape_configs:\n${job('cadvisor')}${job('resource')}`,
    );
    let promLog = '';
    prometheus = spawn(
      'prometheus',
      [`--config.file=${join(promDir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(promDir, 'data')}`, `--web.listen-address=127.0.0.1:${promPort}`],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    prometheus.stderr?.on('data', (c: Buffer) => (promLog = (promLog + c.toString()).slice(-4000)));
    await until(
      `prometheus to be ready (${promLog})`,
      async () => ((await get(promPort, '/-/ready').catch(() => undefined))?.status === 200 ? true : undefined),
      30_000,
    );

    const up = await until(
      'both targets up',
      async () => {
        const r = await query(promPort, 'up');
        return r.length === 2 && r.every((s) => s.value[1] === '1') ? r : undefined;
      },
      30_000,
    );
    expect(up.map((s) => s.metric.job).sort()).toEqual(['cadvisor', 'resource']);

    // CPU: the burner at its 100m limit, the sleeper near nothing. rate() over [1m] reads low
    // until a series is a minute old (Prometheus extrapolates only half an interval past its
    // first sample): wait for the window to fill.
    const cpu = await until(
      'a full minute of CPU rates for both pods',
      async () => {
        // The resource endpoint has a series of the same name: dashboards name the cAdvisor scrape.
        const r = await query(promPort, `sum by (pod) (rate(container_cpu_usage_seconds_total{job="cadvisor",container!="",namespace="${ns}"}[1m]))`);
        const by = Object.fromEntries(r.map((s) => [s.metric.pod, Number(s.value[1])]));
        const filled = await query(promPort, `count_over_time(node_cpu_usage_seconds_total[1m])`);
        // 20 of the minute's 30 scrapes: a loaded machine may miss a few.
        return by.burn !== undefined && by.hog !== undefined && Number(filled[0]?.value[1] ?? 0) >= 20 ? by : undefined;
      },
      120_000,
    );
    // At its limit when it gets the CPU; the suite shares two cores, so well above nothing is enough.
    expect(cpu.burn).toBeGreaterThan(0.03);
    expect(cpu.burn).toBeLessThan(0.12);
    expect(cpu.hog).toBeLessThan(0.05);

    // Memory: the 64 MiB the container wrote to its memory-backed volume is in its working set.
    const mem = await until(
      "the hog's working set",
      async () => {
        const r = await query(promPort, `container_memory_working_set_bytes{job="cadvisor",namespace="${ns}",pod="hog",container="mem"}`);
        return r[0] ? Number(r[0].value[1]) : undefined;
      },
      20_000,
    );
    expect(mem).toBeGreaterThan(64 * 2 ** 20);
    expect(mem).toBeLessThan(100 * 2 ** 20);

    // The resource endpoint's pod series, as `kubectl top` and the metrics-server read them.
    const podMem = await until(
      'pod_memory_working_set_bytes',
      async () => {
        const r = await query(promPort, `pod_memory_working_set_bytes{namespace="${ns}",pod="hog"}`);
        return r[0] ? Number(r[0].value[1]) : undefined;
      },
      20_000,
    );
    expect(podMem).toBeGreaterThanOrEqual(mem);
    const nodeCpu = await query(promPort, 'rate(node_cpu_usage_seconds_total[1m])');
    expect(Number(nodeCpu[0]?.value[1])).toBeGreaterThan(cpu.burn * 0.9);

    // The "Compute Resources / Pod" panels, each answering for its pod's container.
    const sel = (pod: string, more = '') => `job="cadvisor",namespace="${ns}",pod="${pod}",container!="",image!=""${more}`;
    const byContainer = async (promql: string): Promise<Record<string, number>> =>
      Object.fromEntries((await query(promPort, promql)).map((r) => [r.metric.container ?? '', Number(r.value[1])]));
    // CPU throttling: the spinners under 100m are throttled in most periods.
    const throttled = await byContainer(
      `sum by (container) (increase(container_cpu_cfs_throttled_periods_total{${sel('burn')}}[1m])) / sum by (container) (increase(container_cpu_cfs_periods_total{${sel('burn')}}[1m]))`,
    );
    expect(throttled.cpu).toBeGreaterThan(0.5);
    expect((await byContainer(`sum by (container) (rate(container_cpu_cfs_throttled_seconds_total{${sel('burn')}}[1m]))`)).cpu).toBeGreaterThan(0);
    // The alert's expression, and the alert itself pending for the burner (its for: is 15 m).
    const alertExpr = await query(
      promPort,
      `sum(increase(container_cpu_cfs_throttled_periods_total{container!="", job="cadvisor"}[1m])) without (id, metrics_path, name, image, endpoint, job, node) / on (cluster, namespace, pod, container, instance) group_left sum(increase(container_cpu_cfs_periods_total{job="cadvisor"}[1m])) without (id, metrics_path, name, image, endpoint, job, node) > (25 / 100)`,
    );
    expect(alertExpr.filter((r) => r.metric.namespace === ns).map((r) => `${r.metric.pod}/${r.metric.container}`)).toEqual(['burn/cpu']);
    const alert = await until(
      'CPUThrottlingHigh pending for the burner',
      async () => {
        const r = JSON.parse((await get(promPort, '/api/v1/alerts')).body) as { data: { alerts: { labels: Record<string, string>; state: string }[] } };
        return r.data.alerts.find((a) => a.labels.alertname === 'CPUThrottlingHigh' && a.labels.namespace === ns && a.labels.pod === 'burn');
      },
      30_000,
    );
    expect(alert.state).toBe('pending');
    // Memory: working set, RSS, cache and swap by container (no swap on this node: 0, read, not made up).
    // (The working-set panel keeps the sandbox, container="POD", as it did under dockershim; the others drop it.)
    expect(Object.keys(await byContainer(`sum by (container) (container_memory_working_set_bytes{${sel('hog')}})`)).sort()).toEqual(['POD', 'mem']);
    for (const name of ['container_memory_rss', 'container_memory_cache', 'container_memory_swap']) {
      expect(
        Object.keys(await byContainer(`sum by (container) (${name}{job="cadvisor",namespace="${ns}",pod="hog",container!="",container!="POD"})`)),
        name,
      ).toEqual(['mem']);
    }
    // Network: the pod's, by interface (kubernetes-mixin reads it without a container filter).
    expect((await query(promPort, `sum by (pod) (irate(container_network_receive_bytes_total{job="cadvisor",namespace="${ns}",pod="burn"}[1m]))`)).length).toBe(
      1,
    );
    // Storage IO: bytes and operations by container on the dashboards' device pattern.
    const dev = 'device=~"(/dev/)?(mmcblk.p.+|nvme.+|rbd.+|sd.+|vd.+|xvd.+|dm-.+|md.+|dasd.+)"';
    const written = await until(
      "the writer's write bytes",
      async () => {
        const r = await byContainer(`sum by (container) (rate(container_fs_writes_bytes_total{${sel('writer', `,${dev}`)}}[1m]))`);
        return (r.disk ?? 0) > 0 ? r : undefined;
      },
      60_000,
    );
    expect(written.disk).toBeGreaterThan(100_000);
    expect(
      (
        await byContainer(
          `ceil(sum by (container) (rate(container_fs_reads_total{${sel('writer', `,${dev}`)}}[1m]) + rate(container_fs_writes_total{${sel('writer', `,${dev}`)}}[1m])))`,
        )
      ).disk,
    ).toBeGreaterThan(0);
    // OOM events: the child killed for memory, the container still running.
    const ooms = await until(
      'OOM events for the leaking container',
      async () => {
        const r = await byContainer(`sum by (container) (container_oom_events_total{${sel('oom')}})`);
        return (r.leak ?? 0) >= 1 ? r : undefined;
      },
      30_000,
    );
    expect(ooms.leak).toBeGreaterThanOrEqual(1);
    expect((await byContainer(`sum by (container) (increase(container_oom_events_total{${sel('oom')}}[1m]))`)).leak).toBeGreaterThan(0);

    // Every series of the issue for a running pod, and both endpoints clean for promtool.
    const body = (await get(port, '/metrics/cadvisor')).body;
    const want = [
      'container_cpu_cfs_throttled_periods_total',
      'container_cpu_cfs_periods_total',
      'container_cpu_cfs_throttled_seconds_total',
      'container_memory_swap',
      'container_memory_failcnt',
      'container_oom_events_total',
      'container_fs_reads_bytes_total',
      'container_fs_writes_bytes_total',
      'container_fs_reads_total',
      'container_fs_writes_total',
      'container_spec_cpu_quota',
      'container_spec_cpu_period',
      'container_spec_cpu_shares',
      'container_start_time_seconds',
      'container_processes',
      'container_threads',
      'container_file_descriptors',
      'container_sockets',
      'container_ulimits_soft',
    ];
    const missing = want.filter((name) => !new RegExp(`^${name}\\{container="disk",[^}]*pod="writer"`, 'm').test(body));
    expect(missing).toEqual([]);
    expect(body).toMatch(/^machine_cpu_cores\{boot_id="[^"]*",machine_id="[^"]*",system_uuid="[^"]*"\} [1-9]/m);
    expect(body).toMatch(/^machine_memory_bytes\{[^}]*\} [1-9]\d+$/m);
    for (const path of ['/metrics/cadvisor', '/metrics/resource']) {
      const r = spawnSync('promtool', ['check', 'metrics'], { input: (await get(port, path)).body, encoding: 'utf8' });
      expect(`${r.status} ${r.stdout}${r.stderr}`, path).toBe('0 ');
    }
    const resource = (await get(port, '/metrics/resource')).body;
    expect(resource).toMatch(/^node_swap_usage_bytes\{\} \d+ \d+$/m);
    expect(resource).toMatch(new RegExp(`^container_swap_usage_bytes\\{container="cpu",namespace="${ns}",pod="burn"\\} \\d+ \\d+$`, 'm'));
    expect(resource).toMatch(new RegExp(`^pod_swap_usage_bytes\\{namespace="${ns}",pod="burn"\\} \\d+ \\d+$`, 'm'));
    expect(resource).toMatch(/^resource_scrape_error\{\} 0$/m);
  }, 300_000);
});
