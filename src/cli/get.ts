import { shownSource } from '../sources/origin-names.js';
import { parseTemplate, renderJsonPath } from './jsonpath.js';
import { byPodKey, noResources, podNotFound, selectorFrom } from './pod-args.js';
import { EXIT, makeRuntime, type GlobalOptions, type Io } from './context.js';
import { columnWidths, table, tableRow } from './print.js';
import { loadPodViews, type V1Pod } from './views.js';

export interface GetOptions {
  output?: string;
  namespace?: string;
  allNamespaces: boolean;
  selector?: string;
  showLabels?: boolean;
  noHeaders?: boolean;
  watch?: boolean;
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
  // As kubectl: a pod being deleted is Terminating, whatever else it is.
  if (p.metadata.deletionTimestamp) return 'Terminating';
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
  // As kubectl: a Failed pod's reason stands for its phase (a pod the node refused: Forbidden, SysctlForbidden).
  if (p.status.phase === 'Failed' && p.status.reason) return p.status.reason;
  for (const c of p.status.containerStatuses ?? []) {
    const w = c.state.waiting?.reason;
    if (w && w !== 'ContainerCreating') return w;
    if (c.state.terminated && p.status.phase === 'Running') return c.state.terminated.reason ?? 'Error';
  }
  // A pod running the version it went back to after a failed update (podrun's health gate).
  if (p.status.reason === 'RolledBack') return 'RolledBack';
  if (p.status.phase === 'Succeeded') return 'Completed';
  if (p.status.phase === 'Pending' && (p.status.containerStatuses ?? []).some((c) => c.state.waiting?.reason === 'ContainerCreating'))
    return 'ContainerCreating';
  return p.status.phase;
}

type Output = { kind: 'table'; wide: boolean } | { kind: 'json' | 'yaml' | 'name' } | { kind: 'jsonpath'; template: string };

function outputOf(text: string | undefined): Output | string {
  const o = text ?? '';
  if (o === '' || o === 'wide') return { kind: 'table', wide: o === 'wide' };
  if (o === 'json' || o === 'yaml' || o === 'name') return { kind: o };
  const m = /^jsonpath=(.*)$/s.exec(o);
  if (m) {
    try {
      parseTemplate(m[1]!);
    } catch (err) {
      return (err as Error).message;
    }
    return { kind: 'jsonpath', template: m[1]! };
  }
  return `unknown output format "${o}" (use wide, json, yaml, name or jsonpath=TEMPLATE)`;
}

function labelsText(p: V1Pod): string {
  const l = Object.entries(p.metadata.labels ?? {});
  return l.length ? l.map(([k, v]) => `${k}=${v}`).join(',') : '<none>';
}

function row(p: V1Pod, allNamespaces: boolean, o: GetOptions, wide: boolean, nodeName: string): string[] {
  const cs = p.status.containerStatuses ?? [];
  const ready = cs.filter((c) => c.ready).length;
  const restarts = cs.reduce((n, c) => n + c.restartCount, 0);
  return [
    ...(allNamespaces ? [p.metadata.namespace] : []),
    p.metadata.name,
    `${ready}/${cs.length}`,
    statusWord(p),
    String(restarts),
    age(p.metadata.creationTimestamp),
    ...(wide ? [p.status.podIP ?? '<none>', nodeName, shownSource(p.metadata.annotations?.['podrun.io/source'] ?? '')] : []),
    ...(o.showLabels ? [labelsText(p)] : []),
  ];
}

