import { closeSync, fstatSync, openSync, readSync } from 'node:fs';

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

/** Reads a file from `offset` to its end (a log file only grows until it is rotated). */
function readFrom(path: string, offset: number): { data: Buffer; size: number } | undefined {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return undefined;
  }
  try {
    const size = fstatSync(fd).size;
    // Rotated (truncated or replaced by a smaller file): read it from its start.
    const from = size < offset ? 0 : offset;
    const buf = Buffer.alloc(size - from);
    let got = 0;
    while (got < buf.length) {
      const n = readSync(fd, buf, got, buf.length - got, from + got);
      if (n === 0) break;
      got += n;
    }
    return { data: buf.subarray(0, got), size: from + got };
  } finally {
    closeSync(fd);
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
export async function writeCriLog(path: string, o: LogReadOptions, out: NodeJS.WritableStream, err: NodeJS.WritableStream, running: () => Promise<boolean>, pollMs = 200): Promise<void> {
  const since = boundNs(o.since);
  const until = boundNs(o.until);
  const first = readFrom(path, 0);
  let offset = first?.size ?? 0;
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
  let initial = lines(first?.data.toString('utf8') ?? '');
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
  if (!o.follow) return;
  for (;;) {
    const alive = await running().catch(() => false);
    await new Promise((r) => setTimeout(r, pollMs));
    const next = readFrom(path, offset);
    if (next) {
      offset = next.size;
      if (next.data.length) await emit(lines(next.data.toString('utf8')));
    }
    if (!alive && !next?.data.length) return;
  }
}
