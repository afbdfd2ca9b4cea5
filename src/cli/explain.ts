import { readPackageFile } from '../base/package-file.js';
import { EXIT, type Io } from './context.js';

/**
 * `podrun explain pod.spec.containers.livenessProbe`: what a field means (the Kubernetes API's
 * description, from schemas/pod.schema.json) and what podrun does with it: honours it, accepts
 * and ignores it, or refuses it. Shaped like kubectl explain.
 */

interface Schema {
  $ref?: string;
  type?: string;
  description?: string;
  properties?: Record<string, Schema>;
  items?: Schema;
  enum?: unknown[];
  const?: unknown;
  additionalProperties?: boolean | Schema;
  not?: unknown;
  required?: string[];
}

interface Root extends Schema {
  $defs: Record<string, Schema>;
}

const SPECIAL: Record<string, string> = {
  ignored: 'accepted and ignored (validate and apply print a warning that says why)',
  serverSet: 'accepted and ignored, as the kubelet ignores it in a static pod (the apiserver sets it)',
  unsupported: 'refused: podrun cannot honour this field on the Docker engine',
  staticRule: 'refused, as the kubelet refuses it in a static pod',
};

function defName(s: Schema): string | undefined {
  return s.$ref?.startsWith('#/$defs/') ? s.$ref.slice(8) : undefined;
}

function resolve(root: Root, s: Schema): Schema {
  let cur = s;
  for (let i = 0; i < 10; i++) {
    const d = defName(cur);
    if (!d || SPECIAL[d] !== undefined) return cur;
    cur = { ...root.$defs[d], ...(cur.description ? { description: cur.description } : {}) };
  }
  return cur;
}

/** kubectl's type words: <string>, <integer>, <[]Container>, <map[string]string>, <Object>. */
function typeOf(root: Root, s: Schema): string {
  const d = defName(s);
  if (d === 'stringMap') return 'map[string]string';
  if (d === 'stringList') return '[]string';
  if (d === 'quantity' || d === 'intOrString') return d === 'quantity' ? 'Quantity' : 'IntOrString';
  if (d && SPECIAL[d] === undefined) {
    const target = root.$defs[d]!;
    return target.properties ? d : typeOf(root, target);
  }
  if (s.type === 'array' && s.items) return `[]${typeOf(root, s.items)}`;
  if (s.properties) return 'Object';
  if (s.enum) return typeof s.enum[0] === 'string' ? 'string' : 'integer';
  if (s.const !== undefined) return typeof s.const;
  return s.type ?? (d ? '' : 'Object');
}

/** ` <type>`, or nothing for a field podrun ignores or refuses (its schema keeps no type for it). */
function typeTag(root: Root, s: Schema): string {
  const t = typeOf(root, s);
  return t ? ` <${t}>` : '';
}

/** kubectl's description of a Pod; the schema's own root description is written for schema readers. */
const POD_DESCRIPTION = "Pod is a collection of containers that can run on a host. podrun runs each as a static pod on this machine's Docker engine.";

function support(s: Schema): string {
  const d = defName(s);
  return (d && SPECIAL[d]) ?? 'honoured';
}

function wrap(text: string, indent: string, width = 80): string[] {
  const out: string[] = [];
  for (const para of text.split('\n\n')) {
    let line = '';
    for (const word of para.split(/\s+/).filter(Boolean)) {
      if (line && (indent + line + ' ' + word).length > width) {
        out.push(indent + line);
        line = word;
      } else line = line ? `${line} ${word}` : word;
    }
    if (line) out.push(indent + line);
    out.push('');
  }
  while (out.at(-1) === '') out.pop();
  return out;
}

export function explain(root: Root, path: string, recursive = false): { lines: string[] } | { error: string } {
  const parts = path.split('.').filter(Boolean);
  const head = parts.shift()?.toLowerCase();
  if (head !== 'pod' && head !== 'pods' && head !== 'po')
    return { error: `podrun has no resource type "${head ?? ''}": it knows Pods only (podrun explain pod.spec...)` };
  let node: Schema = root;
  let field: { name: string; schema: Schema } | undefined;
  for (const p of parts) {
    const obj = resolve(root, node.type === 'array' && node.items ? node.items : node);
    const arrayItem = obj.type === 'array' && obj.items ? resolve(root, obj.items) : obj;
    const next = arrayItem.properties?.[p];
    if (!next) return { error: `field "${p}" does not exist${arrayItem.properties ? ` (fields: ${Object.keys(arrayItem.properties).join(', ')})` : ''}` };
    field = { name: p, schema: next };
    node = next;
  }
  const lines = ['KIND:       Pod', 'VERSION:    v1', ''];
  if (field) lines.push(`FIELD: ${field.name}${typeTag(root, field.schema)}`, '');
  const own = field ? field.schema : root;
  const [description, note] = (field ? (own.description ?? resolve(root, own).description ?? '') : POD_DESCRIPTION).split('\n\npodrun:') as [
    string,
    string | undefined,
  ];
  if (description) lines.push('DESCRIPTION:', ...wrap(description, '    '), '');
  // A field's own podrun note says more than its support class ("honoured, except…").
  const podrun = !field
    ? 'runs Pods (and PodLists of them) as static pods'
    : note && support(field.schema) === 'honoured'
      ? note.trim()
      : support(field.schema);
  lines.push('PODRUN:', ...wrap(podrun, '    '), '');
  let target = resolve(root, own);
  if (target.type === 'array' && target.items) target = resolve(root, target.items);
  if (target.properties && support(own) === 'honoured') {
    lines.push('FIELDS:');
    const list = (props: Record<string, Schema>, indent: string, depth: number): void => {
      for (const [name, s] of Object.entries(props)) {
        const required = target.required?.includes(name) && depth === 0 ? ' -required-' : '';
        const sup = support(s);
        lines.push(`${indent}${name}\t${typeTag(root, s).trim()}${required}${sup === 'honoured' ? '' : ` (${sup.split(':')[0]!.split(',')[0]})`}`);
        if (recursive) {
          let sub = resolve(root, s);
          if (sub.type === 'array' && sub.items) sub = resolve(root, sub.items);
          if (sub.properties && sup === 'honoured' && depth < 6) list(sub.properties, `${indent}  `, depth + 1);
        } else {
          const d = (s.description ?? '').split('\n\npodrun:')[0]!;
          if (d) lines.push(...wrap(d, `${indent}  `).slice(0, 2), '');
        }
      }
    };
    list(target.properties, '  ', 0);
  }
  while (lines.at(-1) === '') lines.pop();
  return { lines };
}

export function explainCommand(path: string, o: { recursive: boolean }, io: Io): number {
  const root = JSON.parse(readPackageFile('schemas/pod.schema.json')) as Root;
  const r = explain(root, path, o.recursive);
  if ('error' in r) {
    io.err(`error: ${r.error}`);
    return EXIT.failed;
  }
  for (const l of r.lines) io.out(l);
  return EXIT.ok;
}
