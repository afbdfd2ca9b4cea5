import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AgentSuite } from './agent-helpers.js';
import { agentGetText, TEST_IMAGE, unique, until } from './helpers.js';

// /metrics as an operator scrapes it: prom-client's exposition, clean under `promtool check
// metrics`, with the series the kubelet has for the same things.
const suite = new AgentSuite('metrics');
let server: Server | undefined;
afterAll(() => new Promise<void>((r) => (server ? server.close(() => r()) : r())));

/** The value of the first sample of `name` whose labels include `labels` (in any order). */
function value(text: string, name: string, labels: Record<string, string | RegExp> = {}): number {
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = new Map([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1]!, x[2]!]));
    const fits = Object.entries(labels).every(([k, v]) => (typeof v === 'string' ? have.get(k) === v : v.test(have.get(k) ?? '')));
    if (fits) return Number(m[3]);
  }
  return NaN;
}

describe('the agent metrics', () => {
  it('pass promtool check metrics and count probes, starts, restarts, fetches and engine calls', async () => {
    const dir = join(suite.world.dir, 'manifests');
    mkdirSync(dir);
    const name = unique('scraped');
    writeFileSync(
      join(dir, 'pod.yaml'),
      `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${suite.ns}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: web
    image: ${TEST_IMAGE}
    command: [sh, -c, 'mkdir -p /www && echo ok > /www/index.html && exec httpd -f -p 8080 -h /www']
    readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1}
    livenessProbe: {exec: {command: ['true']}, periodSeconds: 1}
  - name: crasher
    image: ${TEST_IMAGE}
    command: [sh, -c, 'sleep 1; exit 2']
`,
    );
    // A URL source whose body never changes: every poll after the first is a 304 (but one in 15).
    const body = 'apiVersion: v1\nkind: PodList\nitems: []\n';
    server = createServer((req, res) => {
      if (req.headers['if-none-match'] === '"v1"') res.writeHead(304).end();
      else res.writeHead(200, { etag: '"v1"', 'content-type': 'application/yaml' }).end(body);
    });
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/pods.yaml`;
    const agent = suite.run(['--manifest-dir', dir, '--manifest-url', url, '--crash-backoff-initial', '1s', '--crash-backoff-max', '1s']);
    await agent.started();
    const scrape = async (path = '/metrics'): Promise<string> => (await agentGetText(suite.world.stateDir, path)) ?? '';
    const pod = { namespace: suite.ns, pod: name };
    const text = await until(
      'a restart, probes and a 304 to be counted',
      async () => {
        const t = await scrape();
        const ok =
          value(t, 'podrun_container_restarts_total', { ...pod, container: 'crasher' }) >= 1 &&
          value(await scrape('/metrics/probes'), 'prober_probe_total', { ...pod, container: 'web', probe_type: 'Readiness', result: 'successful' }) >= 2 &&
          value(t, 'podrun_url_fetches_total', { source: /^url:/, result: 'not_modified' }) >= 1;
        return ok ? t : undefined;
      },
      40_000,
    );
    // The prober's series are where the kubelet serves them: /metrics/probes, not /metrics.
    const probes = await scrape('/metrics/probes');

    for (const t of [text, probes]) {
      const check = spawnSync('promtool', ['check', 'metrics'], { input: t, encoding: 'utf8' });
      expect(check.error).toBeUndefined();
      expect(`${check.stdout}${check.stderr}`.trim()).toBe('');
      expect(check.status).toBe(0);
    }

    expect(value(probes, 'prober_probe_total', { ...pod, container: 'web', probe_type: 'Liveness', result: 'successful' })).toBeGreaterThanOrEqual(1);
    expect(value(probes, 'prober_probe_duration_seconds_count', { ...pod, container: 'web', probe_type: 'Liveness' })).toBeGreaterThanOrEqual(1);
    expect(value(probes, 'process_start_time_seconds')).toBeGreaterThan(1.7e9);
    expect(text).not.toContain('prober_probe');
    expect(value(text, 'podrun_started_containers_total', { container_type: 'sandbox' })).toBeGreaterThanOrEqual(1);
    expect(value(text, 'podrun_started_containers_total', { container_type: 'app' })).toBeGreaterThanOrEqual(3);
    expect(value(text, 'podrun_running_pods')).toBeGreaterThanOrEqual(1);
    expect(value(text, 'podrun_running_containers', { container_state: 'running' })).toBeGreaterThanOrEqual(1);
    expect(value(text, 'podrun_url_fetches_total', { source: /^url:/, result: 'ok' })).toBe(1);
    expect(value(text, 'podrun_runtime_operations_total', { operation_type: 'create_container' })).toBeGreaterThanOrEqual(3);
    expect(value(text, 'podrun_runtime_operations_duration_seconds_count', { operation_type: 'start_container' })).toBeGreaterThanOrEqual(3);
    expect(value(text, 'podrun_pleg_relist_duration_seconds_count')).toBeGreaterThanOrEqual(1);
    expect(value(text, 'podrun_pod_worker_duration_seconds_count', { operation: 'sync' })).toBeGreaterThanOrEqual(1);
    expect(value(text, 'podrun_engine_connected')).toBe(1);
    expect(value(text, 'process_resident_memory_bytes')).toBeGreaterThan(1e6);
    expect(text).toMatch(/^# HELP podrun_engine_event_stream_reconnects_total /m);
    expect(text).toMatch(/^# HELP podrun_image_pull_duration_seconds /m);
    // Every series has its HELP and TYPE.
    const names = new Set(
      text
        .split('\n')
        .filter((l) => l && !l.startsWith('#'))
        .map((l) => l.replace(/[{ ].*/, '').replace(/_(bucket|sum|count)$/, '')),
    );
    for (const n of names) expect(text, n).toMatch(new RegExp(`^# HELP ${n} `, 'm'));
  });
});
