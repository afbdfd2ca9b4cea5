import { cgroupSeries, machineSeries, type MachineFacts } from './cadvisor-series.js';
import { memoryOf, type ContainerSample } from './summary.js';
import type { InterfaceCounters } from '../runtime/runtime-types.js';
import { Exposition, LabelText } from './exposition.js';

// The kubelet's container endpoints in the Prometheus text format, from the same readings as
// /stats/summary: /metrics/cadvisor (cAdvisor's names, types, units and labels, as the kubelet
// serves them: pkg/kubelet/server/server.go with cadvisor's metrics/prometheus.go) and
// /metrics/resource (pkg/kubelet/metrics/collectors/resource_metrics.go). Pure: samples in, text out.

export const EXPOSITION_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

type Labels = Record<string, string>;

const ns = (x: number): number => x / 1e9;

/** cgroup v1's "no limit" (a page-rounded LLONG_MAX) and v2's absent limit both read as 0, as cAdvisor shows them. */
function limitOf(bytes: number | undefined): number {
  return bytes === undefined || bytes >= 2 ** 62 ? 0 : bytes;
}

export interface CadvisorOptions {
  /** The machine's cores and memory (cAdvisor's machine series), when known. */
  machine?: MachineFacts;
  /** cAdvisor's `id`: the container's cgroup path (e.g. /docker/<id>). */
  cgroupOf: (containerId: string) => string;
  /** The device holding the engine's root directory (layers, logs): cAdvisor's `device` on the fs series; without it there are none. */
  fsDevice?: string;
}

/**
 * /metrics/cadvisor. Each container has its own series (`container` its name; the sandbox is
 * `POD`, as dockershim named it, so dashboards' `container!="POD"` leaves it out); each pod has
 * series with `container=""` summing them (the kubelet's pod cgroup), which also carry the
 * pod's network, by interface.
 */
