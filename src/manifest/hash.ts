import { createHash } from 'node:crypto';
import type { Container, Pod, Volume } from './types.js';

/**
 * Spec hashes decide whether a running container still matches its manifest. They must be stable
 * across podrun versions (kubernetes #67537: a kubelet upgrade that changes hashes restarts every
 * static pod), so the input is versioned, canonical and pinned by golden vectors in the tests.
 * Changing anything here needs a new HASH_VERSION and a migration, never a silent change.
 */
export const HASH_VERSION = 1;

/** JSON with sorted keys; null, undefined, empty arrays and empty objects are dropped, since the API treats them as unset. */
export function canonicalJson(value: unknown): string {
  const c = canonicalize(value);
  return c === undefined ? 'null' : JSON.stringify(c);
}

function canonicalize(value: unknown): unknown {
  if (value === null || value === undefined) return undefined;
  if (Array.isArray(value)) {
    const items = value.map((v) => canonicalize(v) ?? null);
    return items.length ? items : undefined;
  }
  if (typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(value).sort()) {
      const v = canonicalize((value as Record<string, unknown>)[k]);
      if (v !== undefined) out[k] = v;
    }
    return Object.keys(out).length ? out : undefined;
  }
  return value;
}

function digest(input: unknown): string {
  return createHash('sha256').update(canonicalJson(input)).digest('hex').slice(0, 16);
}

/** Pod-level data a container's runtime config depends on, limited to what it actually uses. */
function containerPodContext(pod: Pod, c: Container): Record<string, unknown> {
  const mounted = new Set((c.volumeMounts ?? []).map((m) => m.name));
  const volumes: Volume[] = (pod.spec.volumes ?? []).filter((v) => mounted.has(v.name));
  const refs = (c.env ?? []).map((e) => e.valueFrom?.fieldRef?.fieldPath ?? '');
  return {
    volumes,
    // Maps to the engine's restart policy on the container, so a change must replace it.
    restartPolicy: pod.spec.restartPolicy,
    securityContext: pod.spec.securityContext ? { ...pod.spec.securityContext, sysctls: undefined } : undefined,
    labels: refs.some((r) => r.startsWith('metadata.labels')) ? pod.metadata.labels : undefined,
    annotations: refs.some((r) => r.startsWith('metadata.annotations')) ? pod.metadata.annotations : undefined,
  };
}

/**
 * Hashes made, by container and by pod: a pod is never changed once loaded (a new version is a new
 * object), and every turn of its worker asks for the same hashes again (the plan, the back-off
 * keys, the record): made once each, they no longer cost each update several canonical JSONs.
 */
const containerHashes = new WeakMap<Container, { pod: Pod; hash: string }>();
const sandboxHashes = new WeakMap<Pod, string>();

/** Hash of one (defaulted) container: its spec plus the pod-level fields that shape it. */
export function containerHash(pod: Pod, c: Container): string {
  const made = containerHashes.get(c);
  if (made?.pod === pod) return made.hash;
  const hash = digest({ v: HASH_VERSION, kind: 'container', container: c, pod: containerPodContext(pod, c) });
  containerHashes.set(c, { pod, hash });
  return hash;
}

/** Hash of the sandbox: what lives on the pod's namespaces holder; a change recreates the whole pod. */
export function sandboxHash(pod: Pod): string {
  let hash = sandboxHashes.get(pod);
  if (hash === undefined) {
    hash = sandboxDigest(pod);
    sandboxHashes.set(pod, hash);
  }
  return hash;
}

function sandboxDigest(pod: Pod): string {
  const s = pod.spec;
  const ports = [...(s.initContainers ?? []), ...s.containers]
    .flatMap((c) => c.ports ?? [])
    .filter((p) => p.hostPort)
    .map((p) => canonicalJson({ containerPort: p.containerPort, hostPort: p.hostPort, hostIP: p.hostIP, protocol: p.protocol ?? 'TCP' }))
    .sort();
  return digest({
    v: HASH_VERSION,
    kind: 'sandbox',
    hostNetwork: s.hostNetwork,
    hostPID: s.hostPID,
    hostIPC: s.hostIPC,
    shareProcessNamespace: s.shareProcessNamespace,
    hostname: s.hostname,
    subdomain: s.subdomain,
    hostAliases: s.hostAliases,
    dnsPolicy: s.dnsPolicy,
    dnsConfig: s.dnsConfig,
    sysctls: s.securityContext?.sysctls,
    ports,
  });
}

/**
 * The version of a whole pod manifest, metadata included: what a health-gated update tries, what
 * it goes back to, and what `describe` names. Not a runtime hash: nothing on the engine carries it.
 */
export function podVersion(pod: Pod): string {
  return digest({ v: HASH_VERSION, kind: 'pod', pod });
}
