/**
 * kubectl's JSONPath templates (`-o jsonpath='{.items[*].metadata.name}'`), after
 * k8s.io/client-go/util/jsonpath: text outside braces is printed as is; inside, `.field`,
 * `['field']`, `[n]`, `[a:b]`, `[*]`, `..field` (recursive), `[?(@.x=="v")]` filters (==, !=, <,
 * <=, >, >=, or just `@.x`), `{range ...}...{end}`, `{@}` and string literals (`{"\n"}`).
 * Several results of one expression are joined by a space; objects print as JSON. Pure.
 */

type Step =
  | { kind: 'field'; name: string }
  | { kind: 'recursive'; name: string }
  | { kind: 'index'; index: number }
  | { kind: 'slice'; start?: number; end?: number }
  | { kind: 'all' }
  | { kind: 'filter'; path: Step[]; op?: string; value?: unknown };

type Node =
  { kind: 'text'; text: string } | { kind: 'expr'; steps: Step[] } | { kind: 'range'; steps: Step[]; body: Node[] } | { kind: 'literal'; text: string };

function unquote(s: string): string {
  const body = s.slice(1, -1);
  return body.replace(/\\(.)/g, (_, c: string) => ({ n: '\n', t: '\t', r: '\r' })[c] ?? c);
}

function parsePath(src: string, whole: string): Step[] {
  const steps: Step[] = [];
  let i = 0;
  const fail = (): never => {
    throw new Error(`invalid jsonpath "${whole}" at "${src.slice(i)}"`);
  };
  if (src.startsWith('$')) i = 1;
  if (src[i] === '@') i++;
  while (i < src.length) {
    if (src.startsWith('..', i)) {
      const m = /^[\w-]+/.exec(src.slice(i + 2)) ?? fail();
      steps.push({ kind: 'recursive', name: m[0] });
      i += 2 + m[0].length;
    } else if (src[i] === '.') {
      const m = /^[\w-]*/.exec(src.slice(i + 1))!;
      if (m[0]) steps.push({ kind: 'field', name: m[0] });
      i += 1 + m[0].length;
    } else if (src[i] === '[') {
      const close = matching(src, i, '[', ']');
      if (close < 0) fail();
      const inner = src.slice(i + 1, close).trim();
      if (inner === '*') steps.push({ kind: 'all' });
      else if (/^-?\d+$/.test(inner)) steps.push({ kind: 'index', index: Number(inner) });
      else if (/^-?\d*:-?\d*$/.test(inner)) {
        const [a, b] = inner.split(':');
        steps.push({ kind: 'slice', ...(a ? { start: Number(a) } : {}), ...(b ? { end: Number(b) } : {}) });
      } else if (/^'.*'$|^".*"$/.test(inner)) steps.push({ kind: 'field', name: unquote(inner) });
      else if (inner.startsWith('?(') && inner.endsWith(')')) {
        const f = /^@([^=!<>]*?)\s*(==|!=|<=|>=|<|>)\s*(.+)$/.exec(inner.slice(2, -1).trim());
        if (f) {
          const raw = f[3]!.trim();
          const value = /^'.*'$|^".*"$/.test(raw)
            ? unquote(raw)
            : Number.isFinite(Number(raw))
              ? Number(raw)
              : raw === 'true'
                ? true
                : raw === 'false'
                  ? false
                  : raw;
          steps.push({ kind: 'filter', path: parsePath(`@${f[1]!}`, whole), op: f[2]!, value });
        } else {
          const e = inner.slice(2, -1).trim();
          if (!e.startsWith('@')) fail();
          steps.push({ kind: 'filter', path: parsePath(e, whole) });
        }
      } else fail();
      i = close + 1;
    } else fail();
  }
  return steps;
}

function matching(s: string, from: number, open: string, close: string): number {
  let depth = 0;
  let quote = '';
  for (let i = from; i < s.length; i++) {
    const c = s[i]!;
    if (quote) {
      if (c === '\\') i++;
      else if (c === quote) quote = '';
    } else if (c === '"' || c === "'") quote = c;
    else if (c === open) depth++;
    else if (c === close && --depth === 0) return i;
  }
  return -1;
}

