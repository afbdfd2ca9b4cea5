import type { ApplyAsk } from './client.js';

// The socket is a boundary: what `podrun apply` sends is checked for its shape here, each fault
// named by its field, before the agent reads a pod of it. The pods themselves are validated again
// by the agent, as its sources validate a file (agent/asked-apply.ts).

/** An applied set's id names its record's file (`<state-dir>/applied/<id>.json`): nothing but what `applySetId` makes. */
const SET_ID = /^[0-9a-f]{16}$/;

/** Where a pod was applied from is shown by `get` and kept in the record: a path or URL, not a document. */
const MAX_SOURCE = 4096;

const FIELDS: ReadonlySet<string> = new Set(['applySet', 'pods', 'prune', 'dryRun']);

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A line break or other control character: a source is shown on one line of `get`'s table. */
function hasControl(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) < 0x20 || s.charCodeAt(i) === 0x7f) return true;
  return false;
}

/** What is wrong with an apply's question, its field named first; undefined when it is an `ApplyAsk`. */
export function applyAskProblem(v: unknown): string | undefined {
  if (!isObject(v)) return 'expected a JSON object {"applySet", "pods", "prune", "dryRun"}';
  const unknown = Object.keys(v).find((k) => !FIELDS.has(k));
  if (unknown !== undefined) return `${JSON.stringify(unknown).slice(0, 80)}: unknown field`;
  if (typeof v.applySet !== 'string' || !SET_ID.test(v.applySet)) return "applySet: expected the set's id, 16 hex digits";
  if (typeof v.prune !== 'boolean') return 'prune: expected true or false';
  if (typeof v.dryRun !== 'boolean') return 'dryRun: expected true or false';
  if (!Array.isArray(v.pods)) return 'pods: expected a list of {"source", "pod"}';
  for (const [i, p] of (v.pods as unknown[]).entries()) {
    if (!isObject(p)) return `pods[${i}]: expected {"source", "pod"}`;
    const extra = Object.keys(p).find((k) => k !== 'source' && k !== 'pod');
    if (extra !== undefined) return `pods[${i}].${JSON.stringify(extra).slice(0, 80)}: unknown field`;
    if (typeof p.source !== 'string' || p.source === '' || p.source.length > MAX_SOURCE || hasControl(p.source))
      return `pods[${i}].source: expected where the pod was applied from (file:/path, url:…, stdin), one line of at most ${MAX_SOURCE} characters`;
    if (!isObject(p.pod)) return `pods[${i}].pod: expected a Pod object`;
    // One pod each: a PodList here would be a set within the set, its pods unnamed by the question.
    if (p.pod.kind !== 'Pod') return `pods[${i}].pod.kind: expected "Pod"`;
  }
  return undefined;
}

export function isApplyAsk(v: unknown): v is ApplyAsk {
  return applyAskProblem(v) === undefined;
}
