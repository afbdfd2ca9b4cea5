import { timerDelay } from '../base/duration.js';
import type { Logger } from '../log/logger.js';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { formatIssue, type ManifestIssue } from '../manifest/errors.js';
import { decodeManifest } from '../manifest/parse.js';
import { loadManifestText } from '../manifest/load.js';
import type { DesiredPod } from '../manifest/types.js';
import { writeFileAtomic } from '../base/atomic-file.js';
import { httpGet, type HttpOptions } from './http.js';
import type { OriginPods } from './merge.js';
import { redactText, redactUrl } from './redact.js';
import type { PodSource, SetExpiry } from './source.js';
import type { PodPolicy } from '../manifest/policy.js';
import { checkFreshness, checkSignature, SET_REFUSED, signatureUrl, signerText, type FreshSet, type SignaturePolicy } from './signed.js';
import type { SetHeader } from './freshness.js';
import { judgeValidators, planPoll, type Validators } from './validators.js';

export interface UrlSourceOptions extends HttpOptions {
  periodMs?: number;
  /** Where the last good body is cached, so a box boots its pods without network. */
  stateDir: string;
  /** Fraction of the period added or taken at random, so a fleet does not poll in step. */
  jitter?: number;
  /** First retry delay after a failure; doubles up to the poll period. */
  retryMs?: number;
  /** What manifests may ask of this node. */
  policy?: PodPolicy;
  log?: Logger;
  /** For metrics: each poll's outcome (a 304 is not_modified; any refused answer is an error). */
  onFetch?: (result: 'ok' | 'not_modified' | 'error') => void;
  /** Apply a set only when its detached signature (`URL.sig`) verifies against these keys. */
  signatures?: SignaturePolicy;
}

interface CacheFile {
  url: string;
  etag?: string;
  lastModified?: string;
  /** The Date of the response that served the body: what its Last-Modified is judged by. */
  date?: string;
  /** The set in force: after a restart, a served body is compared with it, byte for byte. */
  body: string;
  /** With signatures required: the exact bytes that were verified, and their signature. */
  signed?: { bytes: string; signature: string };
}

/**
 * Polls one URL for a Pod or PodList. Any failure (network, timeout, non-2xx, invalid body) keeps
 * the last good set and retries with backoff; an empty body never deletes pods, an explicit empty
 * PodList does. Conditional requests (ETag, Last-Modified) make an unchanged poll a 304 when the
 * validators can tell versions apart; otherwise, and every few polls anyway, a plain GET is
 * compared with the set in force (validators.ts).
 */
export class UrlSource implements PodSource {
  readonly name: string;
  private pods: DesiredPod[] = [];
  private issues: ManifestIssue[] = [];
  /** Those of the last 200 taken (or of the cache, until one is). */
  private validators: Validators | undefined;
  /** A 200 read since start: until then every poll is a plain GET (the cache may be stale). */
  private fullSinceStart = false;
  private notModifiedInARow = 0;
  /** The cache as last written, less its Date: rewritten only when something else changed. */
  private cacheKey: string | undefined;
  /** Where the last answer came from, when a redirect took it to another origin. */
  private redirectedTo: string | undefined;
  private bodyDigest: string | undefined;
  private loaded = false;
  /** The signed header of the set in force (version, expiry). */
  private header: SetHeader | undefined;
  /** Who signed the set in force (with signatures required). */
  private signer: string | undefined;
  private failures = 0;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private onChange: () => void = () => undefined;

  /** The URL as shown: in errors, logs, labels and the cache (credentials masked). */
  private readonly shown: string;

  constructor(
    readonly url: string,
    private readonly o: UrlSourceOptions,
  ) {
    this.shown = redactUrl(url);
    this.name = `url:${this.shown}`;
  }

  get ready(): boolean {
    return this.loaded;
  }

  owns(source: string): boolean {
    return source === this.name;
  }

  canForget(): boolean {
    return this.loaded;
  }

