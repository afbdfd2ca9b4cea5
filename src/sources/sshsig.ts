/**
 * Detached SSH signatures (OpenSSH's PROTOCOL.sshsig, what `ssh-keygen -Y sign` writes), verified
 * with Node's crypto against pinned keys: Ed25519, ECDSA (nistp256/384/521) and RSA
 * (rsa-sha2-256/512) keys as OpenSSH writes them. Pure: keys and signatures are plain text in,
 * a verdict out.
 */
import { createHash, createPublicKey, verify as cryptoVerify, type KeyObject } from 'node:crypto';

/** The namespace podrun's signatures are made for (`ssh-keygen -Y sign -n podrun`). */
export const SIGNATURE_NAMESPACE = 'podrun';
/** A signature file is small; anything bigger is not one. */
export const MAX_SIGNATURE_BYTES = 64 * 1024;

/** One key a signature may verify against: a public key line, or a line of an allowed-signers file. */
export interface Signer {
  type: string;
  /** The key's wire blob, compared byte for byte with the key a signature names. */
  blob: Buffer;
  /** `SHA256:...`, as `ssh-keygen -l` prints it. */
  fingerprint: string;
  /** The principals (allowed-signers) or the comment (public key file), for messages. */
  name: string;
  /** Where it was read, `file:line`. */
  from: string;
  /** allowed-signers `namespaces=`: the key signs only for these. */
  namespaces?: string[];
  validAfter?: number;
  validBefore?: number;
  key: KeyObject;
}

export type Verdict = { ok: true; signer: Signer } | { ok: false; reason: string };

/** Reads SSH wire format: uint32 lengths and big-endian integers, refusing anything truncated. */
class Wire {
  private at = 0;
  constructor(private readonly b: Buffer) {}
  done(): boolean {
    return this.at === this.b.length;
  }
  u32(): number {
    if (this.at + 4 > this.b.length) throw new Error('truncated');
    const v = this.b.readUInt32BE(this.at);
    this.at += 4;
    return v;
  }
  bytes(n: number): Buffer {
    if (this.at + n > this.b.length) throw new Error('truncated');
    const v = this.b.subarray(this.at, this.at + n);
    this.at += n;
    return v;
  }
  string(): Buffer {
    return this.bytes(this.u32());
  }
  text(): string {
    return this.string().toString('utf8');
  }
}

function sshString(b: Buffer | string): Buffer {
  const body = typeof b === 'string' ? Buffer.from(b) : b;
  const len = Buffer.alloc(4);
  len.writeUInt32BE(body.length);
  return Buffer.concat([len, body]);
}

/** An mpint as an unsigned big-endian integer (no sign byte), for JWK and P1363. */
function unsigned(b: Buffer): Buffer {
  let i = 0;
  while (i < b.length - 1 && b[i] === 0) i++;
  return b.subarray(i);
}

const CURVES: Record<string, { crv: string; size: number; hash: string }> = {
  nistp256: { crv: 'P-256', size: 32, hash: 'sha256' },
  nistp384: { crv: 'P-384', size: 48, hash: 'sha384' },
  nistp521: { crv: 'P-521', size: 66, hash: 'sha512' },
};

const b64url = (b: Buffer): string => b.toString('base64url');

/** A Node public key from an OpenSSH key blob; throws with the reason. */
function keyFromBlob(blob: Buffer): { type: string; key: KeyObject } {
  const w = new Wire(blob);
  const type = w.text();
  if (type === 'ssh-ed25519') {
    const pk = w.string();
    if (pk.length !== 32) throw new Error('an ssh-ed25519 key must be 32 bytes');
    return { type, key: createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: b64url(pk) }, format: 'jwk' }) };
  }
  if (type.startsWith('ecdsa-sha2-')) {
    const curveName = w.text();
    const curve = CURVES[curveName];
    if (!curve || type !== `ecdsa-sha2-${curveName}`) throw new Error(`unsupported ECDSA curve ${curveName}`);
    const q = w.string();
    if (q.length !== 1 + 2 * curve.size || q[0] !== 4) throw new Error('an ECDSA key must be an uncompressed point');
    const x = q.subarray(1, 1 + curve.size);
    const y = q.subarray(1 + curve.size);
    return { type, key: createPublicKey({ key: { kty: 'EC', crv: curve.crv, x: b64url(x), y: b64url(y) }, format: 'jwk' }) };
  }
  if (type === 'ssh-rsa') {
    const e = unsigned(w.string());
    const n = unsigned(w.string());
    if (n.length * 8 < 2048 - 8) throw new Error(`an RSA key of ${n.length * 8} bits is too weak (podrun requires 2048 bits, as NIST SP 800-131A does)`);
    return { type, key: createPublicKey({ key: { kty: 'RSA', n: b64url(n), e: b64url(e) }, format: 'jwk' }) };
  }
  if (type.includes('-cert-v01@openssh.com')) throw new Error(`certificates (${type}) are not supported; pin the signing key itself`);
  if (type.startsWith('sk-')) throw new Error(`security-key types (${type}) are not supported; use an ed25519, ecdsa or rsa key`);
  throw new Error(`unsupported key type ${type}`);
}

