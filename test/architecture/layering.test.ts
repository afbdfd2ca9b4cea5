import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

// Issue 43: docs/architecture.md's rules, held. The floors are read from the doc's Floors block, so
// the doc and the test cannot drift: every import points down or across, none runs up a floor, no
// files import each other in a loop. Only src/runtime/ knows an engine (issue 30's boundary, kept
// here whole: the construction points, the engine interface's types, Docker facts), and only
// src/runtime/docker/ reads a Docker record. The doc names only paths that exist. Imports are read
// by the compiler's own pre-processor (static, type-only, `export … from`, dynamic `import()`),
// which does not parse the file; the few files that may read a Docker record are parsed.

const ROOT = resolve(dirname(new URL(import.meta.url).pathname), '../..');
const DOC = 'docs/architecture.md';

function files(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = `${dir}/${e.name}`;
    if (e.isDirectory()) return files(rel);
    return e.name.endsWith('.ts') ? [rel] : [];
  });
}

/** The modules a file imports (static, dynamic and type-only), resolved to repository paths or bare names. */
export function importsOf(file: string, text: string): string[] {
  return ts
    .preProcessFile(text, true, true)
    .importedFiles.map(({ fileName: spec }) => (spec.startsWith('.') ? relative(ROOT, resolve(ROOT, dirname(file), spec)).replace(/\.js$/, '.ts') : spec));
}

const text = new Map<string, string>();
function read(file: string): string {
  let t = text.get(file);
  if (t === undefined) text.set(file, (t = readFileSync(join(ROOT, file), 'utf8')));
  return t;
}

const sources = files('src');
const imports = new Map(sources.map((f) => [f, importsOf(f, read(f))]));

// ---------------------------------------------------------------------------------------------
// The floors.

/** The doc's Floors block: each directory under src/ with its floor (the leading `name/` words of each line). */
export function floorsOf(doc: string): Map<string, number> {
  const block = /^## Floors\n[\s\S]*?^```\n([\s\S]*?)^```/m.exec(doc)?.[1] ?? '';
  const floors = new Map<string, number>();
  for (const line of block.split('\n')) {
    const m = /^\s*(\d+)\s+(.*)$/.exec(line);
    if (!m) continue;
    for (const word of m[2]!.split(/\s+/)) {
      if (!/^[a-z-]+\/$/.test(word)) break;
      floors.set(word.slice(0, -1), Number(m[1]));
    }
  }
  return floors;
}

/** The top directory under src/ a module sits in. */
function topDir(file: string): string {
  return file.split('/')[1]!;
}

/** Import loops: each group of files that reach each other through imports (Tarjan's components). */
export function loops(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const group: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      group.push(w);
    } while (w !== v);
    // A file importing itself is a loop of one.
    if (group.length > 1 || graph.get(v)!.includes(v)) out.push(group.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return out;
}