/** `podrun get pods [NAME...]`: kubectl's table, or the pods as json, yaml, names or a JSONPath template. */
export async function getPodsCommand(names: string[], o: GetOptions, g: GlobalOptions, io: Io): Promise<number> {
  const out = outputOf(o.output);
  if (typeof out === 'string') {
    io.err(`podrun: ${out}`);
    return EXIT.usage;
  }
  const select = selectorFrom(o.selector, io);
  if (!select) return EXIT.usage;
  if (names.length && o.selector) {
    io.err('podrun: name pods or give a selector (-l), not both');
    return EXIT.usage;
  }
  const rt = await makeRuntime(g, io);
  // The YAML writer only for -o yaml: a table does not pay for loading it.
  const yamlText = out.kind === 'yaml' ? (await import('./yaml-out.js')).yamlText : undefined;
  const ns = o.allNamespaces && !names.length ? undefined : (o.namespace ?? 'default');
  let everywhere: V1Pod[] = [];
  const load = async (): Promise<V1Pod[]> =>
    (everywhere = (await loadPodViews(rt, g.stateDir)).pods)
      .filter((p) => (!ns || p.metadata.namespace === ns) && (!names.length || names.includes(p.metadata.name)) && select(p.metadata.labels))
      .sort(byPodKey);
  const pods = await load();
  let code: number = EXIT.ok;
  for (const n of names) {
    if (!pods.some((p) => p.metadata.name === n)) {
      podNotFound(
        io,
        n,
        ns ?? 'default',
        everywhere.map((p) => p.metadata),
      );
      code = EXIT.failed;
    }
  }
  const allNs = ns === undefined;
  const header = [
    ...(allNs ? ['NAMESPACE'] : []),
    'NAME',
    'READY',
    'STATUS',
    'RESTARTS',
    'AGE',
    ...(out.kind === 'table' && out.wide ? ['IP', 'NODE', 'SOURCE'] : []),
    ...(o.showLabels ? ['LABELS'] : []),
  ];
  const render = (list: V1Pod[], withHeader: boolean): string[] => {
    switch (out.kind) {
      case 'json':
      case 'yaml': {
        // One pod named alone prints as the pod, as kubectl does; otherwise a list.
        const doc = names.length === 1 && list.length === 1 && !o.watch ? list[0] : { apiVersion: 'v1', kind: 'List', items: list };
        return [out.kind === 'json' ? JSON.stringify(doc, null, 2) : yamlText!(doc)];
      }
      case 'name':
        return list.map((p) => `pod/${p.metadata.name}`);
      case 'jsonpath': {
        const doc = names.length === 1 && list.length === 1 ? list[0] : { apiVersion: 'v1', kind: 'List', items: list };
        return [renderJsonPath(out.template, doc)];
      }
      case 'table': {
        const rows = list.map((p) => row(p, allNs, o, out.wide, rt.nodeName));
        return table(withHeader && !o.noHeaders ? [header, ...rows] : rows);
      }
    }
  };
  if (pods.length === 0 && !o.watch && out.kind === 'table') {
    // Named pods that are all missing were each said on stderr: no empty table under them.
    if (!names.length) noResources(io, ns);
    return code;
  }
  if (o.watch && out.kind === 'table') {
    // The table, then its changes in its columns (a pod has changed when anything but its AGE
    // has). STATUS is wide enough for Terminating, which every deleted pod passes through.
    const cells = (p: V1Pod): string[] => row(p, allNs, o, out.wide, rt.nodeName);
    const shownHeader = o.noHeaders ? [] : [header];
    const widths = columnWidths([...shownHeader, ...pods.map(cells)]);
    const statusAt = header.indexOf('STATUS');
    widths[statusAt] = Math.max(widths[statusAt] ?? 0, 'Terminating'.length);
    for (const r of [...shownHeader, ...pods.map(cells)]) io.out(tableRow(r, widths));
    const ageAt = header.indexOf('AGE');
    return watch(
      load,
      (p) => tableRow(cells(p), widths),
      (p) =>
        cells(p)
          .filter((_, i) => i !== ageAt)
          .join('\t'),
      io,
      pods,
    );
  }
  const printed = render(pods, true);
  // As kubectl: a template's output is printed as it is, with no newline added.
  if (out.kind === 'jsonpath') io.stdout.write(printed.join(''));
  else for (const l of printed) io.out(l);
  if (!o.watch) return code;
  return watch(
    load,
    (p) => render([p], false).join('\n'),
    (p) => render([p], false).join('\n'),
    io,
    pods,
  );
}

/**
 * `--watch`: after the first listing, a line for each pod that changed (anything but its age), and
 * for each pod that went, its last state once more, as kubectl prints a watch's MODIFIED and
 * DELETED events. Polled every second, until interrupted: kubectl gets changes from the
 * apiserver's watch; podrun asks the agent or the engine again.
 */
async function watch(load: () => Promise<V1Pod[]>, line: (p: V1Pod) => string, signature: (p: V1Pod) => string, io: Io, first: V1Pod[]): Promise<number> {
  const key = (p: V1Pod): string => `${p.metadata.namespace}/${p.metadata.name}/${p.metadata.uid}`;
  const shown = new Map(first.map((p) => [key(p), { pod: p, signature: signature(p) }]));
  let stop = false;
  const onSignal = (): void => {
    stop = true;
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    while (!stop) {
      await new Promise((r) => setTimeout(r, 1000));
      if (stop) break;
      const now = await load();
      const seen = new Set<string>();
      for (const p of now) {
        seen.add(key(p));
        const s = signature(p);
        if (shown.get(key(p))?.signature !== s) io.out(line(p));
        shown.set(key(p), { pod: p, signature: s });
      }
      for (const [k, last] of [...shown]) {
        if (seen.has(k)) continue;
        io.out(line(last.pod));
        shown.delete(k);
      }
    }
  } finally {
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
  }
  return EXIT.ok;
}
