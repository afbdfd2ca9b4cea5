import { isIP } from '../base/ip.js';
import { fieldPath, type ManifestIssue } from './errors.js';
import type { ParsedDocument, PathSegment } from './parse.js';
import { isObject, reporter, type Report } from './report.js';
import { dedupe, describeSchemaError } from './schema-errors.js';
import { ignoredFieldWarnings } from './ignored-fields.js';
import { staticPodRules } from './static-pod-rules.js';

import { OPEN_POLICY, policyViolations, type PodPolicy } from './policy.js';
import { MAX_ANNOTATION_BYTES, MAX_ARG_BYTES, MAX_EXEC_BYTES, size } from './limits.js';
import { podValidator } from './pod-validator.js';
import { ROLLBACK_ANNOTATION } from './annotations.js';
import { parseDuration } from '../base/duration.js';
import type { Container, DownwardAPIVolumeFile, LifecycleHandler, Pod, Probe, Volume } from './types.js';

/** One pod found in a document, with where it sits (PodList items have a prefix). */
export interface FoundPod {
  pod: Pod;
  prefix: PathSegment[];
  line: number;
}

export interface DocumentResult {
  pods: FoundPod[];
  issues: ManifestIssue[];
}

/** Validates one parsed document: a Pod, or a PodList whose items are Pods (all or nothing). */
export function validateDocument(file: string, doc: ParsedDocument, policy: PodPolicy = OPEN_POLICY): DocumentResult {
  const issues: ManifestIssue[] = [];
  const report = reporter(file, doc, issues);
  const value = doc.value;
  if (!isObject(value)) {
    report([], 'a manifest must be a Kubernetes object (a mapping with apiVersion and kind)');
    return { pods: [], issues };
  }
  if (value.kind === 'PodList') {
    if (value.apiVersion !== 'v1') report(['apiVersion'], 'must be "v1"');
    if (!Array.isArray(value.items)) {
      report(['items'], 'must be a list of Pods');
      return { pods: [], issues };
    }
    const pods: FoundPod[] = [];
    value.items.forEach((item, i) => {
      const from = issues.length;
      const found = validatePod(item, ['items', i], report, policy);
      namePod(issues.slice(from), item);
      if (found) pods.push({ pod: found, prefix: ['items', i], line: doc.positions.locate(['items', i]).line });
    });
    return { pods: issues.some((x) => x.severity === 'error') ? [] : pods, issues };
  }
  if (value.kind !== 'Pod') {
    const shown = typeof value.kind === 'string' ? `"${value.kind}"` : 'missing';
    report(['kind'], `must be "Pod" or "PodList" (got ${shown}); podrun runs Pods only`);
    return { pods: [], issues };
  }
  const from = issues.length;
  const pod = validatePod(value, [], report, policy);
  namePod(issues.slice(from), value);
  return { pods: pod ? [{ pod, prefix: [], line: doc.line }] : [], issues };
}

/** Tags each issue with the pod its document names, so a refused pod can be shown by name. */
function namePod(issues: ManifestIssue[], value: unknown): void {
  if (!isObject(value) || !isObject(value.metadata) || typeof value.metadata.name !== 'string' || !value.metadata.name) return;
  const ns = typeof value.metadata.namespace === 'string' && value.metadata.namespace ? value.metadata.namespace : 'default';
  for (const i of issues) i.pod = `${ns}/${value.metadata.name}`;
}

function validatePod(value: unknown, prefix: PathSegment[], report: Report, policy: PodPolicy): Pod | undefined {
  let errors = 0;
  const fail: Report = (path, message, opts) => {
    if ((opts?.severity ?? 'error') === 'error') errors++;
    report([...prefix, ...path], message, opts);
  };
  const validate = podValidator();
  if (!validate(value)) for (const e of dedupe(validate.errors ?? [])) describeSchemaError(e, fail);
  if (isObject(value)) {
    staticPodRules(value, fail);
    if (errors === 0) metadataChecks(value as unknown as Pod, fail);
    if (errors === 0) semanticChecks(value as unknown as Pod, fail);
    if (errors === 0) holdableChecks(value as unknown as Pod, fail);
    if (errors === 0) for (const v of policyViolations(value as unknown as Pod, policy)) fail(v.path, v.message, { policy: true });
    ignoredFieldWarnings(value, fail);
  }
  return errors === 0 ? (value as unknown as Pod) : undefined;
}

