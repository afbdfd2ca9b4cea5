import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { judgeSet, parseSetHeader, type Refusal, type SetHeader } from './freshness.js';
import type { FreshnessStore } from './freshness-store.js';
import { MAX_SIGNATURE_BYTES, parseSigners, verifySignature, type Signer } from './sshsig.js';

/** How every refusal's message begins, for people (code knows a refusal by `ManifestIssue.refused`). */
export const SIGNATURE_REFUSED = 'signature refused';

/** How a refusal of a verified set begins (replayed, expired, for another node). */
export const SET_REFUSED = 'set refused';

/** The keys a source's manifests must be signed with, and who hears of each check (metrics). */
export interface SignaturePolicy {
  signers: readonly Signer[];
  /** Every check's outcome, for metrics. */
  onCheck?: (source: string, verified: boolean) => void;
  /** Replay, expiry and node rules on verified sets (freshness.ts); absent: signatures only. */
  freshness?: {
    store: FreshnessStore;
    nodeName: string;
    now?: () => Date;
    onRefused?: (source: string, kind: Refusal['kind']) => void;
  };
}

/** A verified set that may be taken: `commit` records it, before it is applied. */
export interface FreshSet {
  header: SetHeader;
  commit: () => void;
}

/**
 * The freshness rules on a set whose signature verified (`key` names the source, or the file of
 * a directory): what to record before applying it, or why it is refused.
 */
export function checkFreshness(bytes: Uint8Array, policy: SignaturePolicy, key: string): FreshSet | { reason: string } {
  const f = policy.freshness;
  if (!f) return { header: {}, commit: () => undefined };
  const header = parseSetHeader(bytes);
  if ('error' in header) {
    f.onRefused?.(key, 'header');
    return { reason: `${SET_REFUSED}: ${header.error}` };
  }
  const digest = createHash('sha256').update(bytes).digest('hex');
  const verdict = judgeSet(f.store.read(key), digest, header, f.now?.() ?? new Date(), f.nodeName);
  if ('reason' in verdict) {
    f.onRefused?.(key, verdict.kind);
    return { reason: `${SET_REFUSED}: ${verdict.reason}` };
  }
  return { header, commit: () => f.store.write(key, verdict.next) };
}

/**
 * Reads `--manifest-*-verify-key` files (OpenSSH public keys or allowed-signers files) at start:
 * a key that cannot be read or parsed is a start-up error naming the file and line, never a
 * silently open door.
 */
export function loadSigners(files: readonly string[]): Signer[] {
  return files.flatMap((f) => {
    let text: string;
    try {
      text = readFileSync(f, 'utf8');
    } catch (err) {
      throw new Error(`cannot read verify key ${f}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
    return parseSigners(text, f);
  });
}

/** A signer as logs and the status name it: its fingerprint, and who (principals or comment). */
export function signerText(s: Signer): string {
  return `${s.fingerprint} (${s.name || s.from})`;
}

/** Where a URL's detached signature is: `.sig` appended to its path, the query kept. */
export function signatureUrl(url: string): string {
  const u = new URL(url);
  u.pathname = `${u.pathname}.sig`;
  return u.toString();
}

/** A signature file's path beside a manifest file. */
export function signaturePath(path: string): string {
  return `${path}.sig`;
}

/** The manifest a signature file signs (`FILE` for `FILE.sig`), or undefined for any other file. */
export function signedFileOf(path: string): string | undefined {
  return path.endsWith('.sig') ? path.slice(0, -'.sig'.length) : undefined;
}

/**
 * Checks a manifest's exact bytes against its signature text (undefined: none was found, `where`
 * says where it was looked for): the key that signed it, or why it is refused.
 */
export function checkSignature(
  bytes: Uint8Array,
  signature: string | undefined,
  where: string,
  policy: SignaturePolicy,
  source: string,
): { reason: string } | { signer: Signer } {
  let verdict: { ok: true; signer: Signer } | { ok: false; reason: string };
  if (signature === undefined)
    verdict = { ok: false, reason: `no signature (looked for ${where}; sign with: ssh-keygen -Y sign -n podrun -f KEY < FILE > FILE.sig)` };
  else if (Buffer.byteLength(signature) > MAX_SIGNATURE_BYTES) verdict = { ok: false, reason: `${where} is larger than a signature can be` };
  else verdict = verifySignature(bytes, signature, policy.signers);
  policy.onCheck?.(source, verdict.ok);
  return verdict.ok ? { signer: verdict.signer } : { reason: `${SIGNATURE_REFUSED}: ${verdict.reason}` };
}
