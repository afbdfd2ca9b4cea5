import { statSync } from 'node:fs';
import { timerDelay } from '../base/duration.js';
import { stampOf } from '../manifest/files.js';

// A file in a watched directory changes in steps: a write caught between truncate and write, or
// half done; an editor's save that renames the old file away before the new one lands. Neither
// half-step may change what runs. These two waits are the directory source's (dir-source.ts),
// kept apart so its reading of a file stays one thing to read.

/** How long new content must stay as it is before it is believed. */
const SETTLE_MS = 300;

/**
 * New content waits SETTLE_MS before it is believed: a prefix of a manifest is often a valid
 * manifest (the first container without the second). `reread(path, settled)` is called when a
 * wait ends: `settled` when the content stayed as it was, else the file was written meanwhile.
 */
export class SettleWait {
  /** Files waiting to be read again, with the content the wait is for. */
  private readonly confirming = new Map<string, { digest: string; timer: NodeJS.Timeout }>();
  /** Content that stayed the same through a wait: it may be believed. */
  private readonly settled = new Map<string, string>();

  constructor(
    private readonly reread: (path: string, settled: boolean) => void,
    private readonly stopped: () => boolean,
  ) {}

  /** Whether `digest` is the content that stayed the same through the file's last wait. */
  isSettled(path: string, digest: string): boolean {
    return this.settled.get(path) === digest;
  }

  /** The file's settled content was taken: the next change waits anew. */
  forget(path: string): void {
    this.settled.delete(path);
  }

  /** The file is back to what is in force: a version seen meanwhile did not stay, so it is not waited for. */
  cancel(path: string): void {
    const waiting = this.confirming.get(path);
    if (!waiting) return;
    clearTimeout(waiting.timer);
    this.confirming.delete(path);
  }

  /**
   * Reads the file again once its content has stayed `digest` for SETTLE_MS; then that content is
   * believed. New content meanwhile starts the wait over.
   */
  wait(path: string, digest: string): void {
    const waiting = this.confirming.get(path);
    if (waiting?.digest === digest) return;
    if (waiting) clearTimeout(waiting.timer);
    const stamp = stampOf(path);
    const timer = setTimeout(() => {
      this.confirming.delete(path);
      if (this.stopped()) return;
      // Written again meanwhile (perhaps back and forth, between events): not settled; wait anew.
      if (stampOf(path) !== stamp) {
        this.reread(path, false);
        return;
      }
      this.settled.set(path, digest);
      this.reread(path, true);
    }, SETTLE_MS);
    timer.unref();
    this.confirming.set(path, { digest, timer });
  }

  stop(): void {
    for (const w of this.confirming.values()) clearTimeout(w.timer);
  }
}

/**
 * A vanished file stays wanted for a grace period before its pods go: editors save by renaming the old
 * file away and writing a new one, which must not delete and recreate the pod. After the grace,
 * a file that is there again is read (`reread`), else `gone` is told.
 */
export class RemovalGrace {
  private readonly removals = new Map<string, NodeJS.Timeout>();

  constructor(
    private readonly reread: (path: string) => void,
    private readonly gone: (path: string) => void,
    private readonly stopped: () => boolean,
  ) {}

  start(path: string, graceMs: number): void {
    if (this.removals.has(path)) return;
    const t = setTimeout(() => {
      this.removals.delete(path);
      if (this.stopped()) return;
      try {
        if (statSync(path).isFile()) {
          this.reread(path);
          return;
        }
      } catch {
        // gone for good
      }
      this.gone(path);
    }, timerDelay(graceMs));
    t.unref();
    this.removals.set(path, t);
  }

  /** The file was read again (it is back, or unreadable): its pods stay. */
  cancel(path: string): void {
    const pending = this.removals.get(path);
    if (pending) {
      clearTimeout(pending);
      this.removals.delete(path);
    }
  }

  stop(): void {
    for (const t of this.removals.values()) clearTimeout(t);
  }
}