const QUALIFIED_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** The apiserver's rule for label and annotation keys: `[prefix/]name`. Undefined when valid. */
function qualifiedNameProblem(key: string): string | undefined {
  const slash = key.lastIndexOf('/');
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (prefix !== undefined && (prefix.length === 0 || prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix)))
    return 'prefix must be a DNS subdomain (lower case, at most 253 characters)';
  if (name.length === 0) return 'name part must not be empty';
  if (name.length > 63) return 'name part must be at most 63 characters';
  if (!QUALIFIED_NAME.test(name)) return "name part must be alphanumeric, '-', '_' or '.', starting and ending with an alphanumeric";
  return undefined;
}

/** Labels and annotations as the apiserver validates them for a pod create. */
function metadataChecks(pod: Pod, fail: Report): void {
  for (const [k, v] of Object.entries(pod.metadata.labels ?? {})) {
    const at = ['metadata', 'labels', k];
    const bad = qualifiedNameProblem(k);
    if (bad) fail(at, `invalid label key ${JSON.stringify(k)}: ${bad}`, { atKey: true });
    else if (v.length > 63) fail(at, 'a label value must be at most 63 characters');
    else if (v !== '' && !QUALIFIED_NAME.test(v))
      fail(at, `invalid label value ${JSON.stringify(v)}: alphanumeric, '-', '_' or '.', starting and ending with an alphanumeric`);
  }
  let total = 0;
  for (const [k, v] of Object.entries(pod.metadata.annotations ?? {})) {
    const bad = qualifiedNameProblem(k);
    if (bad) fail(['metadata', 'annotations', k], `invalid annotation key ${JSON.stringify(k)}: ${bad}`, { atKey: true });
    if (k === ROLLBACK_ANNOTATION) {
      try {
        parseDuration(v);
      } catch (err) {
        fail(['metadata', 'annotations', k], `${(err as Error).message} (a Go duration such as 2m or 90s; 0 turns the rollback off)`);
      }
    }
    total += Buffer.byteLength(k) + Buffer.byteLength(v);
  }
  if (total > MAX_ANNOTATION_BYTES)
    fail(['metadata', 'annotations'], `annotations total ${size(total)}; at most ${size(MAX_ANNOTATION_BYTES)}`, { atKey: true });
}

/** Length of a string after Kubernetes' $(VAR) expansion, from the variables' lengths alone. */
function expandedLength(input: string, lengths: ReadonlyMap<string, number>): number {
  let n = 0;
  let last = 0;
  for (const m of input.matchAll(/\$\$|\$\(([^)]*)\)/g)) {
    n += Buffer.byteLength(input.slice(last, m.index));
    last = m.index + m[0].length;
    if (m[0] === '$$') n += 1;
    else n += lengths.get(m[1] ?? '') ?? Buffer.byteLength(m[0]);
  }
  return n + Buffer.byteLength(input.slice(last));
}

/** What the downward API can put in an env value, at the most. */
const DOWNWARD_MAX = 253;

/**
 * Pods valid by every rule that the kernel still cannot run: an argument or environment past
 * exec's limits once $(VAR) expands. Checked on lengths only, so a pod built to expand to
 * gigabytes costs nothing to refuse. (The pod's own size is checked once defaulted, in load.ts.)
 */
function holdableChecks(pod: Pod, fail: Report): void {
  const check = (c: Container, list: 'containers' | 'initContainers', i: number): void => {
    const at: PathSegment[] = ['spec', list, i];
    const lengths = new Map<string, number>();
    let total = 0;
    let tooLong = false;
    const one = (path: PathSegment[], n: number): void => {
      total += n;
      if (n <= MAX_ARG_BYTES) return;
      tooLong = true;
      fail(
        path,
        `is ${size(n)} once $(VAR) references expand; a single argument or environment value may be at most ${size(MAX_ARG_BYTES)} (the kernel's limit)`,
      );
    };
    (c.env ?? []).forEach((e, j) => {
      const n = e.valueFrom ? DOWNWARD_MAX : expandedLength(e.value ?? '', lengths);
      lengths.set(e.name, n);
      one([...at, 'env', j, 'value'], Buffer.byteLength(e.name) + 1 + n);
    });
    (c.command ?? []).forEach((x, j) => one([...at, 'command', j], expandedLength(x, lengths)));
    (c.args ?? []).forEach((x, j) => one([...at, 'args', j], expandedLength(x, lengths)));
    if (total > MAX_EXEC_BYTES && !tooLong)
      fail(at, `command, args and env come to ${size(total)}; at most ${size(MAX_EXEC_BYTES)} can be passed to a process`);
  };
  (pod.spec.initContainers ?? []).forEach((c, i) => check(c, 'initContainers', i));
  pod.spec.containers.forEach((c, i) => check(c, 'containers', i));
}

