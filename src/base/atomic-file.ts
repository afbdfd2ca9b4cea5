import { close, closeSync, fsync, fsyncSync, mkdirSync, open, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

/**
 * Writes a file so readers see the old content or the new one, never half of it, and a crash or
 * power loss right after leaves one of the two on disk: temp file, fsync, rename, fsync of the
 * directory. The file is private (0600): state files can hold URLs, env values and headers. A
 * failed write (a full disk) leaves no temp file behind and the old content in place.
 * `durable: false` skips the fsyncs (still atomic for readers): for files made again from what the
 * agent knows whenever it starts, which a power loss may take back to an older version or lose,
 * and which are written so often (every change of the desired set) that two fsyncs each, on the
 * agent's one thread, held its deletions back for seconds under churn.
 */
export function writeFileAtomic(path: string, data: string, o: { durable?: boolean } = {}): void {
  const durable = o.durable ?? true;
  const dir = dirname(path);
  const { tmp, fd } = writeAside(path, data);
  let open: number | undefined = fd;
  try {
    if (durable) fsyncSync(fd);
    closeSync(fd);
    open = undefined;
    renameSync(tmp, path);
  } catch (err) {
    if (open !== undefined) closeSync(open);
    removeQuietly(tmp);
    throw err;
  }
  if (!durable) return;
  try {
    const d = openSync(dir, 'r');
    try {
      fsyncSync(d);
    } finally {
      closeSync(d);
    }
  } catch {
    // Some filesystems cannot fsync a directory; the rename itself is still atomic.
  }
}

/** A file's new content written aside, its fsync under way (stageFileAtomic). */
export interface StagedFile {
  /**
   * Waits for the content's fsync, then renames it into place: from then on readers, and a kill -9,
   * see the new content. Returns the directory's fsync still running (it never rejects), which makes
   * the rename survive a power loss; until it ends, a power loss brings the old content back whole.
   * A failed write or fsync throws here, and leaves the old content and no temp file.
   */
  commit(): Promise<{ durable: Promise<void> }>;
  /** Leaves the old content in place and removes the staged one. */
  discard(): void;
}

/**
 * writeFileAtomic in two steps, for a caller with a round trip to wait for meanwhile: the file's
 * content is written aside now and its fsync run in Node's thread pool, so that neither holds up
 * what the caller does next; commit() puts it in place, with the same guarantees.
 */
export function stageFileAtomic(path: string, data: string): StagedFile {
  const dir = dirname(path);
  // Empty when nothing was written aside (writeAside removes what it made when it fails).
  let tmp = '';
  let synced: Promise<void>;
  try {
    const aside = writeAside(path, data);
    tmp = aside.tmp;
    synced = new Promise<void>((resolve, reject) =>
      fsync(aside.fd, (err) => {
        closeSync(aside.fd);
        if (err) reject(err);
        else resolve();
      }),
    );
  } catch (err) {
    synced = Promise.reject(err as Error);
  }
  synced.catch(() => undefined);
  let settled = false;
  return {
    async commit() {
      settled = true;
      try {
        await synced;
        renameSync(tmp, path);
      } catch (err) {
        if (tmp) removeQuietly(tmp);
        throw err;
      }
      return { durable: syncDirectory(dir) };
    },
    discard() {
      if (settled) return;
      settled = true;
      if (tmp) removeQuietly(tmp);
    },
  };
}

/**
 * The new content written to a private temp file beside `path` (its directory made if missing),
 * still open for the caller's fsync and close. A failed write leaves no temp file.
 */
function writeAside(path: string, data: string): { tmp: string; fd: number } {
  const dir = dirname(path);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const tmp = join(dir, `.${basename(path)}.${process.pid}.${Date.now()}.tmp`);
  const fd = openSync(tmp, 'w', 0o600);
  try {
    const buf = Buffer.from(data, 'utf8');
    let off = 0;
    while (off < buf.length) off += writeSync(fd, buf, off);
  } catch (err) {
    closeSync(fd);
    removeQuietly(tmp);
    throw err;
  }
  return { tmp, fd };
}

/** The directory's fsync (what makes a rename in it durable), in the thread pool; never rejects. */
function syncDirectory(dir: string): Promise<void> {
  return new Promise((resolve) =>
    open(dir, 'r', (err, d) => {
      // Some filesystems cannot fsync a directory; the rename itself is still atomic.
      if (err) return resolve();
      fsync(d, () => close(d, () => resolve()));
    }),
  );
}

/** A temp file removed if it is there; a directory that is not one (the failure being told) is no second failure. */
function removeQuietly(path: string): void {
  try {
    rmSync(path, { force: true });
  } catch {
    // Nothing was made there.
  }
}
