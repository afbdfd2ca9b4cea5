import type { Pod } from './types.js';
import { DEFAULT_NAMESPACE } from './defaults.js';

export function podKey(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

export function keyOf(pod: Pod): string {
  return podKey(pod.metadata.namespace ?? DEFAULT_NAMESPACE, pod.metadata.name);
}

/** Whether a value read back from a file (an applied set, apply's cache) is named as a pod must be for keyOf. */
export function isNamed(p: unknown): boolean {
  const m = (p as { metadata?: { name?: unknown; namespace?: unknown } } | null)?.metadata;
  return typeof m?.name === 'string' && (m.namespace === undefined || typeof m.namespace === 'string');
}

/**
 * The pod's UID: metadata.uid when given, else derived from namespace/name alone, so editing the
 * file, moving it, or serving it from a URL instead never changes who the pod is.
 */
export function podUid(pod: Pod): string {
  return pod.metadata.uid || derivedUid(keyOf(pod));
}

/**
 * The uid of a pod with none given, from its namespace/name key. `node:crypto` is loaded on the
 * first call, not with this module: `validate` reads no uid and so never loads it.
 */
export function derivedUid(key: string): string {
  const h = process.getBuiltinModule('node:crypto').createHash('sha256').update(`podrun.io/pod/${key}`).digest('hex');
  // Shaped like a version-5 UUID so tools that expect one are content.
  const variant = ((parseInt(h.slice(16, 18), 16) & 0x3f) | 0x80).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-${variant}${h.slice(18, 20)}-${h.slice(20, 32)}`;
}