const VOLUME_SOURCES = [
  'hostPath',
  'emptyDir',
  'configMap',
  'secret',
  'persistentVolumeClaim',
  'csi',
  'ephemeral',
  'projected',
  'downwardAPI',
  'image',
  'nfs',
  'iscsi',
  'local',
  'gitRepo',
];

/** Rules that span fields, which JSON Schema cannot say clearly. Runs only on schema-valid pods. */
function semanticChecks(pod: Pod, fail: Report): void {
  const spec = pod.spec;
  const names = new Map<string, string>();
  const volumes = new Set<string>();
  const byName = new Map((spec.volumes ?? []).map((v) => [v.name, v]));
  (spec.volumes ?? []).forEach((v, i) => {
    if (volumes.has(v.name)) fail(['spec', 'volumes', i, 'name'], `duplicate volume name "${v.name}"`);
    volumes.add(v.name);
    const sources = VOLUME_SOURCES.filter((s) => (v as unknown as Record<string, unknown>)[s] !== undefined);
    if (sources.length > 1) fail(['spec', 'volumes', i], `a volume has exactly one source; found ${sources.join(' and ')}`);
    if (v.hostPath && v.hostPath.path.split('/').includes('..')) fail(['spec', 'volumes', i, 'hostPath', 'path'], "must not contain '..'");
    if (v.emptyDir?.sizeLimit !== undefined && v.emptyDir.medium !== 'Memory') {
      fail(
        ['spec', 'volumes', i, 'emptyDir', 'sizeLimit'],
        'not enforced on a disk emptyDir: the kubelet enforces it by eviction, and never evicts a static pod; podrun does the same (a medium: Memory emptyDir is sized by it)',
        { severity: 'warning' },
      );
    }
    downwardApiChecks(spec, v, i, fail);
  });
  const hostPorts = new Map<string, string>();
  const checkContainer = (c: Container, list: 'containers' | 'initContainers', i: number): void => {
    const at: PathSegment[] = ['spec', list, i];
    const prior = names.get(c.name);
    if (prior) fail([...at, 'name'], `duplicate container name "${c.name}" (also ${prior})`);
    names.set(c.name, fieldPath(at));
    if (list === 'containers' && c.restartPolicy !== undefined) {
      fail([...at, 'restartPolicy'], 'only init containers may set restartPolicy (Always makes a sidecar)', { atKey: true });
    }
    (c.volumeMounts ?? []).forEach((m, j) => {
      if (!volumes.has(m.name)) fail([...at, 'volumeMounts', j, 'name'], `no volume named "${m.name}" in spec.volumes`);
      // The apiserver's rule (validation.go validateMountPropagation): a mount that propagates back to the host is for privileged containers only.
      if (m.mountPropagation === 'Bidirectional' && c.securityContext?.privileged !== true) {
        fail([...at, 'volumeMounts', j, 'mountPropagation'], 'Bidirectional mount propagation is available only to privileged containers');
      }
      const v = byName.get(m.name);
      if (m.subPath && v?.emptyDir?.medium === 'Memory') {
        fail(
          [...at, 'volumeMounts', j, 'subPath'],
          'podrun cannot mount a subPath of a medium: Memory emptyDir (an engine tmpfs volume); mount the whole volume, or use a disk emptyDir',
        );
      }
      if (v && (v.downwardAPI || v.projected) && m.readOnly === false) {
        fail([...at, 'volumeMounts', j, 'readOnly'], 'downward API volumes are always mounted read-only, as the kubelet mounts them', { severity: 'warning' });
      }
    });
    const portNames = new Set((c.ports ?? []).flatMap((p) => (p.name ? [p.name] : [])));
    (c.env ?? []).forEach((e, j) => {
      if (e.value !== undefined && e.value !== '' && e.valueFrom)
        fail([...at, 'env', j, 'valueFrom'], 'may not be given together with a non-empty value', { atKey: true });
    });
    (c.ports ?? []).forEach((p, j) => {
      if (p.hostIP !== undefined && !isIP(p.hostIP)) fail([...at, 'ports', j, 'hostIP'], `${JSON.stringify(p.hostIP)} is not an IP address`);
      if (spec.hostNetwork && p.hostPort && p.hostPort !== p.containerPort) {
        fail([...at, 'ports', j, 'hostPort'], 'must equal containerPort when hostNetwork is true');
      }
      if (p.hostPort) {
        const k = `${p.hostIP ?? '0.0.0.0'}:${p.hostPort}/${p.protocol ?? 'TCP'}`;
        const other = hostPorts.get(k);
        if (other) fail([...at, 'ports', j, 'hostPort'], `host port ${k} is already used by ${other}`);
        hostPorts.set(k, fieldPath([...at, 'ports', j]));
      }
    });
    const probes = ['livenessProbe', 'readinessProbe', 'startupProbe'] as const;
    for (const kind of probes) {
      const probe = c[kind];
      if (!probe) continue;
      if (list === 'initContainers' && c.restartPolicy !== 'Always') {
        fail([...at, kind], 'init containers that are not sidecars may not have probes', { atKey: true });
      }
      checkHandler(probe, [...at, kind], ['exec', 'httpGet', 'tcpSocket', 'grpc'], portNames, fail);
      if (kind !== 'readinessProbe' && probe.successThreshold !== undefined && probe.successThreshold !== 1) {
        fail([...at, kind, 'successThreshold'], 'must be 1 for liveness and startup probes');
      }
    }
    for (const hook of ['postStart', 'preStop'] as const) {
      const h = c.lifecycle?.[hook];
      if (!h) continue;
      checkHandler(h, [...at, 'lifecycle', hook], ['exec', 'httpGet', 'tcpSocket', 'sleep'], portNames, fail);
      // The API still accepts it (deprecated), but the kubelet's hook runner has no tcpSocket case: the hook fails.
      if (h.tcpSocket)
        fail(
          [...at, 'lifecycle', hook, 'tcpSocket'],
          `the kubelet does not run tcpSocket hooks, and neither does podrun: the hook fails${hook === 'postStart' ? ' and the container is killed (FailedPostStartHook)' : ' (FailedPreStopHook) and the container is stopped'}`,
          { atKey: true, severity: 'warning' },
        );
    }
    for (const kind of ['limits', 'requests'] as const) {
      if (c.resources?.[kind]?.['ephemeral-storage'] !== undefined) {
        fail(
          [...at, 'resources', kind, 'ephemeral-storage'],
          'not enforced: the kubelet enforces it by eviction, and never evicts a static pod; podrun does the same',
          { atKey: true, severity: 'warning' },
        );
      }
    }
  };
  (spec.initContainers ?? []).forEach((c, i) => checkContainer(c, 'initContainers', i));
  spec.containers.forEach((c, i) => checkContainer(c, 'containers', i));
  if (spec.hostNetwork && spec.hostname) {
    fail(['spec', 'hostname'], "cannot be set with hostNetwork: the pod uses the host's hostname", { severity: 'warning' });
  }
  if (spec.dnsPolicy === 'None' && !spec.dnsConfig) fail(['spec', 'dnsConfig'], 'is required when dnsPolicy is None', { atKey: true });
  const dns = spec.dnsConfig;
  if ((dns?.nameservers?.length ?? 0) > 3) fail(['spec', 'dnsConfig', 'nameservers'], 'at most 3 nameservers');
  if ((dns?.searches?.length ?? 0) > 32) fail(['spec', 'dnsConfig', 'searches'], 'at most 32 search domains');
  (dns?.nameservers ?? []).forEach((n, i) => {
    if (!isIP(n)) fail(['spec', 'dnsConfig', 'nameservers', i], `${JSON.stringify(n)} is not an IP address`);
  });
  (spec.hostAliases ?? []).forEach((a, i) => {
    if (!isIP(a.ip)) fail(['spec', 'hostAliases', i, 'ip'], `${JSON.stringify(a.ip)} is not an IP address`);
  });
  if (spec.shareProcessNamespace && spec.hostPID) fail(['spec', 'shareProcessNamespace'], 'cannot be combined with hostPID');
  // The kubelet admits a pod only for its own OS (lifecycle/predicate.go): podrun's nodes are Linux.
  if (spec.os && spec.os.name !== 'linux') fail(['spec', 'os', 'name'], `${JSON.stringify(spec.os.name)}: this node runs linux pods only`);
  if (spec.hostUsers === false)
    fail(['spec', 'hostUsers'], 'false asks for a user namespace, which podrun cannot give on the Docker engine; remove it, or set true');
}

