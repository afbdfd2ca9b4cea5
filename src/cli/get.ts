import { dump } from 'js-yaml';
import type { Pod } from '../manifest/types.js';
import type { ObservedPod } from '../runtime/observed.js';
import { podStatus, type PodStatusSummary } from '../status/pod-status.js';
import { toV1Pod } from '../status/v1.js';
import { EXIT, makeRuntime, type GlobalOptions, type Io } from './context.js';
import { table } from './print.js';

export interface GetOptions {
  output?: string;
  namespace?: string;
  allNamespaces: boolean;
}

function age(created: number | undefined): string {
  if (!created) return '<unknown>';
  const s = Math.max(0, Math.floor(Date.now() / 1000 - created));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.floor(s / 60)}m`;
  if (s < 172800) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86400)}d`;
}

function statusWord(st: PodStatusSummary): string {
  const waiting = st.containers.find((c) => c.state === 'waiting' && c.reason && c.reason !== 'ContainerCreating');
  if (waiting?.reason) return waiting.reason;
  if (st.reason === 'PodInitializing') return 'Init';
  if (st.phase === 'Succeeded') return 'Completed';
  if (st.phase === 'Running' && st.containers.some((c) => c.state === 'terminated')) return st.containers.find((c) => c.state === 'terminated')?.reason ?? 'Running';
  return st.phase;
}

/** A pod whose sandbox lost its spec label still shows, from what its labels say. */
function specOf(o: ObservedPod): Pod {
  return o.spec ?? { apiVersion: 'v1', kind: 'Pod', metadata: { name: o.name, namespace: o.namespace, uid: o.uid }, spec: { containers: [] } };
}

export async function getPodsCommand(o: GetOptions, g: GlobalOptions, io: Io): Promise<number> {
  const rt = makeRuntime(g, io);
  const ns = o.allNamespaces ? undefined : (o.namespace ?? 'default');
  const pods = (await rt.listPods()).filter((p) => !ns || p.namespace === ns).sort((a, b) => `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`));
  const output = o.output ?? '';
  const withIPs = output === 'wide' || output === 'json' || output === 'yaml';
  const rows = await Promise.all(
    pods.map(async (p) => {
      const spec = specOf(p);
      const st = podStatus(spec, p);
      const sandbox = p.sandboxes[0];
      const podIP = withIPs && sandbox?.state === 'running' ? (await rt.sandboxInfo(sandbox.id, spec)).ip : undefined;
      return { p, st, podIP };
    }),
  );
  if (output === 'json' || output === 'yaml') {
    const list = { apiVersion: 'v1', kind: 'PodList', items: rows.map((r) => toV1Pod(r.p, r.st, { ...(r.podIP ? { podIP: r.podIP } : {}), hostIP: rt.hostIP })) };
    io.out(output === 'json' ? JSON.stringify(list, null, 2) : dump(list).trimEnd());
    return EXIT.ok;
  }
  if (output !== '' && output !== 'wide') {
    io.err(`podrun: unknown output format "${output}" (use wide, json or yaml)`);
    return EXIT.usage;
  }
  if (rows.length === 0) {
    io.err(ns ? `No pods found in ${ns} namespace.` : 'No pods found.');
    return EXIT.ok;
  }
  const header = [...(ns ? [] : ['NAMESPACE']), 'NAME', 'READY', 'STATUS', 'RESTARTS', 'AGE', ...(output === 'wide' ? ['IP', 'NODE', 'SOURCE'] : [])];
  const lines = rows.map(({ p, st, podIP }) => {
    const ready = st.containers.filter((c) => c.state === 'running').length;
    const restarts = st.containers.reduce((n, c) => n + c.restartCount, 0);
    return [
      ...(ns ? [] : [p.namespace]),
      p.name,
      `${ready}/${st.containers.length}`,
      statusWord(st),
      String(restarts),
      age(p.sandboxes[0]?.created),
      ...(output === 'wide' ? [podIP ?? '<none>', rt.nodeName, p.source] : []),
    ];
  });
  for (const l of table([header, ...lines])) io.out(l);
  return EXIT.ok;
}
