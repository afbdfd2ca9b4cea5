import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { dump, load } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { formatIssue } from '../../src/manifest/errors.js';
import { loadManifestText } from '../../src/manifest/load.js';
import { decodeManifest } from '../../src/manifest/parse.js';
import { UNSAFE_SYSCTLS_POLICY } from '../fixtures/pods.js';

// Valid manifests, mutated at random: podrun must never throw, and must always either accept the
// result or say what is wrong in clear, located, one-line errors.
const STATIC = fileURLToPath(new URL('../fixtures/static-pods/', import.meta.url));
const EXAMPLES = fileURLToPath(new URL('../../manifests/', import.meta.url));
/** Every field podrun honours at least once, so a mutation can reach each rule. */
const KITCHEN_SINK = readFileSync(fileURLToPath(new URL('../fixtures/kitchen-sink.yaml', import.meta.url)), 'utf8');
const seeds = [...readdirSync(STATIC).map((n) => join(STATIC, n)), ...readdirSync(EXAMPLES).map((n) => join(EXAMPLES, n))]
  .map((p) => readFileSync(p, 'utf8'))
  .concat(KITCHEN_SINK);

const RUNS = Number(process.env.PODRUN_PROPERTY_RUNS ?? 400);

/** The verdict on some bytes, as the sources would reach it: decode, then parse and validate. */
function verdict(bytes: Uint8Array): { pods: number; errors: string[]; lines: number } {
  const decoded = decodeManifest(bytes, 'm.yaml');
  if (!decoded.ok) return { pods: 0, errors: [formatIssue(decoded.issue)], lines: 1 + [...bytes].filter((b) => b === 10).length };
  const r = loadManifestText({ file: 'm.yaml', source: 'file:/m.yaml', text: decoded.text }, UNSAFE_SYSCTLS_POLICY);
  return { pods: r.pods.length, errors: r.issues.filter((i) => i.severity === 'error').map(formatIssue), lines: decoded.text.split('\n').length };
}

function clear(v: { pods: number; errors: string[]; lines: number }): void {
  if (v.errors.length === 0) {
    expect(v.pods).toBeGreaterThanOrEqual(0);
    return;
  }
  expect(v.pods).toBe(0);
  for (const e of v.errors) {
    expect(e).not.toContain('\n');
    const m = /^m\.yaml:(\d+):(\d+) (.+)$/.exec(e);
    expect(m, e).not.toBeNull();
    expect(Number(m![1])).toBeGreaterThanOrEqual(1);
    expect(Number(m![1])).toBeLessThanOrEqual(v.lines + 1);
    expect(m![3]!.trim().length).toBeGreaterThan(3);
    expect(e).not.toMatch(/undefined|\[object Object\]|NaN/);
  }
}

/** A random JSON-ish value to drop into a manifest. */
const anyValue = fc.oneof(
  fc.string(),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.string(), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 8 }), fc.string(), { maxKeys: 3 }),
  fc.constantFrom('', '-1', '0', '65536', '64Mi', 'Always', 'host', '/', '$(A)', '../..', 'a'.repeat(300)),
);

type Tree = unknown;

/** Every path to a node of a parsed manifest. */
function paths(t: Tree, at: (string | number)[] = []): (string | number)[][] {
  const out = [at];
  if (Array.isArray(t)) t.forEach((v, i) => out.push(...paths(v, [...at, i])));
  else if (t && typeof t === 'object') for (const [k, v] of Object.entries(t)) out.push(...paths(v, [...at, k]));
  return out;
}

function mutate(tree: Tree, path: (string | number)[], op: 'set' | 'delete' | 'rename', value: unknown): Tree {
  const copy = structuredClone(tree) as Record<string | number, unknown>;
  if (path.length === 0) return op === 'set' ? value : copy;
  let parent: Record<string | number, unknown> = copy;
  for (const seg of path.slice(0, -1)) parent = parent[seg] as Record<string | number, unknown>;
  const last = path[path.length - 1]!;
  if (op === 'set') parent[last] = value;
  else if (op === 'delete') {
    if (Array.isArray(parent)) parent.splice(Number(last), 1);
    else delete parent[last];
  } else if (!Array.isArray(parent)) {
    parent[`${String(last)}x`] = parent[last];
    delete parent[last];
  }
  return copy;
}

describe('random mutations of valid manifests', () => {
  it('starts from manifests that are valid', () => {
    for (const s of seeds) expect(verdict(Buffer.from(s)).errors).toEqual([]);
  });

  // CPU-bound (RUNS validations): the default 5 s is not enough when the engine suites share the
  // two cores (it took 6.4 s under load, 0.9 s alone).
  it('structural: set, delete or rename any field; never a crash, always valid or clear errors', { timeout: 60_000 }, () => {
    const seed = fc.constantFrom(...seeds.map((s) => load(s) as Tree));
    const edit = fc.record({ pick: fc.nat(), op: fc.constantFrom('set', 'delete', 'rename' as const), value: anyValue });
    fc.assert(
      fc.property(seed, fc.array(edit, { minLength: 1, maxLength: 4 }), (tree, edits) => {
        let t = tree;
        for (const { pick, op, value } of edits) {
          const all = paths(t);
          t = mutate(t, all[pick % all.length]!, op, value);
        }
        clear(verdict(Buffer.from(dump(t))));
      }),
      { numRuns: RUNS },
    );
  });

  it('textual: flip, insert, delete or truncate bytes; never a crash, always valid or clear errors', { timeout: 60_000 }, () => {
    const edit = fc.record({
      seed: fc.constantFrom(...seeds.map((s) => Buffer.from(s))),
      at: fc.nat(),
      kind: fc.constantFrom('flip', 'insert', 'delete', 'truncate', 'duplicate'),
      bytes: fc.uint8Array({ minLength: 1, maxLength: 8 }),
    });
    fc.assert(
      fc.property(edit, ({ seed, at, kind, bytes }) => {
        const i = at % seed.length;
        let out: Buffer;
        if (kind === 'flip') out = Buffer.concat([seed.subarray(0, i), Buffer.from([(seed[i]! ^ (bytes[0]! | 1)) & 0xff]), seed.subarray(i + 1)]);
        else if (kind === 'insert') out = Buffer.concat([seed.subarray(0, i), Buffer.from(bytes), seed.subarray(i)]);
        else if (kind === 'delete') out = Buffer.concat([seed.subarray(0, i), seed.subarray(i + bytes.length)]);
        else if (kind === 'truncate') out = seed.subarray(0, i);
        else out = Buffer.concat([seed.subarray(0, i), seed.subarray(i, i + 40), seed.subarray(i)]);
        clear(verdict(out));
      }),
      { numRuns: RUNS },
    );
  });
});
