import { byPodKey, noResources, podArg, podNotFound, selectorFrom } from './pod-args.js';
import type { Container, Pod, Probe, Volume } from '../manifest/types.js';
import type { PodEvent } from '../status/events.js';
import { EXIT, makeRuntime, type GlobalOptions, type Io } from './context.js';
import { age } from './get.js';
import { table } from './print.js';
import { loadPullFailures, pullFailureEvents } from './pull-failures.js';
import { loadEvents, loadPodViews, type V1ContainerStatus, type V1Pod } from './views.js';

function probeLine(p: Probe): string {
  const timing = `delay=${p.initialDelaySeconds ?? 0}s timeout=${p.timeoutSeconds ?? 1}s period=${p.periodSeconds ?? 10}s #success=${p.successThreshold ?? 1} #failure=${p.failureThreshold ?? 3}`;
  if (p.httpGet) return `http-get ${(p.httpGet.scheme ?? 'HTTP').toLowerCase()}://${p.httpGet.host ?? ''}:${p.httpGet.port}${p.httpGet.path ?? '/'} ${timing}`;
  if (p.tcpSocket) return `tcp-socket ${p.tcpSocket.host ?? ''}:${p.tcpSocket.port} ${timing}`;
  if (p.grpc) return `grpc <pod>:${p.grpc.port} ${p.grpc.service ?? ''} ${timing}`;
  if (p.exec) return `exec [${p.exec.command.join(' ')}] ${timing}`;
  return timing;
}

function stateLines(label: string, s: V1ContainerStatus['state'] | undefined, indent: string): string[] {
  if (!s || Object.keys(s).length === 0) return [];
  if (s.running) return [`${indent}${label}:  Running`, ...(s.running.startedAt ? [`${indent}  Started:  ${s.running.startedAt}`] : [])];
  if (s.waiting)
    return [
      `${indent}${label}:  Waiting`,
      `${indent}  Reason:   ${s.waiting.reason ?? ''}`,
      ...(s.waiting.message ? [`${indent}  Message:  ${s.waiting.message}`] : []),
    ];
  const t = s.terminated;
  if (!t) return [];
  return [
    `${indent}${label}:  Terminated`,
    `${indent}  Reason:     ${t.reason ?? ''}`,
    `${indent}  Exit Code:  ${t.exitCode}`,
    ...(t.message ? [`${indent}  Message:    ${t.message}`] : []),
    ...(t.startedAt ? [`${indent}  Started:    ${t.startedAt}`] : []),
    ...(t.finishedAt ? [`${indent}  Finished:   ${t.finishedAt}`] : []),
  ];
}

function containerLines(c: Container, st: V1ContainerStatus | undefined): string[] {
  const lines = [`  ${c.name}:`];
  if (st?.containerID) lines.push(`    Container ID:  ${st.containerID}`);
  lines.push(`    Image:         ${c.image}`);
  for (const p of c.ports ?? []) {
    lines.push(`    Port:          ${p.containerPort}/${p.protocol ?? 'TCP'}${p.name ? ` (${p.name})` : ''}`);
    if (p.hostPort) lines.push(`    Host Port:     ${p.hostPort}/${p.protocol ?? 'TCP'}${p.hostIP ? ` on ${p.hostIP}` : ''}`);
  }
  if (c.command) lines.push(`    Command:       ${c.command.join(' ')}`);
  if (c.args) lines.push(`    Args:          ${c.args.join(' ').replace(/\n/g, '\\n')}`);
  lines.push(...stateLines('State', st?.state, '    '));
  lines.push(...stateLines('Last State', st?.lastState, '    '));
  lines.push(`    Ready:         ${st?.ready ? 'True' : 'False'}`);
  lines.push(`    Restart Count: ${st?.restartCount ?? 0}`);
  const limits = Object.entries(c.resources?.limits ?? {});
  if (limits.length) lines.push(`    Limits:        ${limits.map(([k, v]) => `${k}=${v}`).join(', ')}`);
  const requests = Object.entries(c.resources?.requests ?? {});
  if (requests.length) lines.push(`    Requests:      ${requests.map(([k, v]) => `${k}=${v}`).join(', ')}`);
  if (c.livenessProbe) lines.push(`    Liveness:      ${probeLine(c.livenessProbe)}`);
  if (c.readinessProbe) lines.push(`    Readiness:     ${probeLine(c.readinessProbe)}`);
  if (c.startupProbe) lines.push(`    Startup:       ${probeLine(c.startupProbe)}`);
  if (c.env?.length) {
    lines.push('    Environment:');
    for (const e of c.env) lines.push(`      ${e.name}:  ${e.value ?? (e.valueFrom?.fieldRef ? `(v1:${e.valueFrom.fieldRef.fieldPath})` : '(resource)')}`);
  }
  if (c.volumeMounts?.length) {
    lines.push('    Mounts:');
    for (const m of c.volumeMounts)
      lines.push(`      ${m.mountPath} from ${m.name}${m.subPath ? ` (subPath ${m.subPath})` : ''} (${m.readOnly ? 'ro' : 'rw'})`);
  }
  return lines;
}