export function parseTemplate(template: string): Node[] {
  const tokens: ({ kind: 'text'; text: string } | { kind: 'brace'; text: string })[] = [];
  let i = 0;
  while (i < template.length) {
    const open = template.indexOf('{', i);
    if (open < 0) {
      tokens.push({ kind: 'text', text: template.slice(i) });
      break;
    }
    if (open > i) tokens.push({ kind: 'text', text: template.slice(i, open) });
    const close = matching(template, open, '{', '}');
    if (close < 0) throw new Error(`invalid jsonpath "${template}": unclosed {`);
    tokens.push({ kind: 'brace', text: template.slice(open + 1, close).trim() });
    i = close + 1;
  }
  let pos = 0;
  const block = (inRange: boolean): Node[] => {
    const nodes: Node[] = [];
    while (pos < tokens.length) {
      const t = tokens[pos++]!;
      if (t.kind === 'text') nodes.push({ kind: 'text', text: t.text });
      else if (t.text === 'end') {
        if (!inRange) throw new Error(`invalid jsonpath "${template}": {end} without {range}`);
        return nodes;
      } else if (t.text.startsWith('range ')) nodes.push({ kind: 'range', steps: parsePath(t.text.slice(6).trim(), template), body: block(true) });
      else if (/^'.*'$|^".*"$/.test(t.text)) nodes.push({ kind: 'literal', text: unquote(t.text) });
      else nodes.push({ kind: 'expr', steps: parsePath(t.text, template) });
    }
    if (inRange) throw new Error(`invalid jsonpath "${template}": {range} without {end}`);
    return nodes;
  };
  return block(false);
}

function children(v: unknown): unknown[] {
  if (Array.isArray(v)) return v;
  if (v && typeof v === 'object') return Object.values(v);
  return [];
}

function apply(values: unknown[], steps: Step[]): unknown[] {
  let cur = values;
  for (const s of steps) {
    const next: unknown[] = [];
    for (const v of cur) {
      switch (s.kind) {
        case 'field':
          if (v && typeof v === 'object' && !Array.isArray(v) && s.name in v) next.push((v as Record<string, unknown>)[s.name]);
          break;
        case 'recursive': {
          const walk = (x: unknown): void => {
            if (x && typeof x === 'object' && !Array.isArray(x) && s.name in x) next.push((x as Record<string, unknown>)[s.name]);
            for (const c of children(x)) walk(c);
          };
          walk(v);
          break;
        }
        case 'index':
          if (Array.isArray(v)) {
            const x = v[s.index < 0 ? v.length + s.index : s.index];
            if (x !== undefined) next.push(x);
          }
          break;
        case 'slice':
          if (Array.isArray(v)) next.push(...v.slice(s.start, s.end));
          break;
        case 'all':
          next.push(...children(v));
          break;
        case 'filter':
          for (const item of children(v)) {
            const [got] = apply([item], s.path);
            if (s.op === undefined ? got !== undefined : compare(got, s.op, s.value)) next.push(item);
          }
          break;
      }
    }
    cur = next;
  }
  return cur;
}

function compare(a: unknown, op: string, b: unknown): boolean {
  switch (op) {
    case '==':
      return a === b || String(a) === String(b);
    case '!=':
      return !(a === b || String(a) === String(b));
    default: {
      const x = Number(a);
      const y = Number(b);
      return op === '<' ? x < y : op === '<=' ? x <= y : op === '>' ? x > y : x >= y;
    }
  }
}

function show(v: unknown): string {
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/** Renders a template against a value; throws on a template it cannot read. */
export function renderJsonPath(template: string, value: unknown): string {
  const run = (nodes: Node[], at: unknown): string =>
    nodes
      .map((n) => {
        switch (n.kind) {
          case 'text':
          case 'literal':
            return n.text;
          case 'expr':
            return apply([at], n.steps).map(show).join(' ');
          case 'range':
            return apply([at], n.steps)
              .map((item) => run(n.body, item))
              .join('');
        }
      })
      .join('');
  return run(parseTemplate(template), value);
}
