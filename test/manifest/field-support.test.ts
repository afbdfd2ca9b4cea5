import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadManifestText } from '../../src/manifest/load.js';
import { OPEN_POLICY } from '../../src/manifest/policy.js';

// Every field the Pod schema accepts is honoured as the kubelet honours it (and has a row in
// docs/kubelet-parity.md), or accepted with a warning that says why it is ignored, or refused.
// A field added to the schema without one of those fails here.

interface Schema {
  $ref?: string;
  type?: string;
  items?: Schema;
  properties?: Record<string, Schema>;
  patternProperties?: Record<string, Schema>;
}
const schema = JSON.parse(readFileSync(fileURLToPath(new URL('../../schemas/pod.schema.json', import.meta.url)), 'utf8')) as Schema & {
  $defs: Record<string, Schema>;
};
const parity = readFileSync(fileURLToPath(new URL('../../docs/kubelet-parity.md', import.meta.url)), 'utf8');

const SPECIAL = new Set(['ignored', 'unsupported', 'staticRule', 'serverSet']);
const SCALAR = new Set(['dnsLabel', 'dnsSubdomain', 'portName', 'port', 'intOrString', 'quantity', 'stringMap', 'stringList', 'nonNegative', 'positive']);

/** A field: its key (`Owner.path`, the schema definition that holds it), its path from the pod, and how it is treated. */
interface Field {
  key: string;
  path: string[];
  support: string;
}

function walk(): Field[] {
  const out: Field[] = [];
  const seen = new Set<string>();
  const visit = (node: Schema, owner: string, rel: string[], path: string[]): void => {
    const key = `${owner}.${rel.join('.')}`;
    const ref = node.$ref?.slice('#/$defs/'.length);
    if (ref && SPECIAL.has(ref)) return void out.push({ key, path, support: ref });
    out.push({ key, path, support: 'honoured' });
    if (ref && SCALAR.has(ref)) return;
    if (ref) {
      if (seen.has(ref)) return;
      seen.add(ref);
      props(schema.$defs[ref]!, ref, [], path);
      return;
    }
    if (node.type === 'array' && node.items) return props(node.items, owner, rel, [...path, '[]']);
    props(node, owner, rel, path);
  };
  const props = (node: Schema, owner: string, rel: string[], path: string[]): void => {
    if (node.$ref) return visit(node, owner, rel, path);
    for (const [k, v] of Object.entries(node.properties ?? {})) visit(v, owner, [...rel, k], [...path, k]);
    for (const [k, v] of Object.entries(node.patternProperties ?? {})) visit(v, owner, [...rel, k], [...path, k.replace(/^\^/, '') + '2Mi']);
  };
  props(schema, 'Pod', [], []);
  return out;
}

const G = {
  identity: 'Identity and metadata',
  containers: 'Containers and images',
  env: 'Environment and downward API',
  network: 'Ports, DNS and hosts',
  resources: 'Resources, QoS and OOM',
  volumes: 'Volumes and mounts',
  probes: 'Probes',
  hooks: 'Lifecycle hooks',
  security: 'Security context and host namespaces',
  restart: 'Restarts, init containers and termination',
};

