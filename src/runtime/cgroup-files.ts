import { closeSync, openSync, readFileSync, readSync } from 'node:fs';

// Reading cgroupfs and /proc files: many small files a reading, so each is one open, read and
// close into a buffer kept for it (readFileSync also stats the file and allocates every time).

/** Reads a file's text, or undefined when it is not there (the container is gone, or not here). */
export type ReadFile = (path: string) => string | undefined;

const buffer = Buffer.allocUnsafe(64 * 1024);

export const readIfThere: ReadFile = (path) => {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return undefined;
  }
  try {
    let n = 0;
    for (;;) {
      const r = readSync(fd, buffer, n, buffer.length - n, null);
      if (r === 0) return buffer.toString('utf8', 0, n);
      n += r;
      if (n === buffer.length) return readFileSync(path, 'utf8');
    }
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
};

/** `key value` lines (memory.stat, cpu.stat, memory.events) as numbers; with `keep`, those keys only. */
export function keyedNumbers(text: string | undefined, keep?: ReadonlySet<string>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of (text ?? '').split('\n')) {
    const [k, v] = line.trim().split(/\s+/);
    if (k && v !== undefined && (!keep || keep.has(k)) && /^\d+$/.test(v)) out[k] = Number(v);
  }
  return out;
}

/** A file holding one number; undefined when it holds anything else ("max", "-1") or is not there. */
export function num(text: string | undefined): number | undefined {
  const t = text?.trim();
  return t && /^\d+$/.test(t) ? Number(t) : undefined;
}
