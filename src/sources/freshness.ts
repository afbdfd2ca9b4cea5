// Signed sets that cannot be replayed, frozen or moved to another box (TUF's rollback and freeze
// attacks, Uptane's per-ECU targets). A signature says who wrote a set, not whether it is still
// the newest: the signed bytes carry their own version, expiry and target nodes, in a first-line
// comment so the manifests stay plain Kubernetes and `ssh-keygen -Y sign` stays the only tool:
//
//   # podrun-set: version=42 expires=2027-06-01T00:00:00Z node=edge-*,gw-1
//
// Pure: parsing and judging here; the record of what was accepted lives in freshness-store.ts.

export interface SetHeader {
  /** Whole, non-negative; a set without one is older than every versioned set. */
  version?: number;
  expires?: Date;
  /** Node-name globs (`*`, `?`); none: every node. */
  nodes?: string[];
}

/** What a source has accepted: the version and set in force, and every set it superseded. */
export interface FreshnessRecord {
  version?: number;
  /** sha256 of the exact signed bytes in force. */
  current?: string;
  superseded: string[];
}

export type Refusal = { kind: 'header' | 'replay' | 'expired' | 'node'; reason: string };

const PREFIX = '# podrun-set:';
/** Superseded digests kept per source: years of daily releases; versions guard beyond that. */
export const MAX_SUPERSEDED = 10_000;

/** The header of a signed set, from its first line; a malformed one is refused, never ignored. */
export function parseSetHeader(bytes: Uint8Array): SetHeader | { error: string } {
  const text = Buffer.from(bytes.subarray(0, 4096))
    .toString('utf8')
    .replace(/^\uFEFF/, '');
  const first = text.split('\n', 1)[0]!.replace(/\r$/, '');
  if (!first.startsWith(PREFIX)) return {};
  const out: SetHeader = {};
  for (const token of first.slice(PREFIX.length).trim().split(/\s+/).filter(Boolean)) {
    const eq = token.indexOf('=');
    const key = eq > 0 ? token.slice(0, eq) : token;
    const value = eq > 0 ? token.slice(eq + 1) : '';
    if (key === 'version' && /^\d{1,15}$/.test(value)) out.version = Number(value);
    else if (key === 'expires' && /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/.test(value) && !Number.isNaN(Date.parse(value)))
      out.expires = new Date(value);
    else if (key === 'node' && /^[A-Za-z0-9.*?_-]+(,[A-Za-z0-9.*?_-]+)*$/.test(value)) out.nodes = value.split(',');
    else return { error: `the set header has ${JSON.stringify(token)}: expected version=N, expires=RFC3339 time, node=GLOB[,GLOB]` };
  }
  return out;
}

function globMatches(glob: string, name: string): boolean {
  const re = glob
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${re}$`).test(name);
}

/**
 * Whether a verified set may be taken, given what this source accepted before, and the record to
 * keep once it is. The set already in force (the offline-boot cache, say) is always taken: its
 * expiry is reported, never enforced, so a clock never takes pods down.
 */
export function judgeSet(record: FreshnessRecord | undefined, digest: string, header: SetHeader, now: Date, node: string): { next: FreshnessRecord } | Refusal {
  const r = record ?? { superseded: [] };
  if (r.current === digest) return { next: r };
  if (header.nodes && !header.nodes.some((g) => globMatches(g, node))) {
    return { kind: 'node', reason: `the set is signed for node ${header.nodes.join(',')}, not this node (${node})` };
  }
  if (r.superseded.includes(digest))
    return {
      kind: 'replay',
      reason: `replay: this exact set was superseded by a newer one${r.version !== undefined ? ` (version ${r.version} is in force)` : ''}`,
    };
  if (r.version !== undefined) {
    if (header.version === undefined) return { kind: 'replay', reason: `replay: the set has no version, and version ${r.version} was already accepted` };
    if (header.version < r.version) return { kind: 'replay', reason: `replay: version ${header.version} is older than version ${r.version}, already accepted` };
    if (header.version === r.version)
      return { kind: 'replay', reason: `version ${header.version} was already accepted with other content: publish changes under a higher version` };
  }
  if (header.expires && header.expires.getTime() <= now.getTime()) return { kind: 'expired', reason: `the set expired at ${header.expires.toISOString()}` };
  const superseded = r.current ? [...r.superseded, r.current].slice(-MAX_SUPERSEDED) : r.superseded;
  return {
    next: {
      ...(header.version !== undefined ? { version: header.version } : r.version !== undefined ? { version: r.version } : {}),
      current: digest,
      superseded,
    },
  };
}