/** The apiserver's downwardAPI rules (validateDownwardAPIVolumeFile), for a volume or a projection of one. */
function downwardApiChecks(spec: Pod['spec'], v: Volume, i: number, fail: Report): void {
  const containers = new Set([...(spec.initContainers ?? []), ...spec.containers].map((c) => c.name));
  const check = (items: DownwardAPIVolumeFile[] | undefined, at: PathSegment[]): void => {
    const paths = new Set<string>();
    (items ?? []).forEach((f, j) => {
      const here = [...at, 'items', j];
      if (f.path.startsWith('/') || f.path.split('/').includes('..') || f.path === '') fail([...here, 'path'], "must be a relative path without '..'");
      if (paths.has(f.path)) fail([...here, 'path'], `duplicate path "${f.path}"`);
      paths.add(f.path);
      if (!f.fieldRef === !f.resourceFieldRef) fail(here, 'needs exactly one of fieldRef and resourceFieldRef');
      if (f.fieldRef && !DOWNWARD_VOLUME_FIELDS.test(f.fieldRef.fieldPath)) {
        fail(
          [...here, 'fieldRef', 'fieldPath'],
          `${JSON.stringify(f.fieldRef.fieldPath)}: a downwardAPI volume can hold metadata.name, metadata.namespace, metadata.uid, metadata.labels, metadata.annotations (or one key of them)`,
        );
      }
      if (f.resourceFieldRef) {
        if (!f.resourceFieldRef.containerName) fail([...here, 'resourceFieldRef', 'containerName'], 'is required in a volume');
        else if (!containers.has(f.resourceFieldRef.containerName))
          fail([...here, 'resourceFieldRef', 'containerName'], `no container named "${f.resourceFieldRef.containerName}"`);
      }
    });
  };
  if (v.downwardAPI) check(v.downwardAPI.items, ['spec', 'volumes', i, 'downwardAPI']);
  (v.projected?.sources ?? []).forEach((src, k) => {
    if (src.downwardAPI) check(src.downwardAPI.items, ['spec', 'volumes', i, 'projected', 'sources', k, 'downwardAPI']);
  });
}

const DOWNWARD_VOLUME_FIELDS = /^metadata\.(name|namespace|uid|labels|annotations)$|^metadata\.(labels|annotations)\['[^']+'\]$/;

function checkHandler(h: Probe | LifecycleHandler, at: PathSegment[], kinds: string[], portNames: Set<string>, fail: Report): void {
  const present = kinds.filter((k) => (h as Record<string, unknown>)[k] !== undefined);
  if (present.length !== 1) {
    fail(at, present.length ? `must have exactly one handler; found ${present.join(' and ')}` : `must have one handler: ${kinds.join(', ')}`);
    return;
  }
  const port = h.httpGet?.port ?? h.tcpSocket?.port;
  const which = h.httpGet ? 'httpGet' : 'tcpSocket';
  if (typeof port === 'string' && !/^[0-9]+$/.test(port) && !portNames.has(port)) {
    fail([...at, which, 'port'], `names no port of this container ("${port}")`);
  }
  if (typeof port === 'number' && (port < 1 || port > 65535)) fail([...at, which, 'port'], 'must be between 1 and 65535');
}

// priorityClassName is not here: system-node-critical sets the OOM protection (qos.ts).