export function cadvisorMetrics(samples: readonly ContainerSample[], o: CadvisorOptions): string {
  const out = new Exposition();
  if (o.machine) machineSeries(out, o.machine);
  const byPod = new Map<string, ContainerSample[]>();
  for (const s of samples) byPod.set(s.pod.uid, [...(byPod.get(s.pod.uid) ?? []), s]);
  for (const [uid, list] of byPod) {
    const pod = list[0]!.pod;
    const time = Math.max(...list.map((s) => Date.parse(s.stats.time)));
    const rows: [Labels, ContainerSample[]][] = list.map((s) => [
      {
        container: s.type === 'sandbox' ? 'POD' : s.name,
        id: o.cgroupOf(s.id),
        image: s.image ?? '',
        name: s.engineName ?? '',
        namespace: pod.namespace,
        pod: pod.name,
      },
      [s],
    ]);
    rows.push([{ container: '', id: `/podrun/pod${uid}`, image: '', name: '', namespace: pod.namespace, pod: pod.name }, list]);
    for (const [labelSet, group] of rows) {
      const labels = LabelText.of(labelSet);
      const t = group.length === 1 ? Date.parse(group[0]!.stats.time) : time;
      const sum = (f: (s: ContainerSample) => number | undefined): number | undefined => {
        const xs = group.map(f);
        return xs.every((x) => x === undefined) ? undefined : xs.reduce<number>((a, x) => a + (x ?? 0), 0);
      };
      const cpu = (k: 'usageNs' | 'userNs' | 'systemNs') => sum((s) => s.stats.cpu[k]);
      out.add('container_cpu_usage_seconds_total', 'counter', 'Cumulative cpu time consumed in seconds.', labels, ns(cpu('usageNs') ?? NaN), t);
      const user = cpu('userNs');
      const system = cpu('systemNs');
      out.add(
        'container_cpu_user_seconds_total',
        'counter',
        'Cumulative user cpu time consumed in seconds.',
        labels,
        user === undefined ? undefined : ns(user),
        t,
      );
      out.add(
        'container_cpu_system_seconds_total',
        'counter',
        'Cumulative system cpu time consumed in seconds.',
        labels,
        system === undefined ? undefined : ns(system),
        t,
      );
      out.add(
        'container_memory_usage_bytes',
        'gauge',
        'Current memory usage in bytes, including all memory regardless of when it was accessed',
        labels,
        sum((s) => s.stats.memory.usageBytes),
        t,
      );
      out.add(
        'container_memory_working_set_bytes',
        'gauge',
        'Current working set in bytes.',
        labels,
        sum((s) => memoryOf(s.stats).workingSetBytes),
        t,
      );
      out.add(
        'container_memory_rss',
        'gauge',
        'Size of RSS in bytes.',
        labels,
        sum((s) => s.stats.memory.rssBytes),
        t,
      );
      out.add(
        'container_memory_cache',
        'gauge',
        'Number of bytes of page cache memory.',
        labels,
        sum((s) => s.stats.memory.cacheBytes),
        t,
      );
      if (group.length === 1)
        out.add('container_spec_memory_limit_bytes', 'gauge', 'Memory limit for the container.', labels, limitOf(group[0]!.stats.memory.limitBytes), t);
      const started = group.length === 1 ? group[0]!.startedAt : list.find((s) => s.type === 'sandbox')?.startedAt;
      out.add(
        'container_start_time_seconds',
        'gauge',
        'Start time of the container since unix epoch in seconds.',
        labels,
        started ? Date.parse(started) / 1000 : undefined,
        t,
      );
      out.add('container_last_seen', 'gauge', 'Last time a container was seen by the exporter', labels, Math.floor(t / 1000), t);
      // The writable layer and the container's logs, as cAdvisor's Docker handler counts a container's usage.
      const fs =
        o.fsDevice === undefined
          ? undefined
          : sum((s) => (s.rootfsBytes === undefined && s.logsBytes === undefined ? undefined : (s.rootfsBytes ?? 0) + (s.logsBytes ?? 0)));
      out.add(
        'container_fs_usage_bytes',
        'gauge',
        'Number of bytes that are consumed by the container on this filesystem.',
        labels.with('device', o.fsDevice ?? ''),
        fs,
        t,
      );
      if (group.length > 1)
        network(
          out,
          labels,
          list.find((s) => s.type === 'sandbox'),
          t,
        );
      cgroupSeries(out, labels, group, t);
    }
  }
  return out.text();
}

function network(out: Exposition, labels: LabelText, sandbox: ContainerSample | undefined, t: number): void {
  const series: [string, string, (n: InterfaceCounters) => number | undefined][] = [
    ['container_network_receive_bytes_total', 'Cumulative count of bytes received', (n) => n.rxBytes],
    ['container_network_transmit_bytes_total', 'Cumulative count of bytes transmitted', (n) => n.txBytes],
    ['container_network_receive_packets_total', 'Cumulative count of packets received', (n) => n.rxPackets],
    ['container_network_transmit_packets_total', 'Cumulative count of packets transmitted', (n) => n.txPackets],
    ['container_network_receive_errors_total', 'Cumulative count of errors encountered while receiving', (n) => n.rxErrors],
    ['container_network_transmit_errors_total', 'Cumulative count of errors encountered while transmitting', (n) => n.txErrors],
    ['container_network_receive_packets_dropped_total', 'Cumulative count of packets dropped while receiving', (n) => n.rxDropped],
    ['container_network_transmit_packets_dropped_total', 'Cumulative count of packets dropped while transmitting', (n) => n.txDropped],
  ];
  for (const [name, help, f] of series) {
    for (const [iface, n] of Object.entries(sandbox?.stats.networks ?? {})) out.add(name, 'counter', help, labels.with('interface', iface), f(n), t);
    if (!sandbox?.stats.networks) out.add(name, 'counter', help, labels, undefined);
  }
}

