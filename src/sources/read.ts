import { readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { ManifestIssue } from '../manifest/errors.js';
import type { ManifestText } from '../manifest/load.js';
import { decodeManifest } from '../manifest/parse.js';
import { redactText, redactUrl } from './redact.js';
import { MAX_MANIFEST_BYTES, size as sizeText } from '../manifest/limits.js';
import { isManifestFileName, readManifestFile } from '../manifest/files.js';

export interface ReadResult {
  texts: ManifestText[];
  issues: ManifestIssue[];
}

/** A path, URL or stream that could not be had at all: no line of it to point at. */
function readIssue(file: string, message: string): ManifestIssue {
  return { file, line: 0, column: 0, field: '', message, severity: 'error' };
}

function isUrl(p: string): boolean {
  return /^https?:\/\//i.test(p);
}

/** A stable name for what one `apply` names, so `--prune` finds the pods of the same set later. */
export function canonicalSource(p: string): string {
  return isUrl(p) || p === '-' ? p : resolve(p);
}

/** `-` as kubectl reads it: the manifests on standard input, up to the size cap of a file. */
async function readStdin(stdin: NodeJS.ReadableStream, texts: ManifestText[], issues: ManifestIssue[]): Promise<void> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of stdin) {
    const b = typeof c === 'string' ? Buffer.from(c) : (c as Buffer);
    size += b.length;
    if (size > MAX_MANIFEST_BYTES) {
      issues.push(readIssue('STDIN', `is larger than ${sizeText(MAX_MANIFEST_BYTES)}`));
      return;
    }
    chunks.push(b);
  }
  const decoded = decodeManifest(Buffer.concat(chunks), 'STDIN');
  if (decoded.ok) texts.push({ file: 'STDIN', source: 'stdin', text: decoded.text });
  else issues.push(decoded.issue);
}

function readFile(path: string, texts: ManifestText[], issues: ManifestIssue[]): void {
  const r = readManifestFile(path);
  if (r.kind === 'text') texts.push({ file: path, source: `file:${resolve(path)}`, text: r.text });
  else if (r.kind === 'issue') issues.push(r.issue);
  else issues.push(readIssue(path, 'cannot read: no such file or directory'));
}

/**
 * Reads what `apply` or `validate` was given: files, directories (their YAML/JSON files, not
 * recursive, in name order) and http(s) URLs. Unreadable inputs become issues, not exceptions.
 */
export async function readManifestInputs(paths: string[], headers: Record<string, string> = {}, stdin?: NodeJS.ReadableStream): Promise<ReadResult> {
  const texts: ManifestText[] = [];
  const issues: ManifestIssue[] = [];
  for (const p of paths) {
    if (p === '-') {
      // process.stdin only when `-` asks for it: making it loads Node's stream modules.
      await readStdin(stdin ?? process.stdin, texts, issues);
      continue;
    }
    if (isUrl(p)) {
      try {
        const shown = redactUrl(p);
        // The HTTP client is loaded only when a URL is given: local files should not pay for it.
        const { httpGet } = await import('./http.js');
        const decoded = decodeManifest((await httpGet(p, { headers })).body, shown);
        if (decoded.ok) texts.push({ file: shown, source: `url:${shown}`, text: decoded.text });
        else issues.push(decoded.issue);
      } catch (err) {
        issues.push(readIssue(redactUrl(p), `cannot fetch: ${redactText((err as Error).message)}`));
      }
      continue;
    }
    let isDir = false;
    try {
      isDir = statSync(p).isDirectory();
    } catch {
      // Not there, a symlink loop, no permission: the reader says which.
    }
    if (!isDir) {
      readFile(p, texts, issues);
      continue;
    }
    let names: string[];
    try {
      names = readdirSync(p).filter(isManifestFileName).sort();
    } catch (err) {
      issues.push(readIssue(p, `cannot read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`));
      continue;
    }
    // Every entry with a manifest's name is read: a directory, FIFO or loop so named is an error, not a silent skip.
    for (const name of names) readFile(join(p, name), texts, issues);
    if (names.length === 0) issues.push({ ...readIssue(p, 'directory has no .yaml, .yml or .json manifests'), severity: 'warning' });
  }
  return { texts, issues };
}