describe('the floors (docs/architecture.md)', () => {
  const floors = floorsOf(read(DOC));

  it('reads the Floors block of the doc', () => {
    const sample = '## Floors\n\ntext\n\n```\n 9  cli/      commands; each\n 4  pleg/  stats/   the cache\n 3  runtime/  probe/\n```\n\n```\n 1  not/\n```\n';
    expect([...floorsOf(sample)]).toEqual([
      ['cli', 9],
      ['pleg', 4],
      ['stats', 4],
      ['runtime', 3],
      ['probe', 3],
    ]);
    expect(floors.get('cli')).toBe(9);
    expect(floors.get('base')).toBe(1);
  });

  it('puts every directory under src/ on a floor, and names no directory that is not there', () => {
    const dirs = readdirSync(join(ROOT, 'src'), { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name)
      .sort();
    expect([...floors.keys()].sort()).toEqual(dirs);
    expect(sources.filter((f) => f.split('/').length < 3)).toEqual([]);
  });

  it('has no import that runs up a floor', () => {
    const up: string[] = [];
    for (const [f, specs] of imports) {
      for (const spec of specs.filter((s) => s.startsWith('src/'))) {
        const [from, to] = [floors.get(topDir(f)), floors.get(topDir(spec))];
        if (from === undefined || to === undefined || to > from) up.push(`${f} (floor ${from}) imports ${spec} (floor ${to})`);
      }
    }
    expect(up).toEqual([]);
  });

  it('has no import loop', () => {
    expect(loops(imports)).toEqual([]);
    // The finder finds one: a → b → c → a, and a file importing itself.
    const looped = new Map([
      ['a', ['b']],
      ['b', ['c']],
      ['c', ['a', 'd']],
      ['d', []],
      ['e', ['e']],
    ]);
    expect(loops(looped)).toEqual([['a', 'b', 'c'], ['e']]);
  });
});

// ---------------------------------------------------------------------------------------------
// Only src/runtime/ knows an engine (issue 30).

/**
 * The only files outside src/runtime/ that import an engine, each with why. Never dockerode itself.
 */
const CONSTRUCTION_POINTS: Record<string, { imports: string[]; why: string }> = {
  'src/agent/agent.ts': {
    imports: ['src/runtime/docker/docker-engine.ts'],
    why: "the agent's default engine when it is given none (AgentOptions.engine); the CLI and `podrun run` open theirs through runtime/open-engine.ts",
  },
};

/** Docker facts still read outside the runtime, by file (this list only shrinks: a stale entry fails). */
const FACTS_LEFT: Record<string, string[]> = {};

/** Each fact by name, and how it is written in source (a cgroup's `.scope` suffix, not `x.scope`). */
const FACTS: ReadonlyArray<readonly [string, RegExp]> = [
  ['docker://', /docker:\/\//],
  ['0001-', /0001-/],
  ['.scope', /\.scope['"`]/],
  ['LogPath', /LogPath|logPath/],
  // Docker's restart policies (the engine interface says EngineRestartOn: never, failure, always).
  ['restart policy', /\bRestartPolicy\b|restartPolicyOf|setRestartPolicy|unless-stopped|'on-failure'/],
  // Docker's event actions (the engine interface says EngineEvent.kind).
  ['Docker event', /['"](die|destroy)['"]/],
  // Docker's stats JSON (cgroup counters under its names).
  ['stats JSON', /\b(cpu_stats|precpu_stats|memory_stats|pids_stats|rx_bytes)\b/],
];

export function isDockerImport(spec: string): boolean {
  return spec === 'dockerode' || spec.startsWith('dockerode/') || spec.startsWith('src/runtime/docker/');
}

/** An engine of podrun's: dockerode, the Docker engine or the CRI engine. */
export function isEngineImport(spec: string): boolean {
  return isDockerImport(spec) || spec.startsWith('src/runtime/cri/');
}

// The fake CRI runtime stands where containerd does, below src/runtime/cri/: it speaks CRI's own
// fields (a container's logPath), as the runtime's modules do, and is left out with them.
const BELOW_THE_ENGINE = new Set(['test/fakes/fake-cri-runtime.ts']);
const aboveRuntime = [...sources.filter((f) => !f.startsWith('src/runtime/')), ...files('test/fakes').filter((f) => !BELOW_THE_ENGINE.has(f))];

describe('the engine boundary', () => {
  it('reads import lines as the compiler does', () => {
    expect(
      importsOf(
        'src/agent/x.ts',
        [
          "import type Docker from 'dockerode';",
          "import { a } from '../runtime/docker/engine.js';",
          "export { b } from '../runtime/cri/engine.js';",
          "// import { c } from '../runtime/cri/records.js';",
          "const m = await import('../runtime/docker/x.js');",
        ].join('\n'),
      ),
    ).toEqual(['dockerode', 'src/runtime/docker/engine.ts', 'src/runtime/cri/engine.ts', 'src/runtime/docker/x.ts']);
    expect(isDockerImport('src/runtime/roles.ts')).toBe(false);
    expect(isEngineImport('src/runtime/cri/engine.ts')).toBe(true);
  });

  it('no module above src/runtime/ (nor the fake engine) imports an engine, but where it is made', () => {
    const found: Record<string, string[]> = {};
    for (const f of aboveRuntime) {
      const engine = [...new Set((imports.get(f) ?? importsOf(f, read(f))).filter(isEngineImport))].sort();
      if (engine.length) found[f] = engine;
    }
    expect(found).toEqual(Object.fromEntries(Object.entries(CONSTRUCTION_POINTS).map(([f, p]) => [f, p.imports])));
  });

  it('the engine interface (roles.ts and every module its types come from) names no engine', () => {
    const seen = new Set<string>();
    const leaks: string[] = [];
    const visit = (f: string): void => {
      if (seen.has(f) || !f.startsWith('src/')) return;
      seen.add(f);
      for (const spec of imports.get(f) ?? []) {
        if (isEngineImport(spec)) leaks.push(`${f} imports ${spec}`);
        else if (spec.startsWith('src/')) visit(spec);
      }
    };
    visit('src/runtime/roles.ts');
    expect(seen.size).toBeGreaterThan(3);
    expect(leaks).toEqual([]);
  });

  it('no module above src/runtime/ reads Docker facts (zero times, docker:// ids, scope cgroups, log paths, HTTP statuses), but those left to move', () => {
    const found: Record<string, string[]> = {};
    for (const f of aboveRuntime) {
      const t = read(f);
      const facts = FACTS.filter(([, re]) => re.test(t)).map(([name]) => name);
      // An engine error's HTTP status (Docker's): a module that handles engine errors reads their kind.
      if (importsOf(f, t).includes('src/runtime/engine-errors.ts') && /\.statusCode\b/.test(t)) facts.push('HTTP status');
      if (facts.length) found[f] = facts;
    }
    expect(found).toEqual(FACTS_LEFT);
  });
});

// ---------------------------------------------------------------------------------------------
// Only src/runtime/docker/ reads a Docker record (issue 43).

/**
 * Files outside src/runtime/docker/ that still read a Docker record, with what they read: being
 * removed under issue 43. Each listed file must still offend, and only as listed, so the list can
 * only shrink and an entry whose work is done fails until it is crossed off.
 */
const BEING_REMOVED: Record<string, string[]> = {};

const ENGINE_ERRORS = ['src/runtime/engine-errors.ts', 'src/runtime/cri/engine-errors.ts'];
/** Where an engine is made: they import the Docker engine to construct it, never to read its records. */
const MAKERS = new Set(['src/runtime/open-engine.ts', ...Object.keys(CONSTRUCTION_POINTS)]);

/** What of a Docker record a file reads (not in comments): a cheap look at the text first, the parse only when it may. */
export function dockerRecordsRead(file: string, t: string, specs: readonly string[]): string[] {
  const found = new Set<string>();
  if (specs.some((s) => s === 'dockerode' || s.startsWith('dockerode/'))) found.add('dockerode type');
  if (!MAKERS.has(file) && specs.some((s) => s.startsWith('src/runtime/docker/'))) found.add('Docker engine module');
  const errors = ENGINE_ERRORS.includes(file) || specs.some((s) => ENGINE_ERRORS.includes(s));
  if (!/HostConfig|SecurityOpt|stopped container/.test(t) && !(errors && /statusCode|EngineRequestError/.test(t))) return [...found];
  const visit = (n: ts.Node): void => {
    if (ts.isIdentifier(n) || ts.isStringLiteralLike(n) || ts.isRegularExpressionLiteral(n)) {
      if (n.text === 'HostConfig') found.add('HostConfig');
      if (n.text === 'SecurityOpt') found.add('SecurityOpt');
      if (/cannot exec in a stopped container/.test(n.text)) found.add("Docker's exec text");
      if (errors && n.text === 'statusCode') found.add('HTTP status');
    }
    // A status given to an engine error: `new EngineRequestError(message, status)` or `super(message, status)` in its subclass.
    if (errors && (ts.isNewExpression(n) || ts.isCallExpression(n))) {
      const callee = n.expression.getText();
      const status = n.arguments?.[1];
      // Its second argument is the kind now (gRPC's words): a number or a status there is Docker's.
      if ((callee === 'EngineRequestError' || callee === 'super') && status && (ts.isNumericLiteral(status) || /status/i.test(status.getText())))
        found.add('HTTP status');
    }
    ts.forEachChild(n, visit);
  };
  visit(ts.createSourceFile(file, t, ts.ScriptTarget.Latest, true));
  return [...found];
}

describe('Docker records stay in src/runtime/docker/', () => {
  const scanned = [...sources.filter((f) => !f.startsWith('src/runtime/docker/')), ...files('test/fakes')];
  const found = new Map(scanned.map((f) => [f, dockerRecordsRead(f, read(f), imports.get(f) ?? importsOf(f, read(f)))]));

  it('tells what a file reads of a Docker record', () => {
    const sample = [
      "import type Docker from 'dockerode';",
      "import { EngineRequestError } from '../engine-errors.js';",
      '// HostConfig in a comment is no read',
      'const h = (d as Docker.ContainerCreateOptions).HostConfig;',
      "const s = ['SecurityOpt'];",
      'if (err.statusCode === 404) throw new EngineRequestError(m, 504);',
    ].join('\n');
    const f = 'src/runtime/cri/x.ts';
    expect(dockerRecordsRead(f, sample, importsOf(f, sample)).sort()).toEqual(['HTTP status', 'HostConfig', 'SecurityOpt', 'dockerode type']);
    const neutral = "import { EngineRequestError } from '../engine-errors.js';\nthrow new EngineRequestError(m, undefined, 'refused'); // HostConfig";
    expect(dockerRecordsRead(f, neutral, importsOf(f, neutral))).toEqual([]);
    // An HTTP status that is no engine's (a probe's, a URL source's) is not Docker's.
    const http = 'if (res.statusCode !== 200) return;';
    expect(dockerRecordsRead('src/sources/http.ts', http, importsOf('src/sources/http.ts', http))).toEqual([]);
  });

  it('no file outside src/runtime/docker/ reads a Docker record type, HostConfig, a SecurityOpt or an HTTP status, but those being removed', () => {
    const unlisted = [...found].filter(([f, facts]) => facts.length && !(f in BEING_REMOVED)).map(([f, facts]) => `${f}: ${facts.join(', ')}`);
    expect(unlisted).toEqual([]);
  });

  it('lists as being removed only files that still read what is listed, and nothing more', () => {
    const drift = Object.entries(BEING_REMOVED).flatMap(([f, listed]) => {
      const now = found.get(f) ?? [];
      if (!now.length) return [`${f}: reads no Docker record any more (cross it off)`];
      const more = now.filter((x) => !listed.includes(x));
      return more.length ? [`${f}: reads ${more.join(', ')} too`] : [];
    });
    expect(drift).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------
// The doc describes the code as it is.

const tree = [...files('src'), ...files('scripts'), ...files('test')];

/** The paths the doc names that are not in the tree. */
export function missingPaths(doc: string, exists: (path: string) => boolean, all: readonly string[]): string[] {
  const missing = new Set<string>();
  // Every src/… path, anywhere in the doc.
  for (const [p] of doc.matchAll(/(?<![\w/<-])src\/[\w./-]*[\w/]/g)) if (!exists(p)) missing.add(p);
  // Every module path in backticks: as written from the repository or from src/, or, written
  // short, a file of the tree that ends so. In the tables' first column a short name sits beside
  // the row's first path and is read in its directory.
  for (const line of doc.split('\n')) {
    const first = line.startsWith('| `') ? line.split(' | ')[0]! : '';
    const rowDir = /`((?:src|scripts)\/[^`]*?)[^/`]*`/.exec(first)?.[1];
    for (const [, p] of line.matchAll(/`([\w./-]+\.(?:ts|mjs))`/g)) {
      if (!p) continue;
      if (rowDir && first.includes(`\`${p}\``) && !p.includes('/')) {
        if (!exists(rowDir + p)) missing.add(`${rowDir}${p}`);
      } else if (!exists(p) && !exists(`src/${p}`) && !all.some((f) => f.endsWith(`/${p}`))) missing.add(p);
    }
  }
  return [...missing];
}

describe(`${DOC} describes the code as it is`, () => {
  const doc = read(DOC);

  it('finds the paths it names, short and long', () => {
    const all = ['src/runtime/docker/spec.ts', 'src/runtime/exec-reaper.ts', 'src/runtime/docker/exec-end.ts'];
    const has = (p: string): boolean => all.includes(p) || all.some((f) => f.startsWith(`${p.replace(/\/$/, '')}/`));
    const sample = [
      'src/runtime/docker/ and src/runtime/gone.ts, `docker/spec.ts`, `cri/spec.ts`',
      '| `src/runtime/docker/exec-end.ts`, `exec-reaper.ts` | see `exec-reaper.ts` |',
    ].join('\n');
    expect(missingPaths(sample, has, all)).toEqual(['src/runtime/gone.ts', 'cri/spec.ts', 'src/runtime/docker/exec-reaper.ts']);
  });

  it('names only paths that exist', () => {
    expect(missingPaths(doc, (p) => existsSync(join(ROOT, p)), tree)).toEqual([]);
  });
});