export interface NodeReading {
  time: string;
  usageCoreNanoSeconds?: number;
  workingSetBytes?: number;
  swapUsageBytes?: number;
}

const swapOf = (s: ContainerSample): number | undefined => s.stats.cgroup?.swapBytes;

/** /metrics/resource: the node, each pod and each container (sandboxes in their pod's sums only). */
export function resourceMetrics(samples: readonly ContainerSample[], node: NodeReading | undefined, scrapeError: boolean): string {
  const out = new Exposition();
  const nodeT = node ? Date.parse(node.time) : undefined;
  out.add(
    'node_cpu_usage_seconds_total',
    'counter',
    'Cumulative cpu time consumed by the node in core-seconds',
    {},
    node?.usageCoreNanoSeconds === undefined ? undefined : ns(node.usageCoreNanoSeconds),
    nodeT,
  );
  out.add('node_memory_working_set_bytes', 'gauge', 'Current working set of the node in bytes', {}, node?.workingSetBytes, nodeT);
  out.add('node_swap_usage_bytes', 'gauge', 'Current swap usage of the node in bytes. Reported only on non-windows systems', {}, node?.swapUsageBytes, nodeT);
  const byPod = new Map<string, ContainerSample[]>();
  for (const s of samples) byPod.set(s.pod.uid, [...(byPod.get(s.pod.uid) ?? []), s]);
  for (const list of byPod.values()) {
    const pod = list[0]!.pod;
    for (const s of list.filter((x) => x.type !== 'sandbox')) {
      const labels = { container: s.name, namespace: pod.namespace, pod: pod.name };
      const t = Date.parse(s.stats.time);
      out.add(
        'container_cpu_usage_seconds_total',
        'counter',
        'Cumulative cpu time consumed by the container in core-seconds',
        labels,
        ns(s.stats.cpu.usageNs),
        t,
      );
      out.add('container_memory_working_set_bytes', 'gauge', 'Current working set of the container in bytes', labels, memoryOf(s.stats).workingSetBytes, t);
      out.add(
        'container_swap_usage_bytes',
        'gauge',
        'Current amount of the container swap usage in bytes. Reported only on non-windows systems',
        labels,
        swapOf(s),
        t,
      );
      out.add(
        'container_start_time_seconds',
        'gauge',
        'Start time of the container since unix epoch in seconds',
        labels,
        s.startedAt ? Date.parse(s.startedAt) / 1000 : undefined,
        t,
      );
    }
  }
  for (const list of byPod.values()) {
    const pod = list[0]!.pod;
    const labels = { namespace: pod.namespace, pod: pod.name };
    const t = Math.max(...list.map((s) => Date.parse(s.stats.time)));
    out.add(
      'pod_cpu_usage_seconds_total',
      'counter',
      'Cumulative cpu time consumed by the pod in core-seconds',
      labels,
      ns(list.reduce((a, s) => a + s.stats.cpu.usageNs, 0)),
      t,
    );
    out.add(
      'pod_memory_working_set_bytes',
      'gauge',
      'Current working set of the pod in bytes',
      labels,
      list.reduce((a, s) => a + memoryOf(s.stats).workingSetBytes, 0),
      t,
    );
    const swaps = list.map(swapOf);
    out.add(
      'pod_swap_usage_bytes',
      'gauge',
      'Current amount of the pod swap usage in bytes. Reported only on non-windows systems',
      labels,
      swaps.every((x) => x !== undefined) ? swaps.reduce<number>((a, x) => a + x!, 0) : undefined,
      t,
    );
  }
  // The kubelet writes both: scrape_error (deprecated since 1.29) and resource_scrape_error.
  out.add('scrape_error', 'gauge', '1 if there was an error while getting container metrics, 0 otherwise', {}, scrapeError ? 1 : 0);
  out.add('resource_scrape_error', 'gauge', '1 if there was an error while getting container metrics, 0 otherwise', {}, scrapeError ? 1 : 0);
  return out.text();
}
