import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

// Issue 30: nothing above src/runtime/ learns which engine it runs on. This reads the import lines
// (and a few Docker facts written as text) of every module outside src/runtime/, and of the fake
// engine, and fails on any that is not on the lists below: the points where an engine is made
// (they alone may import src/runtime/docker/), and the facts left to move (that list may only
// shrink: a stale entry fails too, so a move that is done is also crossed off). The engine
// interface itself (roles.ts and the modules its types come from) names no Docker type.

const ROOT = resolve(dirname(new URL(import.meta.url).pathname), '../..');

/** Where the Docker engine is made: the only files above src/runtime/ that import it (never dockerode itself). */
const CONSTRUCTION_POINTS: Record<string, string[]> = {
  'src/agent/agent.ts': ['src/runtime/docker/runtime.ts'],
};

/** Docker facts still read outside the runtime, by file. */
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

function files(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = `${dir}/${e.name}`;
    if (e.isDirectory()) return files(rel);
    return e.name.endsWith('.ts') ? [rel] : [];
  });
}

/** The modules a file imports (static, dynamic and type-only), resolved to repository paths or bare names. */
export function importsOf(file: string, text: string): string[] {
  const out: string[] = [];
  const re = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)['"]([^'"]+)['"]/g;
  for (const m of text.matchAll(re)) {
    const spec = m[1]!;
    out.push(spec.startsWith('.') ? relative(ROOT, resolve(ROOT, dirname(file), spec)).replace(/\.js$/, '.ts') : spec);
  }
  return out;
}

export function isDockerImport(spec: string): boolean {
  return spec === 'dockerode' || spec.startsWith('dockerode/') || spec.startsWith('src/runtime/docker/');
}

const scanned = [...files('src').filter((f) => !f.startsWith('src/runtime/')), ...files('test/fakes')];

describe('the engine boundary', () => {
  it('reads import lines as the compiler does', () => {
    expect(
      importsOf(
        'src/agent/x.ts',
        "import type Docker from 'dockerode';\nimport { a } from '../runtime/docker/engine.js';\nconst m = await import('../runtime/docker/x.js');",
      ),
    ).toEqual(['dockerode', 'src/runtime/docker/engine.ts', 'src/runtime/docker/x.ts']);
    expect(isDockerImport('src/runtime/roles.ts')).toBe(false);
  });

  it('no module above src/runtime/ (nor the fake engine) imports the Docker engine, but where it is made', () => {
    const found: Record<string, string[]> = {};
    for (const f of scanned) {
      const docker = [...new Set(importsOf(f, readFileSync(join(ROOT, f), 'utf8')).filter(isDockerImport))].sort();
      if (docker.length) found[f] = docker;
    }
    expect(found).toEqual(CONSTRUCTION_POINTS);
  });

  it('the engine interface (roles.ts and every module its types come from) names no Docker type', () => {
    const seen = new Set<string>();
    const leaks: string[] = [];
    const visit = (f: string): void => {
      if (seen.has(f) || !f.startsWith('src/')) return;
      seen.add(f);
      const text = readFileSync(join(ROOT, f), 'utf8');
      for (const spec of importsOf(f, text)) {
        if (isDockerImport(spec)) leaks.push(`${f} imports ${spec}`);
        else if (spec.startsWith('src/')) visit(spec);
      }
    };
    visit('src/runtime/roles.ts');
    expect(seen.size).toBeGreaterThan(3);
    expect(leaks).toEqual([]);
  });

  it('no module above src/runtime/ reads Docker facts (zero times, docker:// ids, scope cgroups, log paths, HTTP statuses), but those left to move', () => {
    const found: Record<string, string[]> = {};
    for (const f of scanned) {
      const text = readFileSync(join(ROOT, f), 'utf8');
      const facts = FACTS.filter(([, re]) => re.test(text)).map(([name]) => name);
      // An engine error's HTTP status (Docker's): a module that handles engine errors reads their kind.
      if (importsOf(f, text).includes('src/runtime/engine-errors.ts') && /\.statusCode\b/.test(text)) facts.push('HTTP status');
      if (facts.length) found[f] = facts;
    }
    expect(found).toEqual(FACTS_LEFT);
  });

  it("no module outside src/runtime/docker/ reads a Docker HTTP status: engine errors are read by kind, in gRPC's words", () => {
    const readers: string[] = [];
    for (const f of files('src').filter((x) => !x.startsWith('src/runtime/docker/'))) {
      const text = readFileSync(join(ROOT, f), 'utf8');
      const errors = importsOf(f, text).some((s) => s === 'src/runtime/engine-errors.ts' || s.startsWith('src/runtime/docker/'));
      if (/\bDockerRequestError\b|\bkindOfStatus\b/.test(text) || (errors && /\.statusCode\b|\.status\s*[=!]==?\s*\d/.test(text))) readers.push(f);
    }
    expect(readers).toEqual([]);
  });
});
