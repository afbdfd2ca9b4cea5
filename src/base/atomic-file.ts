import { closeSync, fsyncSync, mkdirSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
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
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const tmp = join(dir, `.${basename(path)}.${process.pid}.${Date.now()}.tmp`);
  let fd: number | undefined;
  try {
    fd = openSync(tmp, 'w', 0o600);
    const buf = Buffer.from(data, 'utf8');
    let off = 0;
    while (off < buf.length) off += writeSync(fd, buf, off);
    if (durable) fsyncSync(fd);
    closeSync(fd);
    fd = undefined;
    renameSync(tmp, path);
  } catch (err) {
    if (fd !== undefined) closeSync(fd);
    rmSync(tmp, { force: true });
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
