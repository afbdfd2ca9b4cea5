/**
 * Label selectors as kubectl reads them (`-l`): equality (`app=web`, `app==web`, `tier!=db`) and
 * sets (`env in (prod,qa)`, `env notin (dev)`, `app`, `!app`), comma-separated, all must hold.
 * After k8s.io/apimachinery/pkg/labels/selector.go. Pure.
 */

type Requirement = { key: string; op: 'exists' | 'notexists' } | { key: string; op: 'in' | 'notin'; values: string[] };

export type Selector = (labels: Readonly<Record<string, string>> | undefined) => boolean;

const KEY = /^([a-z0-9A-Z]([-a-z0-9A-Z_.]*[a-z0-9A-Z])?\/)?[a-z0-9A-Z]([-a-z0-9A-Z_.]*[a-z0-9A-Z])?$/;
const VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

/** Splits on commas outside parentheses. */
function clauses(text: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of text) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      out.push(cur);
      cur = '';
    } else {
      cur += ch;
    }
  }
  out.push(cur);
  return out.map((c) => c.trim());
}

function checkKey(key: string, whole: string): string {
  if (!KEY.test(key)) throw new Error(`invalid label selector "${whole}": "${key}" is not a valid label key`);
  return key;
}

function checkValue(v: string, whole: string): string {
  if (!VALUE.test(v) || v.length > 63) throw new Error(`invalid label selector "${whole}": "${v}" is not a valid label value`);
  return v;
}

function requirement(c: string, whole: string): Requirement {
  let m = /^(\S+?)\s+(in|notin)\s+\((.*)\)$/.exec(c);
  if (m) return { key: checkKey(m[1]!, whole), op: m[2] as 'in' | 'notin', values: m[3]!.split(',').map((v) => checkValue(v.trim(), whole)) };
  m = /^(\S+?)\s*(==|!=|=)\s*(\S*)$/.exec(c);
  if (m) return { key: checkKey(m[1]!, whole), op: m[2] === '!=' ? 'notin' : 'in', values: [checkValue(m[3]!, whole)] };
  m = /^!\s*(\S+)$/.exec(c);
  if (m) return { key: checkKey(m[1]!, whole), op: 'notexists' };
  if (c && !/\s/.test(c)) return { key: checkKey(c, whole), op: 'exists' };
  throw new Error(`invalid label selector "${whole}" (use e.g. app=web, tier!=db, env in (prod,qa), app, !app)`);
}

/** Throws with a message that names the selector and the bad part. */
export function parseSelector(text: string): Selector {
  if (!text.trim()) return () => true;
  const reqs = clauses(text).map((c) => requirement(c, text));
  return (labels) =>
    reqs.every((r) => {
      const has = labels !== undefined && Object.prototype.hasOwnProperty.call(labels, r.key);
      const v = has ? labels[r.key] : undefined;
      switch (r.op) {
        case 'exists':
          return has;
        case 'notexists':
          return !has;
        case 'in':
          return has && r.values.includes(v!);
        case 'notin':
          // As Kubernetes: a pod without the label matches `key!=value` and `key notin (...)`.
          return !has || !r.values.includes(v!);
      }
    });
}
