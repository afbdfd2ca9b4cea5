import { timerDelay } from '../base/duration.js';
import type { Logger } from '../log/logger.js';
import { createHash } from 'node:crypto';
import { readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { watch, type FSWatcher } from 'chokidar';
import { formatIssue, type ManifestIssue } from '../manifest/errors.js';
import { loadManifestText } from '../manifest/load.js';
import type { DesiredPod } from '../manifest/types.js';
import { isManifestFileName, readManifestFile, writableByOthers } from '../manifest/files.js';
import { RemovalGrace, SettleWait } from './settle.js';
import type { OriginPods } from './merge.js';
import type { PodSource, SetExpiry } from './source.js';
import type { SetHeader } from './freshness.js';
import type { PodPolicy } from '../manifest/policy.js';
import {
  checkFreshness,
  checkSignature,
  SET_REFUSED,
  SIGNATURE_REFUSED,
  signaturePath,
  signedFileOf,
  signerText,
  type FreshSet,
  type SignaturePolicy,
} from './signed.js';

export interface DirectorySourceOptions {
  /** Full rescan period, the safety net under the watcher. */
  resyncMs?: number;
  /**
   * How long a vanished file stays wanted before its pods go: editors save by renaming the old
   * file away and writing a new one, which must not delete and recreate the pod.
   */
  removeGraceMs?: number;
  /**
   * How pods from a file are labelled (default `file:<path>`), and the prefix that marks them as
   * ours; `shown` reads from a file's text where each pod came from as people gave it (applied sets).
   */
  origin?: { of: (path: string) => string; prefix: string; shown?: (text: string) => Map<string, string> };
  /** What manifests may ask of this node. */
  policy?: PodPolicy;
  log?: Logger;
  /** Read a file only when its detached signature (`FILE.sig` beside it) verifies against these keys. */
  signatures?: SignaturePolicy;
}

/** What a file keeps of its last good signed version while a newer one is refused. */
function signedOf(prev: FileState | undefined): Pick<FileState, 'signedBy' | 'header'> {
  return { ...(prev?.signedBy ? { signedBy: prev.signedBy } : {}), ...(prev?.header ? { header: prev.header } : {}) };
}

interface FileState {
  digest: string;
  lastGood: DesiredPod[];
  issues: ManifestIssue[];
  /** Read valid at least once: only then does its content say which pods are not wanted. */
  good: boolean;
  /** Who signed its last good version (with signatures required). */
  signedBy?: string;
  /** The signed header of its last good version (version, expiry). */
  header?: SetHeader;
}

/**
 * Watches one directory (not recursive) for Pod manifests. A change is read at once; a file that
 * turns invalid keeps its last good pods, forever, until fixed or removed; a missing directory is
 * waited for. Reads of one file never overlap: a change during a read is read again after it.
 */
export class DirectorySource implements PodSource {
  readonly name: string;
  private readonly dir: string;
  private readonly files = new Map<string, FileState>();
  private readonly busy = new Set<string>();
  private readonly again = new Set<string>();
  /** New content believed only once it has stayed (settle.ts); a settled file is read anew. */
  private readonly settle = new SettleWait(
    (path, settled) => {
      if (settled) {
        const again = this.files.get(path);
        if (again) again.digest = '';
      }
      this.fileEvent(path);
    },
    () => this.stopped,
  );
  /** A vanished file's pods stay wanted for the removal grace (settle.ts): it may be back at once. */
  private readonly removals = new RemovalGrace(
    (path) => this.fileEvent(path),
    (path) => {
      this.files.delete(path);
      this.onChange();
    },
    () => this.stopped,
  );
  private watcher: FSWatcher | undefined;
  private timer: NodeJS.Timeout | undefined;
  private onChange: () => void = () => undefined;
  private scanned = false;
  private dirIssue: ManifestIssue | undefined;
  private stopped = false;
  /** In `readNow`: what is read is believed as it is. */
  private believing = false;

  constructor(
    dir: string,
    private readonly o: DirectorySourceOptions = {},
  ) {
    this.dir = resolve(dir);
    this.name = `dir:${this.dir}`;
  }

  get ready(): boolean {
    return this.scanned;
  }

  private origin(path: string): string {
    return this.o.origin ? this.o.origin.of(path) : `file:${path}`;
  }

  owns(source: string): boolean {
    return source.startsWith(this.o.origin?.prefix ?? `file:${this.dir}/`);
  }

  canForget(source: string): boolean {
    if (!this.scanned) return false;
    for (const [path, f] of this.files) if (this.origin(path) === source) return f.good;
    // Its file is gone (or is no manifest any more): its pods are not wanted.
    return true;
  }

  snapshot(): OriginPods[] {
    return [...this.files].map(([path, f]) => ({ origin: this.origin(path), pods: f.lastGood }));
  }

  signedBy(): string[] {
    return [...this.files].flatMap(([path, f]) => (f.signedBy ? [`${path}: ${f.signedBy}`] : []));
  }

  expiries(): SetExpiry[] {
    return [...this.files].flatMap(([path, f]) =>
      f.good && f.header?.expires
        ? [{ origin: this.origin(path), expires: f.header.expires, ...(f.header.version !== undefined ? { version: f.header.version } : {}) }]
        : [],
    );
  }

  errors(): ManifestIssue[] {
    return [...(this.dirIssue ? [this.dirIssue] : []), ...[...this.files.values()].flatMap((f) => f.issues)];
  }

  async start(onChange: () => void): Promise<void> {
    this.onChange = onChange;
    this.resync();
    // The watcher reports changes only once it is ready: a file written between the first look and
    // then would wait for the next rescan (20 s). A second look once it is ready catches it; start
    // does not wait for it.
    this.watcher?.once('ready', () => this.resync());
    this.timer = setInterval(() => this.resync(), timerDelay(this.o.resyncMs ?? 20_000));
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.removals.stop();
    this.settle.stop();
    await this.watcher?.close();
  }

  private dirExists(): boolean {
    try {
      return statSync(this.dir).isDirectory();
    } catch {
      return false;
    }
  }

  private ensureWatcher(): void {
    if (this.watcher || this.stopped) return;
    this.watcher = watch(this.dir, {
      depth: 0,
      ignoreInitial: true,
      // We handle editors' rename dances ourselves (removeGraceMs), and want changes at once.
      atomic: false,
      awaitWriteFinish: false,
      ignored: (path: string) => path !== this.dir && !isManifestFileName(path) && !(this.o.signatures && isManifestFileName(signedFileOf(path) ?? '')),
    });
    const touch = (path: string): void => this.fileEvent(path);
    this.watcher.on('add', touch).on('change', touch).on('unlink', touch);
    this.watcher.on('unlinkDir', (path: string) => {
      if (resolve(path) === this.dir) this.dropWatcher();
    });
    this.watcher.on('error', (err: unknown) => this.o.log?.warn(`${this.name}: watch error: ${(err as Error).message}`, { source: this.name }));
  }

  private dropWatcher(): void {
    const w = this.watcher;
    this.watcher = undefined;
    // Not awaited (the directory is gone; a new watcher may come first), but not left to reject unheard.
    w?.close().catch((err: unknown) => this.o.log?.warn(`${this.name}: closing the watcher: ${(err as Error).message}`, { source: this.name }));
  }

  /**
   * Lists the directory and reads what changed now, each file believed as it is, with one change
   * told for all: for files this process has just written itself, atomically (the agent's applied
   * sets), which no half-done write or editor's save can be caught in.
   */
  readNow(): void {
    const onChange = this.onChange;
    let changed = false;
    this.onChange = () => (changed = true);
    this.believing = true;
    try {
      this.resync();
    } finally {
      this.believing = false;
      this.onChange = onChange;
    }
    if (changed) onChange();
  }

  /** Lists the directory and reads what changed; the periodic safety net, and the first load. */
  resync(): void {
    if (this.stopped) return;
    if (!this.dirExists()) {
      this.dropWatcher();
      // Not ready: its pods stay as they are until the directory comes (back).
      return;
    }
    const unsafe = writableByOthers(this.dir);
    if (unsafe) {
      // Anyone who can write here could run a privileged pod as root: read nothing from it.
      // What runs stays as it is (the source is not ready, or keeps its last good files).
      if (this.dirIssue?.message !== unsafe) {
        this.dirIssue = { file: this.dir, line: 1, column: 1, field: '', message: unsafe, severity: 'error' };
        this.o.log?.error(`${formatIssue(this.dirIssue)} (reading nothing from it)`, { source: this.name });
        this.onChange();
      }
      this.dropWatcher();
      return;
    }
    if (this.dirIssue) {
      this.dirIssue = undefined;
      this.onChange();
    }
    this.ensureWatcher();
    let names: string[];
    try {
      names = readdirSync(this.dir).filter(isManifestFileName).sort();
    } catch {
      return;
    }
    const present = new Set(names.map((n) => join(this.dir, n)));
    for (const p of present) this.fileEvent(p);
    for (const p of this.files.keys()) if (!present.has(p)) this.fileEvent(p);
    if (!this.scanned) {
      this.scanned = true;
      this.onChange();
    }
  }

  private fileEvent(path: string): void {
    // A signature's change is its manifest's: read the two together.
    const full = resolve((this.o.signatures && signedFileOf(path)) || path);
    if (this.busy.has(full)) {
      this.again.add(full);
      return;
    }
    this.busy.add(full);
    try {
      this.readFile(full);
    } finally {
      this.busy.delete(full);
    }
    if (this.again.delete(full)) this.fileEvent(full);
  }

  private readFile(path: string): void {
    const read = readManifestFile(path);
    if (read.kind === 'gone') {
      if (!this.files.has(path)) return;
      if (!this.believing) return this.removals.start(path, this.o.removeGraceMs ?? 1000);
      this.removals.cancel(path);
      this.settle.cancel(path);
      this.files.delete(path);
      return this.onChange();
    }
    if (read.kind === 'issue') {
      this.setIssue(path, read.issue);
      return;
    }
    const text = read.text;
    const unsafe = writableByOthers(path);
    if (unsafe) {
      this.setIssue(path, { file: path, line: 1, column: 1, field: '', message: unsafe, severity: 'error' });
      return;
    }
    this.removals.cancel(path);
    let signature: string | undefined;
    if (this.o.signatures) {
      const sig = readManifestFile(signaturePath(path));
      if (sig.kind === 'issue') {
        this.setIssue(path, { ...sig.issue, message: `${SIGNATURE_REFUSED}: ${sig.issue.file} ${sig.issue.message}`, refused: 'signature' });
        return;
      }
      signature = sig.kind === 'text' ? sig.text : undefined;
    }
    // With signatures, the pair is the content: a new signature for the same file is news too.
    const digest = createHash('sha256')
      .update(text)
      .update(signature === undefined ? '' : `\0${signature}`)
      .digest('hex');
    const prev = this.files.get(path);
    if (prev && prev.digest === digest) {
      // Back to what is in force: a version seen meanwhile did not stay, so it is not waited for.
      this.settle.cancel(path);
      return;
    }
    if (text.trim() === '') {
      // Most often a write caught between truncate and write. Like an empty URL body, it never
      // deletes pods: removing the file does.
      const issue: ManifestIssue = {
        file: path,
        line: 1,
        column: 1,
        field: '',
        message: 'file is empty; keeping its pods (remove the file to delete them)',
        severity: 'warning',
      };
      this.files.set(path, { digest, lastGood: prev?.lastGood ?? [], issues: [issue], good: prev?.good ?? false, ...signedOf(prev) });
      return;
    }
    // A write may be caught half done, and a prefix of a manifest is often a valid manifest (the
    // first container without the second). After the first scan, content is believed only once it
    // has stayed the same for a moment; a rename into place (what careful writers do) costs the
    // same moment and nothing else.
    if (this.scanned && !this.believing && !this.settle.isSettled(path, digest)) {
      this.settle.wait(path, digest);
      return;
    }
    // Believed now: a wait for this content begun before is over.
    if (this.believing) this.settle.cancel(path);
    this.settle.forget(path);
    let signedBy: string | undefined;
    let fresh: FreshSet | undefined;
    if (this.o.signatures) {
      const refuse = (reason: string, refused: 'signature' | 'set'): void =>
        this.setIssue(path, { file: path, line: 1, column: 1, field: '', message: reason, severity: 'error', refused });
      const v = checkSignature(read.bytes, signature, signaturePath(path), this.o.signatures, this.origin(path));
      if ('reason' in v) return refuse(v.reason, 'signature');
      const f = checkFreshness(read.bytes, this.o.signatures, this.origin(path));
      if ('reason' in f) return refuse(f.reason, 'set');
      fresh = f;
      signedBy = signerText(v.signer);
      this.o.log?.info(`${path}: signature verified (key ${signedBy})`, { source: this.name, file: path });
    }
    const r = loadManifestText({ file: path, source: this.origin(path), text }, this.o.policy);
    const shown = this.o.origin?.shown?.(text);
    if (shown?.size) r.pods = r.pods.map((p) => (shown.has(p.key) ? { ...p, origin: { ...p.origin, shown: shown.get(p.key)! } } : p));
    const errors = r.issues.filter((i) => i.severity === 'error');
    if (errors.length) {
      for (const e of errors) this.o.log?.warn(`${formatIssue(e)} (keeping the last good version)`, { source: this.name, file: e.file });
      this.files.set(path, { digest, lastGood: prev?.lastGood ?? [], issues: r.issues, good: prev?.good ?? false, ...signedOf(prev) });
    } else {
      try {
        // Recorded before it is applied: after a kill -9 the record is never older than what runs.
        fresh?.commit();
      } catch (err) {
        this.setIssue(path, {
          file: path,
          line: 1,
          column: 1,
          field: '',
          message: `${SET_REFUSED}: cannot record its version: ${(err as Error).message}`,
          severity: 'error',
          refused: 'set',
        });
        return;
      }
      this.files.set(path, {
        digest,
        lastGood: r.pods,
        issues: r.issues,
        good: true,
        ...(signedBy ? { signedBy } : {}),
        ...(fresh?.header ? { header: fresh.header } : {}),
      });
    }
    this.onChange();
  }

  /** A file that cannot be read keeps its last good pods, like an invalid one. */
  private setIssue(path: string, issue: ManifestIssue): void {
    const prev = this.files.get(path);
    this.removals.cancel(path);
    const digest = `issue:${issue.message}`;
    if (prev?.digest === digest) return;
    this.o.log?.warn(`${formatIssue(issue)} (keeping the last good version)`, { source: this.name, file: issue.file });
    this.files.set(path, { digest, lastGood: prev?.lastGood ?? [], issues: [issue], good: prev?.good ?? false, ...signedOf(prev) });
    this.onChange();
  }
}