  snapshot(): OriginPods[] {
    return [{ origin: this.name, pods: this.pods }];
  }

  errors(): ManifestIssue[] {
    return this.issues;
  }

  signedBy(): string[] {
    return this.signer ? [`${this.name}: ${this.signer}`] : [];
  }

  expiries(): SetExpiry[] {
    return this.header?.expires
      ? [{ origin: this.name, expires: this.header.expires, ...(this.header.version !== undefined ? { version: this.header.version } : {}) }]
      : [];
  }

  private cachePath(): string {
    return join(this.o.stateDir, 'url-cache', `${createHash('sha256').update(this.url).digest('hex').slice(0, 24)}.json`);
  }

  async start(onChange: () => void): Promise<void> {
    this.onChange = onChange;
    this.loadCache();
    await this.poll();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }

  private loadCache(): void {
    try {
      const c = JSON.parse(readFileSync(this.cachePath(), 'utf8')) as CacheFile;
      if (c.url !== this.shown) return;
      const verified = this.verifiedCache(c);
      if (verified && this.accept(verified.text, 'cache', verified.fresh)) {
        this.signer = verified.signer;
        this.validators = {
          ...(c.etag ? { etag: c.etag } : {}),
          ...(c.lastModified ? { lastModified: c.lastModified } : {}),
          ...(c.date ? { date: c.date } : {}),
        };
        this.o.log?.warn(`${this.name}: using the cached copy until the URL answers`, { source: this.name });
      }
    } catch {
      // No cache yet.
    }
  }

  /**
   * The cached body, if it may be used: with signatures required, only bytes that verify now
   * against the pinned keys (a cache written before they were required, edited on disk, or signed
   * by a key no longer trusted is not used: the box waits for the URL instead).
   */
  private verifiedCache(c: CacheFile): { text: string; signer?: string; fresh?: FreshSet } | undefined {
    const policy = this.o.signatures;
    if (!policy) return { text: c.body };
    if (!c.signed) {
      this.o.log?.warn(`${this.name}: the cached copy is unsigned; not using it (waiting for the URL)`, { source: this.name });
      return undefined;
    }
    const bytes = Buffer.from(c.signed.bytes, 'base64');
    const v = checkSignature(bytes, c.signed.signature, 'the cache', policy, this.name);
    const decoded = decodeManifest(bytes, this.shown);
    if ('reason' in v || !decoded.ok) {
      const why = 'reason' in v ? v.reason : formatIssue((decoded as { issue: ManifestIssue }).issue);
      this.o.log?.warn(`${this.name}: the cached copy is not used: ${why} (waiting for the URL)`, { source: this.name });
      return undefined;
    }
    // A cache older than what this box already accepted is a replay too (the record outlives it).
    const fresh = checkFreshness(bytes, policy, this.name);
    if ('reason' in fresh) {
      this.o.log?.warn(`${this.name}: the cached copy is not used: ${fresh.reason} (waiting for the URL)`, { source: this.name });
      return undefined;
    }
    return { text: decoded.text, signer: signerText(v.signer), fresh };
  }

