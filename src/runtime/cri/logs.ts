import { closeSync, fstatSync, openSync, readdirSync, readSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

// Containers' logs as a CRI runtime writes them (the kubelet reads them itself, pkg/kubelet/kuberuntime/logs):
// one line per write, `<RFC3339Nano> <stdout|stderr> <F|P> <text>`; P is a part of a line the
// runtime split (a long line, or no newline yet), F ends one.

export interface CriLogLine {
  /** RFC 3339 with nanoseconds, as written. */
  time: string;
  stream: 'stdout' | 'stderr';
  /** The text, with its newline when the tag was F. */
  text: string;
}

/** One line of a CRI log; undefined when it is not one (a damaged or foreign line is skipped, as the kubelet does). */
export function parseCriLine(line: string): CriLogLine | undefined {
  const a = line.indexOf(' ');
  const b = line.indexOf(' ', a + 1);
  const c = line.indexOf(' ', b + 1);
  // A line with an empty text may lack the space after the tag.
  const tagEnd = c < 0 ? line.length : c;
  if (a <= 0 || b <= a) return undefined;
  const stream = line.slice(a + 1, b);
  const tag = line.slice(b + 1, tagEnd);
  if ((stream !== 'stdout' && stream !== 'stderr') || (tag !== 'F' && tag !== 'P')) return undefined;
  const text = c < 0 ? '' : line.slice(c + 1);
  return { time: line.slice(0, a), stream, text: tag === 'F' ? `${text}\n` : text };
}

/** ns since the epoch of an RFC 3339 time with any fraction (Date keeps only ms). */
export function timeNs(t: string): bigint {
  const m = /^(.*?)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$/.exec(t);
  const ms = Date.parse(m ? `${m[1]}${m[3]}` : t);
  if (!Number.isFinite(ms)) return 0n;
  return BigInt(ms) * 1_000_000n + BigInt((m?.[2] ?? '').padEnd(9, '0').slice(0, 9) || '0');
}

/** A `since`/`until` bound as podrun's callers give it (seconds, whole or `S.NANOS`, or RFC 3339) in ns. */
export function boundNs(v: number | string | undefined): bigint | undefined {
  if (v === undefined) return undefined;
  const s = String(v);
  const m = /^(\d+)(?:\.(\d{1,9}))?$/.exec(s);
  if (m) return BigInt(m[1] ?? '0') * 1_000_000_000n + BigInt((m[2] ?? '').padEnd(9, '0') || '0');
  const ns = timeNs(s);
  return ns > 0n ? ns : undefined;
}

export interface LogReadOptions {
  follow: boolean;
  timestamps: boolean;
  tail?: number;
  since?: number | string;
  until?: string;
}

/** Bytes a reader took from log files (a test checks a tail reads near the end only). */
export interface ReadMeter {
  bytes: number;
}

/** The most a reader holds of a file at once: every read is a chunk, never the whole file. */
export const LOG_CHUNK = 64 * 1024;

/**
 * A log file held open: read on from where it was, so the lines written to it just before a
 * rotation renamed it are read from the same file (the runtime reopens a new one by the old name).
 */
export class OpenLog {
  private constructor(
    readonly fd: number,
    readonly ino: number,
    /** Where `read` goes on from. */
    public offset: number,
    private readonly meter: ReadMeter | undefined,
  ) {}

  static open(path: string, meter?: ReadMeter): OpenLog | undefined {
    let fd: number;
    try {
      fd = openSync(path, 'r');
    } catch {
      return undefined;
    }
    return new OpenLog(fd, fstatSync(fd).ino, 0, meter);
  }

  size(): number {
    return fstatSync(this.fd).size;
  }

  /** Fills `buf` from `pos` as far as the file goes; the bytes read. */
  readAt(buf: Buffer, pos: number): number {
    let got = 0;
    while (got < buf.length) {
      const n = readSync(this.fd, buf, got, buf.length - got, pos + got);
      if (n === 0) break;
      got += n;
    }
    if (this.meter) this.meter.bytes += got;
    return got;
  }

  /** Up to a chunk of what was written since the last read (from the start again if it was truncated). */
  read(): Buffer {
    const size = this.size();
    if (size < this.offset) this.offset = 0;
    const buf = Buffer.alloc(Math.min(LOG_CHUNK, size - this.offset));
    const got = this.readAt(buf, this.offset);
    this.offset += got;
    return buf.subarray(0, got);
  }

  /** Counts what a stream read from the file (a compressed one, read through zlib). */
  counted(n: number): void {
    if (this.meter) this.meter.bytes += n;
  }

  close(): void {
    closeSync(this.fd);
  }
}

/** The file now at `path` is another than `log` (rotated: renamed, a new one made by the runtime). */
export function replaced(path: string, log: OpenLog): boolean {
  try {
    return statSync(path).ino !== log.ino;
  } catch {
    return false;
  }
}

/** The rotated files of `log` that podrun's rotation keeps (`<log>.<stamp>` and `<log>.<stamp>.gz`), oldest first. */
function rotatedFiles(log: string): string[] {
  const base = `${basename(log)}.`;
  try {
    return readdirSync(dirname(log))
      .filter((n) => n.startsWith(base) && /^\d{8}-\d{6}(?:\.gz)?$/.test(n.slice(base.length)))
      .sort()
      .map((n) => join(dirname(log), n));
  } catch {
    return [];
  }
}

/** Where a reader of the log is, for a test to run a rotation's steps in between. */
export type SnapshotStep = 'opened-current' | 'listed' | 'opened-rotated' | 'checked';

/** A rotated file of a snapshot, held open; `gz` when it is compressed. */
export interface HeldLog {
  log: OpenLog;
  gz: boolean;
}

/** The files of a log at one instant, held open: the rotated ones oldest first, then the current one. */
export interface LogSnapshot {
  rotated: HeldLog[];
  current: OpenLog | undefined;
}

/**
 * The log's rotated files and its current one opened as they were at one instant, for `--tail` and
 * `--since` to see across rotations. A rotation (another task, any time) renames the current file,
 * compresses the newest rotated one (`.gz.tmp`, renamed `.gz`, the plain one removed) and removes the
 * oldest: opening one file after another, a reader would see a file twice (compressed and not, or the
 * current one again under its stamp) or miss one. So every file is opened first (an open file keeps
 * its text however it is renamed or removed), then the directory listed again: unchanged (the same
 * stamps, the same current file), what is open is one instant's set; changed, the whole is tried
 * again (a bounded number of times: a rotation a second at most, so it settles). Nothing is read
 * here: the reader reads what it needs of each file, in chunks.
 */
export function openLogSnapshot(path: string, step: (at: SnapshotStep) => void = () => undefined, meter?: ReadMeter): LogSnapshot {
  for (let attempt = 0; ; attempt++) {
    const current = OpenLog.open(path, meter);
    step('opened-current');
    const stamps = [...new Set(rotatedFiles(path).map((f) => f.replace(/\.gz$/, '')))];
    step('listed');
    const held: HeldLog[] = [];
    let complete = true;
    for (const f of stamps) {
      // The plain file first: one being compressed still is, and its `.gz` may be half written.
      const plain = OpenLog.open(f, meter);
      const log = plain ?? OpenLog.open(`${f}.gz`, meter);
      if (!log) complete = false;
      else if (current && plain && log.ino === current.ino)
        log.close(); // the current file, renamed since it was opened
      else held.push({ log, gz: !plain });
      step('opened-rotated');
    }
    const now = rotatedFiles(path).map((f) => f.replace(/\.gz$/, ''));
    const same = complete && now.length === stamps.length && new Set([...now, ...stamps]).size === stamps.length && currentIno(path) === current?.ino;
    step('checked');
    if (!same && attempt < 20) {
      for (const h of held) h.log.close();
      current?.close();
      continue;
    }
    return { rotated: held, current };
  }
}

function currentIno(path: string): number | undefined {
  try {
    return statSync(path).ino;
  } catch {
    return undefined;
  }
}
