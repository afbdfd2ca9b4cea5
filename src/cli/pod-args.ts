import type { Io } from './context.js';
import { parseSelector, type Selector } from './selector.js';

/** The words kubectl takes for the pod type: `pod NAME`, `pods/NAME`, `po/NAME`. */
export const POD_TYPES = ['pod', 'pods', 'po'];

/** `-l` as given: its selector, or undefined after saying why it is refused (the caller exits 2). */
export function selectorFrom(text: string | undefined, io: Io): Selector | undefined {
  try {
    return parseSelector(text ?? '');
  } catch (err) {
    io.err(`podrun: ${(err as Error).message}`);
    return undefined;
  }
}

/** A pod argument as kubectl takes it (NAME, pod/NAME), or as podrun also does (namespace/NAME). */
export function podArg(arg: string, namespace: string): { namespace: string; name: string } {
  const bare = arg.replace(/^(pod|pods|po)\//, '');
  const i = bare.indexOf('/');
  return i >= 0 ? { namespace: bare.slice(0, i), name: bare.slice(i + 1) } : { namespace, name: bare };
}

/** kubectl's line when nothing matched. */
export function noResources(io: Io, namespace: string | undefined): void {
  io.err(namespace === undefined ? 'No resources found' : `No resources found in ${namespace} namespace.`);
}

/**
 * A named pod that is not there. kubectl says "Error from server (NotFound)"; podrun has no
 * server, so it names what it looked in, and where a pod of that name is instead (the usual cause
 * is a forgotten -n).
 */
export function podNotFound(io: Io, name: string, namespace: string, all: readonly { namespace: string; name: string }[]): void {
  const elsewhere = [...new Set(all.filter((p) => p.name === name && p.namespace !== namespace).map((p) => p.namespace))].sort();
  io.err(`Error: pod "${name}" not found in namespace "${namespace}"`);
  if (elsewhere.length)
    io.err(`  a pod "${name}" is in namespace ${elsewhere.map((n) => `"${n}"`).join(', ')}: add -n ${elsewhere[0]}${elsewhere.length > 1 ? ' (or -A)' : ''}`);
}

/**
 * Pods in namespace/name order. Names and namespaces are DNS names (lower-case letters, digits,
 * '-' and '.'), which compare the same by code unit as by localeCompare; localeCompare's first
 * call builds an ICU collator, 6 ms of a `get`.
 */
export function byPodKey(a: { metadata: { namespace?: string; name: string } }, b: { metadata: { namespace?: string; name: string } }): number {
  const x = `${a.metadata.namespace ?? ''}/${a.metadata.name}`;
  const y = `${b.metadata.namespace ?? ''}/${b.metadata.name}`;
  return x < y ? -1 : x > y ? 1 : 0;
}
