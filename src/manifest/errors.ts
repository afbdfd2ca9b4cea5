/** One problem in a manifest, located well enough for a person to jump to it. */
export interface ManifestIssue {
  file: string;
  /** 0 (with column 0) when the issue is the whole input, not a place in it: a path that is not there. */
  line: number;
  column: number;
  /** Dotted field path, `spec.containers[0].image`; empty for the whole document. */
  field: string;
  message: string;
  severity: 'error' | 'warning';
  /** A set refused by its signature or its freshness (not a broken manifest): said by value, never read from `message`. */
  refused?: 'signature' | 'set';
  /** The pod the document names (`namespace/name`), when it names one: the agent shows a pod it refused. */
  pod?: string;
  /** Broken by the node's policy, not by the manifest's own rules. */
  policy?: boolean;
}

/** Control characters (a newline quoted from the input by the parser, say) escaped: one issue, one line. */
function oneLine(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

export function formatIssue(issue: ManifestIssue): string {
  const where = issue.line > 0 ? `${issue.file}:${issue.line}:${issue.column}` : `${issue.file}:`;
  const prefix = issue.severity === 'warning' ? 'warning: ' : '';
  return oneLine(issue.field ? `${where} ${prefix}${issue.field}: ${issue.message}` : `${where} ${prefix}${issue.message}`);
}

/** Thrown when a set of manifests cannot be accepted; carries every problem found, not just the first. */
export class ManifestError extends Error {
  constructor(readonly issues: ManifestIssue[]) {
    super(
      issues
        .filter((i) => i.severity === 'error')
        .map(formatIssue)
        .join('\n'),
    );
    this.name = 'ManifestError';
  }
}

/** JSON-pointer-like path segments to the dotted form people read: `spec.containers[0].name`. */
export function fieldPath(segments: readonly (string | number)[]): string {
  let out = '';
  for (const s of segments) {
    if (typeof s === 'number') out += `[${s}]`;
    else if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(s)) out += out ? `.${s}` : s;
    else out += `[${JSON.stringify(s)}]`;
  }
  return out;
}