export function fingerprint(blob: Buffer): string {
  return `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
}

const KEY_TYPE = /^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(256|384|521)|sk-\S+|\S+-cert-v01@openssh\.com|ssh-dss)$/;

/** Splits `s` where `sep` matches outside double quotes; `open` when a quote is never closed. */
function splitUnquoted(s: string, sep: RegExp): { parts: string[]; open: boolean } {
  const parts: string[] = [];
  let cur = '';
  let open = false;
  for (const ch of s) {
    if (ch === '"') open = !open;
    if (!open && sep.test(ch)) {
      parts.push(cur);
      cur = '';
    } else cur += ch;
  }
  parts.push(cur);
  return { parts, open };
}

/** An allowed-signers options field (`a,b="x,y",c`), on commas outside quotes. */
function splitOptions(s: string): string[] {
  const { parts, open } = splitUnquoted(s, /,/);
  if (open) throw new Error('unterminated quote in the options');
  return parts;
}

/** A line's fields, on blanks outside double quotes (allowed-signers options may quote blanks). */
function fields(line: string): string[] {
  return splitUnquoted(line, /\s/).parts.filter((f) => f !== '');
}

/** ssh-keygen's allowed-signers time: YYYYMMDD[HHMM[SS]], local time unless it ends in Z. */
function parseTime(v: string): number {
  const m = /^(\d{4})(\d{2})(\d{2})(?:(\d{2})(\d{2})(\d{2})?)?(Z?)$/i.exec(v);
  if (!m) throw new Error(`invalid time "${v}" (YYYYMMDD[HHMM[SS]][Z])`);
  const [y, mo, d, h, mi, s] = m.slice(1, 7).map((x) => Number(x ?? 0)) as [number, number, number, number, number, number];
  return m[7] ? Date.UTC(y, mo - 1, d, h, mi, s) : new Date(y, mo - 1, d, h, mi, s).getTime();
}

const unquote = (v: string): string => (v.startsWith('"') && v.endsWith('"') && v.length >= 2 ? v.slice(1, -1) : v);

/**
 * The keys in one file: an OpenSSH public key (`ssh-ed25519 AAAA... comment`, one or more lines)
 * or an allowed-signers file (`principals [options] type key`). Comments and blank lines are
 * skipped; any other line that is not a key is an error naming the line.
 */
export function parseSigners(text: string, file: string): Signer[] {
  const out: Signer[] = [];
  const lines = text.split(/\r?\n/);
  lines.forEach((raw, i) => {
    const line = raw.trim();
    if (!line || line.startsWith('#')) return;
    const at = `${file}:${i + 1}`;
    const f = fields(line);
    let k = f.findIndex((x) => KEY_TYPE.test(x));
    if (k < 0 || k > 2 || f[k + 1] === undefined)
      throw new Error(
        `${at}: not an OpenSSH public key or allowed-signers line (expected "[principals [options]] ssh-ed25519|ecdsa-sha2-nistp256|ssh-rsa AAAA...")`,
      );
    const type = f[k] as string;
    const principals = k >= 1 ? (f[0] as string) : undefined;
    const options = k === 2 ? splitOptions(f[1] as string) : [];
    const signer: Partial<Signer> = { from: at };
    for (const opt of options) {
      const eq = opt.indexOf('=');
      const name = (eq < 0 ? opt : opt.slice(0, eq)).toLowerCase();
      const value = eq < 0 ? '' : unquote(opt.slice(eq + 1));
      if (name === 'cert-authority') throw new Error(`${at}: cert-authority lines are not supported; pin the signing key itself`);
      else if (name === 'namespaces') signer.namespaces = value.split(',').map((x) => x.trim());
      else if (name === 'valid-after') signer.validAfter = parseTime(value);
      else if (name === 'valid-before') signer.validBefore = parseTime(value);
      else throw new Error(`${at}: unknown allowed-signers option "${name}"`);
    }
    let blob: Buffer;
    try {
      blob = Buffer.from(f[k + 1] as string, 'base64');
      const parsed = keyFromBlob(blob);
      if (parsed.type !== type) throw new Error(`the key says ${parsed.type}, the line says ${type}`);
      signer.key = parsed.key;
    } catch (err) {
      throw new Error(`${at}: ${(err as Error).message === 'truncated' ? 'the key is truncated' : (err as Error).message}`);
    }
    k += 2;
    out.push({ ...signer, type, blob, fingerprint: fingerprint(blob), name: principals ?? f.slice(k).join(' ') } as Signer);
  });
  if (!out.length) throw new Error(`${file}: no public keys in it`);
  return out;
}

interface ParsedSignature {
  publicKey: Buffer;
  namespace: string;
  reserved: Buffer;
  hashAlgorithm: string;
  sigType: string;
  sig: Buffer;
}

/** The armored SSHSIG blob; throws with the reason. */
function parseSignature(armored: string): ParsedSignature {
  const m = /-----BEGIN SSH SIGNATURE-----([\s\S]*?)-----END SSH SIGNATURE-----/.exec(armored);
  if (!m) throw new Error('not an SSH signature (no BEGIN SSH SIGNATURE block)');
  const blob = Buffer.from((m[1] ?? '').replace(/\s+/g, ''), 'base64');
  const w = new Wire(blob);
  if (w.bytes(6).toString('latin1') !== 'SSHSIG') throw new Error('not an SSH signature (no SSHSIG preamble)');
  const version = w.u32();
  if (version !== 1) throw new Error(`unsupported SSHSIG version ${version}`);
  const publicKey = w.string();
  const namespace = w.text();
  const reserved = w.string();
  const hashAlgorithm = w.text();
  const sigBlob = new Wire(w.string());
  if (!w.done()) throw new Error('trailing data after the signature');
  const sigType = sigBlob.text();
  const sig = sigBlob.string();
  return { publicKey, namespace, reserved, hashAlgorithm, sigType, sig };
}

/** Whether `sig` (of type `sigType`) signs `data` with `signer`'s key. */
function checkRaw(signer: Signer, sigType: string, sig: Buffer, data: Buffer): boolean {
  if (signer.type === 'ssh-ed25519') {
    if (sigType !== 'ssh-ed25519') throw new Error(`signature type ${sigType} does not match the ${signer.type} key`);
    return cryptoVerify(null, data, signer.key, sig);
  }
  if (signer.type.startsWith('ecdsa-sha2-')) {
    if (sigType !== signer.type) throw new Error(`signature type ${sigType} does not match the ${signer.type} key`);
    const curve = CURVES[signer.type.slice('ecdsa-sha2-'.length)];
    if (!curve) throw new Error(`unsupported key type ${signer.type}`);
    const w = new Wire(sig);
    const r = unsigned(w.string());
    const s = unsigned(w.string());
    if (r.length > curve.size || s.length > curve.size) return false;
    const p1363 = Buffer.concat([Buffer.alloc(curve.size - r.length), r, Buffer.alloc(curve.size - s.length), s]);
    return cryptoVerify(curve.hash, data, { key: signer.key, dsaEncoding: 'ieee-p1363' }, p1363);
  }
  if (signer.type === 'ssh-rsa') {
    // SHA-1 RSA signatures (ssh-rsa) are refused, as OpenSSH refuses them for SSHSIG.
    const hash = sigType === 'rsa-sha2-512' ? 'sha512' : sigType === 'rsa-sha2-256' ? 'sha256' : undefined;
    if (!hash) throw new Error(`RSA signature type ${sigType} is not accepted (rsa-sha2-256 or rsa-sha2-512)`);
    return cryptoVerify(hash, data, signer.key, sig);
  }
  throw new Error(`unsupported key type ${signer.type}`);
}

/**
 * Verifies an armored SSHSIG over `message` against the pinned `signers`: the signature must
 * name one of them, be made for `namespace`, and verify. The reason on failure says which.
 */
export function verifySignature(message: Uint8Array, armored: string, signers: readonly Signer[], namespace = SIGNATURE_NAMESPACE, now = Date.now()): Verdict {
  let s: ParsedSignature;
  try {
    s = parseSignature(armored);
  } catch (err) {
    return { ok: false, reason: (err as Error).message === 'truncated' ? 'the signature is truncated' : (err as Error).message };
  }
  if (s.namespace !== namespace)
    return { ok: false, reason: `signed for namespace "${s.namespace}", not "${namespace}" (sign with ssh-keygen -Y sign -n ${namespace})` };
  if (s.hashAlgorithm !== 'sha256' && s.hashAlgorithm !== 'sha512') return { ok: false, reason: `unsupported hash algorithm ${s.hashAlgorithm}` };
  const candidates = signers.filter((k) => k.blob.equals(s.publicKey));
  if (!candidates.length) return { ok: false, reason: `signed by ${fingerprint(s.publicKey)}, which is not a trusted key` };
  const h = createHash(s.hashAlgorithm).update(message).digest();
  const signed = Buffer.concat([Buffer.from('SSHSIG'), sshString(s.namespace), sshString(s.reserved), sshString(s.hashAlgorithm), sshString(h)]);
  let lastReason = '';
  for (const k of candidates) {
    if (k.namespaces && !k.namespaces.includes(namespace)) {
      lastReason = `key ${k.fingerprint} (${k.from}) may sign only for namespaces ${k.namespaces.join(',')}`;
      continue;
    }
    if (k.validAfter !== undefined && now < k.validAfter) {
      lastReason = `key ${k.fingerprint} (${k.from}) is not valid before ${new Date(k.validAfter).toISOString()}`;
      continue;
    }
    if (k.validBefore !== undefined && now >= k.validBefore) {
      lastReason = `key ${k.fingerprint} (${k.from}) expired at ${new Date(k.validBefore).toISOString()}`;
      continue;
    }
    try {
      if (checkRaw(k, s.sigType, s.sig, signed)) return { ok: true, signer: k };
      lastReason = `the signature by ${k.fingerprint} does not match the content (altered, or signed over other bytes)`;
    } catch (err) {
      lastReason = (err as Error).message === 'truncated' ? 'the signature is truncated' : (err as Error).message;
    }
  }
  return { ok: false, reason: lastReason };
}