function volumeLines(v: Volume): string[] {
  if (v.hostPath) return [`  ${v.name}:`, '    Type:  HostPath', `    Path:  ${v.hostPath.path}`, `    HostPathType:  ${v.hostPath.type ?? ''}`];
  return [
    `  ${v.name}:`,
    '    Type:    EmptyDir',
    `    Medium:  ${v.emptyDir?.medium ?? ''}`,
    ...(v.emptyDir?.sizeLimit !== undefined ? [`    SizeLimit:  ${v.emptyDir.sizeLimit}`] : []),
  ];
}

function eventLines(events: PodEvent[] | undefined): string[] {
  if (events === undefined) return ['Events:  <unknown: events are kept by the agent (podrun run), and none runs for this state directory>'];
  if (events.length === 0) return ['Events:  <none>'];
  const rows = events.map((e) => [
    `  ${e.type}`,
    e.reason,
    `${age(e.lastTimestamp)}${e.count > 1 ? ` (x${e.count} over ${age(e.firstTimestamp)})` : ''}`,
    'podrun',
    e.message,
  ]);
  return ['Events:', ...table([['  Type', 'Reason', 'Age', 'From', 'Message'], ['  ----', '------', '----', '----', '-------'], ...rows])];
}

/** Renders `podrun describe pod`, kubectl's layout. Pure. */
export function renderDescribe(p: V1Pod, events: PodEvent[] | undefined, node: string): string[] {
  const spec = p.spec as unknown as Pod['spec'];
  const kv = (m: Record<string, string> | undefined): string =>
    m && Object.keys(m).length
      ? Object.entries(m)
          .map(([k, v]) => `${k}=${v}`)
          .join('\n              ')
      : '<none>';
  const statusOf = (name: string, init: boolean): V1ContainerStatus | undefined =>
    (init ? p.status.initContainerStatuses : p.status.containerStatuses)?.find((c) => c.name === name);
  const lines = [
    `Name:         ${p.metadata.name}`,
    `Namespace:    ${p.metadata.namespace}`,
    `UID:          ${p.metadata.uid}`,
    `Node:         ${node}/${p.status.hostIP ?? ''}`,
    ...(p.metadata.creationTimestamp ? [`Start Time:   ${p.metadata.creationTimestamp}`] : []),
    `Labels:       ${kv(p.metadata.labels)}`,
    `Annotations:  ${kv(p.metadata.annotations)}`,
    `Status:       ${p.status.phase}`,
    ...(p.status.reason ? [`Reason:       ${p.status.reason}`] : []),
    ...(p.status.message ? [`Message:      ${p.status.message}`] : []),
    `IP:           ${p.status.podIP ?? ''}`,
  ];
  if (spec.initContainers?.length) {
    lines.push('Init Containers:');
    for (const c of spec.initContainers) lines.push(...containerLines(c, statusOf(c.name, true)));
  }
  lines.push('Containers:');
  for (const c of spec.containers ?? []) lines.push(...containerLines(c, statusOf(c.name, false)));
  lines.push('Conditions:', ...table([['  Type', 'Status'], ...(p.status.conditions ?? []).map((c) => [`  ${c.type}`, c.status])]));
  if (spec.volumes?.length) {
    lines.push('Volumes:');
    for (const v of spec.volumes) lines.push(...volumeLines(v));
  }
  lines.push(`Restart Policy:  ${spec.restartPolicy ?? 'Always'}`);
  lines.push(...eventLines(events));
  return lines;
}

/** `podrun describe pods [NAME...] [-l SELECTOR] [-A]`: each pod in detail, separated by a blank line, as kubectl does. */
export async function describePodCommand(
  podNames: string[],
  o: { namespace: string; selector?: string; allNamespaces?: boolean },
  g: GlobalOptions,
  io: Io,
): Promise<number> {
  const select = selectorFrom(o.selector, io);
  if (!select) return EXIT.usage;
  const rt = await makeRuntime(g, io);
  const { pods } = await loadPodViews(rt, g.stateDir);
  const chosen: V1Pod[] = [];
  let code: number = EXIT.ok;
  if (podNames.length) {
    for (const podName of podNames) {
      const { namespace: ns, name } = podArg(podName, o.namespace);
      const p = pods.find((x) => x.metadata.namespace === ns && x.metadata.name === name);
      if (p) chosen.push(p);
      else {
        podNotFound(
          io,
          name,
          ns,
          pods.map((x) => x.metadata),
        );
        code = EXIT.failed;
      }
    }
  } else {
    chosen.push(...pods.filter((p) => (o.allNamespaces || p.metadata.namespace === o.namespace) && select(p.metadata.labels)).sort(byPodKey));
    if (!chosen.length) noResources(io, o.allNamespaces ? undefined : o.namespace);
  }
  // With no agent, apply's failed pulls stand in for the events (read once, for every pod).
  let failed: ReturnType<typeof loadPullFailures> | undefined;
  for (const [i, p] of chosen.entries()) {
    if (i > 0) io.out('');
    let events = await loadEvents(g.stateDir, p.metadata.uid);
    if (!events) {
      failed ??= loadPullFailures(g.stateDir);
      const mine = failed.get(p.metadata.uid);
      if (mine) events = pullFailureEvents(p.metadata.namespace, p.metadata.name, p.metadata.uid, mine);
    }
    for (const l of renderDescribe(p, events, rt.nodeName)) io.out(l);
  }
  return code;
}
