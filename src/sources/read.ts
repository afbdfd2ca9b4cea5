import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { ManifestIssue } from '../manifest/errors.js';
import type { ManifestText } from '../manifest/load.js';
import { httpGet } from './http.js';
import { redactText, redactUrl } from './redact.js';
import { isManifestFileName, MAX_MANIFEST_BYTES } from './manifest-files.js';

export interface ReadResult {
  texts: ManifestText[];
  issues: ManifestIssue[];
}

function readIssue(file: string, message: string): ManifestIssue {
  return { file, line: 1, column: 1, field: '', message, severity: 'error' };
}

function isUrl(p: string): boolean {
  return /^https?:\/\//i.test(p);
}

/** A stable name for what one `apply` names, so `--prune` finds the pods of the same set later. */
export function canonicalSource(p: string): string {
  return isUrl(p) ? p : resolve(p);
}

function readFile(path: string): ManifestText {
  const st = statSync(path);
  if (st.size > MAX_MANIFEST_BYTES) throw new Error(`is larger than ${MAX_MANIFEST_BYTES} bytes`);
  return { file: path, source: `file:${resolve(path)}`, text: readFileSync(path, 'utf8') };
}

/**
 * Reads what `apply` or `validate` was given: files, directories (their YAML/JSON files, not
 * recursive, in name order) and http(s) URLs. Unreadable inputs become issues, not exceptions.
 */
export async function readManifestInputs(paths: string[], headers: Record<string, string> = {}): Promise<ReadResult> {
  const texts: ManifestText[] = [];
  const issues: ManifestIssue[] = [];
  for (const p of paths) {
    if (isUrl(p)) {
      try {
        const shown = redactUrl(p);
        texts.push({ file: shown, source: `url:${shown}`, text: (await httpGet(p, { headers })).body });
      } catch (err) {
        issues.push(readIssue(redactUrl(p), `cannot fetch: ${redactText((err as Error).message)}`));
      }
      continue;
    }
    try {
      if (statSync(p).isDirectory()) {
        const names = readdirSync(p).filter(isManifestFileName).sort();
        for (const name of names) {
          const full = join(p, name);
          if (statSync(full).isFile()) texts.push(readFile(full));
        }
        if (names.length === 0) issues.push({ ...readIssue(p, 'directory has no .yaml, .yml or .json manifests'), severity: 'warning' });
      } else {
        texts.push(readFile(p));
      }
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      issues.push(readIssue(p, `cannot read: ${e.code === 'ENOENT' ? 'no such file or directory' : e.message}`));
    }
  }
  return { texts, issues };
}
