import { isObject, type Report } from './report.js';

// The kubelet's static-pod rules (a static pod may reference no API object: no ServiceAccount,
// Secret, ConfigMap or claim) kept apart from validate.ts: they read the raw document, before
// the schema is trusted, and answer to the kubelet's list rather than the apiserver's.

const STATIC_RULE = 'static pods may not reference';

/** The kubelet refuses static pods that reference API objects; so does podrun, with the reason. */
export function staticPodRules(pod: Record<string, unknown>, fail: Report): void {
  const spec = pod.spec;
  if (!isObject(spec)) return;
  if (spec.serviceAccountName !== undefined) fail(['spec', 'serviceAccountName'], `${STATIC_RULE} ServiceAccounts`, { atKey: true });
  if (spec.serviceAccount !== undefined) fail(['spec', 'serviceAccount'], `${STATIC_RULE} ServiceAccounts`, { atKey: true });
  if (spec.imagePullSecrets !== undefined)
    fail(['spec', 'imagePullSecrets'], `${STATIC_RULE} Secrets; podrun reads registry credentials from ~/.docker/config.json`, { atKey: true });
  if (spec.resourceClaims !== undefined) fail(['spec', 'resourceClaims'], `${STATIC_RULE} ResourceClaims`, { atKey: true });
  for (const list of ['containers', 'initContainers'] as const) {
    const cs = spec[list];
    if (!Array.isArray(cs)) continue;
    cs.forEach((c: unknown, i) => {
      if (!isObject(c)) return;
      const at = ['spec', list, i];
      if (c.envFrom !== undefined) fail([...at, 'envFrom'], `${STATIC_RULE} ConfigMaps or Secrets`, { atKey: true });
      const res = c.resources;
      if (isObject(res) && res.claims !== undefined) fail([...at, 'resources', 'claims'], `${STATIC_RULE} ResourceClaims`, { atKey: true });
      if (!Array.isArray(c.env)) return;
      c.env.forEach((env: unknown, j) => {
        if (!isObject(env) || !isObject(env.valueFrom)) return;
        if (env.valueFrom.configMapKeyRef !== undefined) fail([...at, 'env', j, 'valueFrom', 'configMapKeyRef'], `${STATIC_RULE} ConfigMaps`, { atKey: true });
        if (env.valueFrom.secretKeyRef !== undefined) fail([...at, 'env', j, 'valueFrom', 'secretKeyRef'], `${STATIC_RULE} Secrets`, { atKey: true });
      });
    });
  }
  if (Array.isArray(spec.volumes)) {
    const kinds: Record<string, string> = {
      configMap: 'ConfigMaps',
      secret: 'Secrets',
      persistentVolumeClaim: 'PersistentVolumeClaims',
      csi: 'CSI volumes',
      ephemeral: 'ephemeral (PVC-backed) volumes',
    };
    spec.volumes.forEach((v: unknown, i) => {
      if (!isObject(v)) return;
      for (const [k, what] of Object.entries(kinds)) {
        if (v[k] !== undefined) fail(['spec', 'volumes', i, k], `${STATIC_RULE} ${what}`, { atKey: true });
      }
      // A projected volume may hold the downward API only (the kubelet's static-pod rule, as for volumes).
      const sources = isObject(v.projected) && Array.isArray(v.projected.sources) ? v.projected.sources : [];
      sources.forEach((src: unknown, k) => {
        if (!isObject(src)) return;
        for (const [key, what] of Object.entries(PROJECTED_REFS)) {
          if (src[key] !== undefined) fail(['spec', 'volumes', i, 'projected', 'sources', k, key], `${STATIC_RULE} ${what}`, { atKey: true });
        }
      });
    });
  }
}

const PROJECTED_REFS: Record<string, string> = {
  configMap: 'ConfigMaps',
  secret: 'Secrets',
  serviceAccountToken: 'ServiceAccounts',
  clusterTrustBundle: 'ClusterTrustBundles',
  podCertificate: 'PodCertificateRequests',
};
