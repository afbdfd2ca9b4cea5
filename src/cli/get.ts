import { dump } from 'js-yaml';
import { EXIT, makeRuntime, type GlobalOptions, type Io } from './context.js';
import { table } from './print.js';
import { loadPodViews, type V1Pod } from './views.js';

export interface GetOptions {
  output?: string;
  namespace?: string;
  allNamespaces: boolean;
}

export function age(iso: string | undefined): string {
  const created = iso ? Date.parse(iso) : NaN;
  if (!Number.isFinite(created)) return '<unknown>';
  const s = Math.max(0, Math.floor((Date.now() - created) / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.floor(s / 60)}m`;
  if (s < 172800) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86400)}d`;
}

/** kubectl's STATUS column: the most telling reason, else the phase. */
export function statusWord(p: V1Pod): string {
  const inits = p.status.initContainerStatuses ?? [];
  for (const c of inits) {
    const w = c.state.waiting?.reason;
    if (w && w !== 'PodInitializing') return `Init:${w}`;
    if (c.state.terminated && c.state.terminated.exitCode !== 0) return `Init:${c.state.terminated.reason ?? 'Error'}`;
  }
  if (p.status.reason === 'PodInitializing' || p.status.conditions?.find((c) => c.type === 'Initialized')?.status === 'False') {
    const done = inits.filter((c) => c.state.terminated?.exitCode === 0 || c.state.running).length;
    return `Init:${done}/${inits.length}`;
  }
  for (const c of p.status.containerStatuses ?? []) {
    const w = c.state.waiting?.reason;
    if (w && w !== 'ContainerCreating') return w;
    if (c.state.terminated && p.status.phase === 'Running') return c.state.terminated.reason ?? 'Error';
  }
  if (p.status.phase === 'Succeeded') return 'Completed';
  if (p.status.phase === 'Pending' && (p.status.containerStatuses ?? []).some((c) => c.state.waiting?.reason === 'ContainerCreating')) return 'ContainerCreating';
  return p.status.phase;
}

export async function getPodsCommand(o: GetOptions, g: GlobalOptions, io: Io): Promise<number> {
  const output = o.output ?? '';
  if (!['', 'wide', 'json', 'yaml'].includes(output)) {
    io.err(`podrun: unknown output format "${output}" (use wide, json or yaml)`);
    return EXIT.usage;
  }
  const rt = await makeRuntime(g, io);
  const ns = o.allNamespaces ? undefined : (o.namespace ?? 'default');
  const { pods: all } = await loadPodViews(rt, g.stateDir);
  const pods = all
    .filter((p) => !ns || p.metadata.namespace === ns)
    .sort((a, b) => `${a.metadata.namespace}/${a.metadata.name}`.localeCompare(`${b.metadata.namespace}/${b.metadata.name}`));
  if (output === 'json' || output === 'yaml') {
    const list = { apiVersion: 'v1', kind: 'PodList', items: pods };
    io.out(output === 'json' ? JSON.stringify(list, null, 2) : dump(list).trimEnd());
    return EXIT.ok;
  }
  if (pods.length === 0) {
    io.err(ns ? `No pods found in ${ns} namespace.` : 'No pods found.');
    return EXIT.ok;
  }
  const header = [...(ns ? [] : ['NAMESPACE']), 'NAME', 'READY', 'STATUS', 'RESTARTS', 'AGE', ...(output === 'wide' ? ['IP', 'NODE', 'SOURCE'] : [])];
  const lines = pods.map((p) => {
    const cs = p.status.containerStatuses ?? [];
    const ready = cs.filter((c) => c.ready).length;
    const restarts = cs.reduce((n, c) => n + c.restartCount, 0);
    return [
      ...(ns ? [] : [p.metadata.namespace]),
      p.metadata.name,
      `${ready}/${cs.length}`,
      statusWord(p),
      String(restarts),
      age(p.metadata.creationTimestamp),
      ...(output === 'wide' ? [p.status.podIP ?? '<none>', rt.nodeName, p.metadata.annotations?.['podrun.io/source'] ?? ''] : []),
    ];
  });
  for (const l of table([header, ...lines])) io.out(l);
  return EXIT.ok;
}
