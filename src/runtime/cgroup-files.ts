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
    // cgroupfs and procfs answer one read with the whole file when the buffer holds it, so a
    // short read is the end (a second read only to be told so is a third of the syscalls).
    const r = readSync(fd, buffer, 0, buffer.length, null);
    return r < buffer.length ? buffer.toString('utf8', 0, r) : readFileSync(path, 'utf8');
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
};

/** Settings files read at most once a period per reader (the same path read again within it answers from memory). */
const settings = new WeakMap<ReadFile, Map<string, { text: string | undefined; at: number }>>();
const SETTINGS_MAX = 8192;

/**
 * A container's settings (its CPU quota, period, shares, pids limit): they change only when
 * someone updates the container, so they are read at most every `maxAgeMs` (default a minute,
 * as the writable layer's size), not at every reading.
 */
export function readSetting(read: ReadFile, path: string, now = Date.now(), maxAgeMs = 60_000): string | undefined {
  let cache = settings.get(read);
  if (!cache) settings.set(read, (cache = new Map()));
  const hit = cache.get(path);
  if (hit && now - hit.at < maxAgeMs) return hit.text;
  if (cache.size >= SETTINGS_MAX) cache.clear();
  const text = read(path);
  cache.set(path, { text, at: now });
  return text;
}

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
