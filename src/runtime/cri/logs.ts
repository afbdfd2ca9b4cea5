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

/**
 * A log file held open: read on from where it was, so the lines written to it just before a
 * rotation renamed it are read from the same file (the runtime reopens a new one by the old name).
 */
export class OpenLog {
  private constructor(
    private fd: number,
    readonly ino: number,
    private offset: number,
  ) {}

  static open(path: string): OpenLog | undefined {
    let fd: number;
    try {
      fd = openSync(path, 'r');
    } catch {
      return undefined;
    }
    return new OpenLog(fd, fstatSync(fd).ino, 0);
  }

  /** What was written since the last read (from the start again if it was truncated). */
  read(): Buffer {
    const size = fstatSync(this.fd).size;
    if (size < this.offset) this.offset = 0;
    const buf = Buffer.alloc(size - this.offset);
    let got = 0;
    while (got < buf.length) {
      const n = readSync(this.fd, buf, got, buf.length - got, this.offset + got);
      if (n === 0) break;
      got += n;
    }
    this.offset += got;
    return buf.subarray(0, got);
  }

  close(): void {
    closeSync(this.fd);
  }
}

/** The file now at `path` is another than `log` (rotated: renamed, a new one made by the runtime). */
function replaced(path: string, log: OpenLog): boolean {
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

/**
 * The log's rotated files and its current one read as they were at one instant, for `--tail` and
 * `--since` to see across rotations. A rotation (another task, any time) renames the current file,
 * compresses the newest rotated one (`.gz.tmp`, renamed `.gz`, the plain one removed) and removes the
 * oldest: read one file after another, a reader would see a file twice (compressed and not, or the
 * current one again under its stamp) or miss one. So every file is opened first (an open file keeps
 * its text however it is renamed or removed), then the directory listed again: unchanged (the same
 * stamps, the same current file), what is open is one instant's set; changed, the whole is tried
 * again (a bounded number of times: a rotation a second at most, so it settles).
 */
export function readLogSnapshot(path: string, step: (at: SnapshotStep) => void = () => undefined): { text: string; current: OpenLog | undefined } {
  for (let attempt = 0; ; attempt++) {
    const current = OpenLog.open(path);
    step('opened-current');
    const stamps = [...new Set(rotatedFiles(path).map((f) => f.replace(/\.gz$/, '')))];
    step('listed');
    const held: { log: OpenLog; gz: boolean }[] = [];
    let complete = true;
    for (const f of stamps) {
      // The plain file first: one being compressed still is, and its `.gz` may be half written.
      const plain = OpenLog.open(f);
      const log = plain ?? OpenLog.open(`${f}.gz`);
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
    let text = '';
    for (const { log, gz } of held) {
      try {
        const data = log.read();
        // zlib loaded only for a rotated file: not by every command on a CRI runtime.
        text += (gz ? process.getBuiltinModule('node:zlib').gunzipSync(data, { maxOutputLength: 1 << 30 }) : data).toString('utf8');
      } catch {
        // Damaged: the kubelet skips what it cannot read.
      } finally {
        log.close();
      }
    }
    return { text: text + (current?.read().toString('utf8') ?? ''), current };
  }
}

function currentIno(path: string): number | undefined {
  try {
    return statSync(path).ino;
  } catch {
    return undefined;
  }
}

/** Waits for the writable's room, so a slow reader of a big log holds memory constant. */
function write(to: NodeJS.WritableStream, text: string): Promise<void> {
  if (to.write(text)) return Promise.resolve();
  return new Promise((resolve) => to.once('drain', () => resolve()));
}

/**
 * Writes a container's CRI log to `out`/`err` as `podrun logs` shows it (`--tail` counts whole
 * lines, `--since`/`until` bound by each line's time); with `follow`, new lines as they come until
 * `running()` says the container stopped and nothing more was written.
 */
export async function writeCriLog(
  path: string,
  o: LogReadOptions,
  out: NodeJS.WritableStream,
  err: NodeJS.WritableStream,
  running: () => Promise<boolean>,
  pollMs = 200,
): Promise<void> {
  const since = boundNs(o.since);
  const until = boundNs(o.until);
  const snapshot = readLogSnapshot(path);
  let current = snapshot.current;
  const firstText = snapshot.text;
  let rest = '';
  const lines = (chunk: string): CriLogLine[] => {
    const all = (rest + chunk).split('\n');
    rest = all.pop() ?? '';
    return all.map(parseCriLine).filter((l): l is CriLogLine => l !== undefined);
  };
  const emit = async (ls: CriLogLine[]): Promise<void> => {
    for (const l of ls) {
      const t = since !== undefined || until !== undefined ? timeNs(l.time) : 0n;
      if (since !== undefined && t < since) continue;
      if (until !== undefined && t > until) continue;
      await write(l.stream === 'stderr' ? err : out, o.timestamps ? `${l.time} ${l.text}` : l.text);
    }
  };
  let initial = lines(firstText);
  if (o.tail !== undefined) {
    // Whole lines: a line's parts (P) count with the F that ends it.
    let whole = 0;
    let i = initial.length;
    while (i > 0 && whole <= o.tail) {
      if (initial[i - 1]?.text.endsWith('\n')) whole++;
      if (whole > o.tail) break;
      i--;
    }
    initial = o.tail === 0 ? [] : initial.slice(i);
  }
  await emit(initial);
  if (!o.follow) {
    current?.close();
    return;
  }
  try {
    for (;;) {
      const alive = await running().catch(() => false);
      await new Promise((r) => setTimeout(r, pollMs));
      let got = 0;
      current ??= OpenLog.open(path);
      if (current) {
        let data = current.read();
        if (replaced(path, current)) {
          // Rotated: what the old file got before the rename, then the new file from its start.
          current.close();
          current = OpenLog.open(path);
          data = Buffer.concat([data, current?.read() ?? Buffer.alloc(0)]);
        }
        got = data.length;
        if (got) await emit(lines(data.toString('utf8')));
      }
      if (!alive && !got) return;
    }
  } finally {
    current?.close();
  }
}