  /**
   * Validates a body; on success it becomes the current set. Returns whether it was accepted.
   * `fresh` (a signed set): recorded once the body is valid and before it is applied.
   */
  private accept(body: string, from: 'network' | 'cache', fresh?: FreshSet): boolean {
    const digest = createHash('sha256').update(body).digest('hex');
    if (digest === this.bodyDigest) return true;
    const r = loadManifestText({ file: this.shown, source: this.name, text: body }, this.o.policy);
    const errors = r.issues.filter((i) => i.severity === 'error');
    if (errors.length) {
      this.issues = r.issues;
      for (const e of errors) this.o.log?.warn(`${formatIssue(e)} (keeping the last good set)`, { source: this.name });
      return false;
    }
    if (fresh) {
      try {
        fresh.commit();
      } catch (err) {
        // Unrecorded, a set could be replayed after a restart: it is not taken until it can be.
        this.issues = [
          {
            file: this.shown,
            line: 1,
            column: 1,
            field: '',
            message: `${SET_REFUSED}: cannot record its version: ${(err as Error).message}`,
            severity: 'error',
            refused: 'set',
          },
        ];
        return false;
      }
      this.header = fresh.header;
    }
    this.pods = r.pods;
    this.issues = from === 'network' ? r.issues : [];
    this.bodyDigest = digest;
    this.loaded = true;
    this.onChange();
    return true;
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.pollFromTimer(), timerDelay(ms));
    this.timer.unref();
  }

  /**
   * Nobody awaits a timer's poll: one that throws past its own handling (the agent's onChange,
   * a bug) would be an unhandledRejection, i.e. the agent's exit, and the end of polling. It is
   * logged and retried as a failed poll is, the last good set kept.
   */
  private pollFromTimer(): void {
    this.poll().catch((err: unknown) => {
      this.failures++;
      this.o.log?.error(`${this.name}: poll failed: ${err instanceof Error ? err.message : String(err)} (keeping the last good set)`, { source: this.name });
      this.schedule(this.retryDelay());
    });
  }

  /** Backoff after a failure: from retryMs, doubling, up to the period. */
  private retryDelay(): number {
    return Math.min(this.o.periodMs ?? 20_000, (this.o.retryMs ?? 1000) * 2 ** (this.failures - 1));
  }

  /**
   * A failed poll: the last good set stays, the problem shows in the log and (through onChange)
   * in the agent's status; retried with backoff. `issues` are the body's own, when it was read.
   */
  private fail(message: string, issues?: ManifestIssue[], refused?: ManifestIssue['refused']): void {
    this.failures++;
    this.o.onFetch?.('error');
    this.issues = issues ?? [
      { file: this.shown, line: 1, column: 1, field: '', message: redactText(message), severity: 'error', ...(refused ? { refused } : {}) },
    ];
    this.o.log?.warn(`${this.name}: ${redactText(message)} (keeping the last good set)`, { source: this.name });
    this.schedule(this.retryDelay());
    this.onChange();
  }

  /** The detached signature next to the URL; a missing one is undefined with the reason. */
  private async fetchSignature(): Promise<{ text?: string; error?: string }> {
    try {
      const r = await httpGet(signatureUrl(this.url), this.o);
      return { text: r.body.toString('utf8') };
    } catch (err) {
      return { error: redactText((err as Error).message) };
    }
  }

  async poll(): Promise<void> {
    if (this.stopped) return;
    const plan = planPoll({
      ...(this.validators ? { validators: this.validators } : {}),
      fullSinceStart: this.fullSinceStart,
      notModifiedInARow: this.notModifiedInARow,
    });
    if (plan.full) this.o.log?.debug(`${this.name}: a plain GET, compared with the set in force: ${plan.full}`, { source: this.name });
    let res;
    try {
      res = await httpGet(this.url, this.o, plan.conditional);
    } catch (err) {
      this.fail(`cannot fetch: ${(err as Error).message}`);
      return;
    }
    this.noteRedirect(res.urls);
    if (res.status === 304) this.notModifiedInARow++;
    else {
      const decoded = decodeManifest(res.body, this.shown);
      if (!decoded.ok) {
        this.fail(formatIssue(decoded.issue), [decoded.issue]);
        return;
      }
      const body = decoded.text;
      if (body.trim() === '') {
        // An empty answer is more likely a broken server than a wish to delete every pod.
        this.fail('empty body (an explicit empty PodList deletes pods; an empty body does not)');
        return;
      }
      const digest = createHash('sha256').update(body).digest('hex');
      let signed: CacheFile['signed'];
      let signer: string | undefined;
      let fresh: FreshSet | undefined;
      if (this.o.signatures) {
        // Before anything of the body is believed: the bytes as served, against their signature.
        const sig = await this.fetchSignature();
        const v = checkSignature(res.body, sig.text, redactUrl(signatureUrl(this.url)) + (sig.error ? ` (${sig.error})` : ''), this.o.signatures, this.name);
        if ('reason' in v) {
          this.fail(v.reason, undefined, 'signature');
          return;
        }
        const f = checkFreshness(res.body, this.o.signatures, this.name);
        if ('reason' in f) {
          this.fail(f.reason, undefined, 'set');
          return;
        }
        fresh = f;
        signed = { bytes: res.body.toString('base64'), signature: sig.text ?? '' };
        signer = signerText(v.signer);
        if (this.bodyDigest !== digest) this.o.log?.info(`${this.name}: signature verified (key ${signer})`, { source: this.name });
      }
      const changed = digest !== this.bodyDigest;
      if (!this.accept(body, 'network', fresh)) {
        const refusal = this.issues.length === 1 && this.issues[0]!.refused === 'set' ? this.issues[0]! : undefined;
        this.fail(refusal ? refusal.message : 'invalid manifest', this.issues);
        return;
      }
      if (changed)
        this.o.log?.info(`${this.name}: took a new set (sha256 ${digest.slice(0, 12)}, ${this.pods.length} pod${this.pods.length === 1 ? '' : 's'})`, {
          source: this.name,
        });
      this.signer = signer;
      this.fullSinceStart = true;
      this.notModifiedInARow = 0;
      this.validators = {
        ...(res.etag ? { etag: res.etag } : {}),
        ...(res.lastModified ? { lastModified: res.lastModified } : {}),
        ...(res.date ? { date: res.date } : {}),
      };
      this.writeCache({ url: this.shown, body, ...(signed ? { signed } : {}), ...this.validators });
    }
    this.o.onFetch?.(res.status === 304 ? 'not_modified' : 'ok');
    const recovered = this.failures > 0;
    this.failures = 0;
    if (res.status === 304) this.issues = [];
    if (recovered) this.onChange();
    const period = this.o.periodMs ?? 20_000;
    const j = this.o.jitter ?? 0.1;
    this.schedule(period * (1 - j + Math.random() * 2 * j));
  }

  /**
   * The cache, when more than its Date changed (a server without validators would otherwise
   * have it rewritten every poll); a change of the validators' trust is a change.
   */
  private writeCache(cache: CacheFile): void {
    const { date: _date, ...rest } = cache;
    const key = JSON.stringify({ ...rest, trusted: 'trusted' in judgeValidators(cache) });
    if (key === this.cacheKey) return;
    try {
      writeFileAtomic(this.cachePath(), JSON.stringify(cache));
      this.cacheKey = key;
    } catch (err) {
      this.o.log?.warn(`${this.name}: cannot cache the body: ${(err as Error).message}`, { source: this.name });
    }
  }

  /**
   * Says so when the answer came from another origin than the URL's (once, and again when that
   * changes): what a node runs is then up to that origin. A downgrade from https is a warning.
   */
  private noteRedirect(urls: string[]): void {
    const own = new URL(this.url);
    const origins = [...new Set(urls.map((u) => new URL(u).origin))];
    const last = new URL(urls[urls.length - 1] ?? this.url).origin;
    const to = last === own.origin ? undefined : last;
    if (to === this.redirectedTo) return;
    this.redirectedTo = to;
    if (!to) {
      this.o.log?.info(`${this.name}: answered from its own origin again (no longer redirected)`, { source: this.name });
      return;
    }
    // An origin never carries credentials (URL.origin leaves them out): shown as it is.
    const chain = origins.filter((o) => o !== own.origin);
    const downgrade = own.protocol === 'https:' && origins.some((o) => o.startsWith('http:'));
    const msg = `${this.name}: redirected to another origin: ${chain.join(' -> ')}${downgrade ? ' (from https to plain http: the set can be read and changed on the way)' : ''}`;
    if (downgrade) this.o.log?.warn(msg, { source: this.name });
    else this.o.log?.info(msg, { source: this.name });
  }
}