/** Each honoured field and the row of docs/kubelet-parity.md that says how. */
const HONOURED: Record<string, string> = {
  ...Object.fromEntries(
    [
      'Pod.apiVersion',
      'Pod.kind',
      'Pod.metadata',
      'Pod.spec',
      'ObjectMeta.name',
      'ObjectMeta.namespace',
      'ObjectMeta.uid',
      'ObjectMeta.labels',
      'ObjectMeta.annotations',
    ].map((k) => [k, G.identity]),
  ),
  ...Object.fromEntries(
    [
      'PodSpec.containers',
      'Container.name',
      'Container.image',
      'Container.imagePullPolicy',
      'Container.command',
      'Container.args',
      'Container.workingDir',
      'Container.stdin',
      'Container.stdinOnce',
      'Container.tty',
      'Container.terminationMessagePath',
      'Container.terminationMessagePolicy',
    ].map((k) => [k, G.containers]),
  ),
  ...Object.fromEntries(
    [
      'Container.env',
      'EnvVar.name',
      'EnvVar.value',
      'EnvVar.valueFrom',
      'EnvVar.valueFrom.fieldRef',
      'EnvVar.valueFrom.fieldRef.apiVersion',
      'EnvVar.valueFrom.fieldRef.fieldPath',
      'EnvVar.valueFrom.resourceFieldRef',
      'EnvVar.valueFrom.resourceFieldRef.containerName',
      'EnvVar.valueFrom.resourceFieldRef.resource',
      'EnvVar.valueFrom.resourceFieldRef.divisor',
    ].map((k) => [k, G.env]),
  ),
  ...Object.fromEntries(
    [
      'Container.ports',
      'ContainerPort.name',
      'ContainerPort.containerPort',
      'ContainerPort.hostPort',
      'ContainerPort.hostIP',
      'ContainerPort.protocol',
      'PodSpec.hostNetwork',
      'PodSpec.hostname',
      'PodSpec.subdomain',
      'PodSpec.hostAliases',
      'PodSpec.hostAliases.ip',
      'PodSpec.hostAliases.hostnames',
      'PodSpec.dnsPolicy',
      'PodSpec.dnsConfig',
      'PodSpec.dnsConfig.nameservers',
      'PodSpec.dnsConfig.searches',
      'PodSpec.dnsConfig.options',
      'PodSpec.dnsConfig.options.name',
      'PodSpec.dnsConfig.options.value',
    ].map((k) => [k, G.network]),
  ),
  ...Object.fromEntries(
    [
      'Container.resources',
      'ResourceRequirements.limits',
      'ResourceRequirements.requests',
      'ResourceList.cpu',
      'ResourceList.memory',
      'ResourceList.ephemeral-storage',
      'PodSpec.priorityClassName',
    ].map((k) => [k, G.resources]),
  ),
  ...Object.fromEntries(
    [
      'Container.volumeMounts',
      'VolumeMount.name',
      'VolumeMount.mountPath',
      'VolumeMount.readOnly',
      'VolumeMount.subPath',
      'VolumeMount.mountPropagation',
      'PodSpec.volumes',
      'Volume.name',
      'Volume.hostPath',
      'Volume.hostPath.path',
      'Volume.hostPath.type',
      'Volume.emptyDir',
      'Volume.emptyDir.medium',
      'Volume.emptyDir.sizeLimit',
      'Volume.downwardAPI',
      'Volume.downwardAPI.items',
      'Volume.downwardAPI.defaultMode',
      'Volume.projected',
      'Volume.projected.sources',
      'Volume.projected.sources.downwardAPI',
      'Volume.projected.defaultMode',
      'DownwardAPIProjection.items',
      'DownwardAPIVolumeFile.path',
      'DownwardAPIVolumeFile.fieldRef',
      'DownwardAPIVolumeFile.fieldRef.apiVersion',
      'DownwardAPIVolumeFile.fieldRef.fieldPath',
      'DownwardAPIVolumeFile.resourceFieldRef',
      'DownwardAPIVolumeFile.resourceFieldRef.containerName',
      'DownwardAPIVolumeFile.resourceFieldRef.resource',
      'DownwardAPIVolumeFile.resourceFieldRef.divisor',
      'DownwardAPIVolumeFile.mode',
    ].map((k) => [k, G.volumes]),
  ),
  ...Object.fromEntries(
    [
      'Container.livenessProbe',
      'Container.readinessProbe',
      'Container.startupProbe',
      'Probe.exec',
      'Probe.httpGet',
      'Probe.tcpSocket',
      'Probe.grpc',
      'Probe.initialDelaySeconds',
      'Probe.timeoutSeconds',
      'Probe.periodSeconds',
      'Probe.successThreshold',
      'Probe.failureThreshold',
      'Probe.terminationGracePeriodSeconds',
      'ExecAction.command',
      'HTTPGetAction.path',
      'HTTPGetAction.port',
      'HTTPGetAction.host',
      'HTTPGetAction.scheme',
      'HTTPGetAction.httpHeaders',
      'HTTPGetAction.httpHeaders.name',
      'HTTPGetAction.httpHeaders.value',
      'TCPSocketAction.port',
      'TCPSocketAction.host',
      'GRPCAction.port',
      'GRPCAction.service',
    ].map((k) => [k, G.probes]),
  ),
  ...Object.fromEntries(
    [
      'Container.lifecycle',
      'Container.lifecycle.postStart',
      'Container.lifecycle.preStop',
      'LifecycleHandler.exec',
      'LifecycleHandler.httpGet',
      'LifecycleHandler.tcpSocket',
      'LifecycleHandler.sleep',
      'LifecycleHandler.sleep.seconds',
    ].map((k) => [k, G.hooks]),
  ),
  ...Object.fromEntries(
    [
      'Container.securityContext',
      'SecurityContext.privileged',
      'SecurityContext.runAsUser',
      'SecurityContext.runAsGroup',
      'SecurityContext.runAsNonRoot',
      'SecurityContext.readOnlyRootFilesystem',
      'SecurityContext.allowPrivilegeEscalation',
      'SecurityContext.capabilities',
      'SecurityContext.capabilities.add',
      'SecurityContext.capabilities.drop',
      'SecurityContext.seccompProfile',
      'SecurityContext.procMount',
      'SeccompProfile.type',
      'PodSpec.securityContext',
      'PodSecurityContext.runAsUser',
      'PodSecurityContext.runAsGroup',
      'PodSecurityContext.runAsNonRoot',
      'PodSecurityContext.supplementalGroups',
      'PodSecurityContext.seccompProfile',
      'PodSecurityContext.sysctls',
      'PodSecurityContext.sysctls.name',
      'PodSecurityContext.sysctls.value',
      'PodSpec.hostPID',
      'PodSpec.hostIPC',
      'PodSpec.shareProcessNamespace',
      'PodSpec.hostUsers',
      'PodSpec.os',
      'PodSpec.os.name',
    ].map((k) => [k, G.security]),
  ),
  ...Object.fromEntries(
    [
      'Container.restartPolicy',
      'PodSpec.initContainers',
      'PodSpec.restartPolicy',
      'PodSpec.terminationGracePeriodSeconds',
      'PodSpec.readinessGates',
      'PodSpec.readinessGates.conditionType',
    ].map((k) => [k, G.restart]),
  ),
};

