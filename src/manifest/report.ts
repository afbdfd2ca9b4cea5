import { fieldPath, type ManifestIssue } from './errors.js';
import type { ParsedDocument, PathSegment } from './parse.js';

/** How a check tells of a problem: the path of the field, and the message; the line comes from the document. */
export type Report = (path: PathSegment[], message: string, opts?: { atKey?: boolean; severity?: 'error' | 'warning'; policy?: boolean }) => void;

export function reporter(file: string, doc: ParsedDocument, issues: ManifestIssue[]): Report {
  return (path, message, opts = {}) => {
    const pos = doc.positions.locate(path, opts.atKey);
    issues.push({
      file,
      line: pos.line,
      column: pos.column,
      field: fieldPath(path),
      message,
      severity: opts.severity ?? 'error',
      ...(opts.policy ? { policy: true } : {}),
    });
  };
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