/** A pod with `path` set to `value`; list elements get the least they need to be valid. */
function podWith(path: string[], value: unknown): string {
  const pod: Record<string, unknown> = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'p' },
    spec: {
      containers: [{ name: 'c', image: 'busybox:1.36', volumeMounts: [{ name: 'v', mountPath: '/v' }], env: [{ name: 'E' }] }],
      volumes: [{ name: 'v' }],
    },
  };
  const fresh: Record<string, () => Record<string, unknown>> = {
    containers: () => ({ name: 'c', image: 'busybox:1.36' }),
    initContainers: () => ({ name: 'i', image: 'busybox:1.36' }),
    volumes: () => ({ name: 'w' }),
    sources: () => ({}),
  };
  let cur: Record<string, unknown> = pod;
  path.forEach((seg, i) => {
    if (seg === '[]') return;
    const last = i === path.length - 1;
    if (last) return void (cur[seg] = value);
    if (path[i + 1] === '[]') {
      const list = (cur[seg] ??= [fresh[seg]?.() ?? {}]) as Record<string, unknown>[];
      cur = list[0]!;
    } else {
      cur = (cur[seg] ??= {}) as Record<string, unknown>;
    }
  });
  return JSON.stringify(pod);
}

function issuesAt(path: string[], value: unknown): { errors: string[]; warnings: string[] } {
  const r = loadManifestText({ file: 'p.json', source: 'file:/p.json', text: podWith(path, value) }, OPEN_POLICY);
  const at = (severity: string) => r.issues.filter((i) => i.severity === severity).map((i) => `${i.field}: ${i.message}`);
  return { errors: at('error'), warnings: at('warning') };
}

/** How a path prints in an issue: spec.containers[0].resizePolicy. */
function printed(path: string[]): string {
  return path
    .join('.')
    .replace(/\.\[\]/g, '[0]')
    .replace(/\.(hugepages-2Mi)/, '["$1"]');
}

const fields = walk();

describe('every Pod field has a behaviour', () => {
  it('walks the whole schema', () => {
    expect(fields.length).toBeGreaterThan(200);
  });

  it('each honoured field is listed with its row in docs/kubelet-parity.md', () => {
    const unlisted = fields.filter((f) => f.support === 'honoured' && !HONOURED[f.key]).map((f) => f.key);
    expect(unlisted, 'honoured fields without a parity row: list them in HONOURED and docs/kubelet-parity.md').toEqual([]);
    for (const group of new Set(Object.values(HONOURED))) expect(parity, `docs/kubelet-parity.md has no row "| ${group} |"`).toContain(`| ${group} |`);
    const stale = Object.keys(HONOURED).filter((k) => !fields.some((f) => f.key === k && f.support === 'honoured'));
    expect(stale, 'HONOURED names fields the schema does not honour').toEqual([]);
  });

  it('each ignored field prints a warning naming it and why', () => {
    for (const f of fields.filter((x) => x.support === 'ignored')) {
      const { errors, warnings } = issuesAt(f.path, 'x');
      expect(errors, f.key).toEqual([]);
      expect(
        warnings.find((w) => w.startsWith(`${printed(f.path)}: ignored: `)),
        `${f.key}: ${warnings.join('; ')}`,
      ).toBeDefined();
    }
  });

  it('each field the apiserver sets is accepted silently, as the kubelet takes it from a static pod', () => {
    for (const f of fields.filter((x) => x.support === 'serverSet')) {
      expect(issuesAt(f.path, null), f.key).toEqual({ errors: [], warnings: [] });
    }
  });

  it('each field podrun cannot honour, or that a static pod may not use, is refused at its path', () => {
    const refused = fields.filter((x) => x.support === 'unsupported' || x.support === 'staticRule');
    expect(refused.length).toBeGreaterThan(30);
    for (const f of refused) {
      const { errors } = issuesAt(f.path, f.support === 'staticRule' ? { name: 'x' } : 'x');
      expect(
        errors.find((e) => e.startsWith(`${printed(f.path)}: `)),
        `${f.key}: ${errors.join('; ')}`,
      ).toBeDefined();
    }
  });
});
