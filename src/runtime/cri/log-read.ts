import { Readable } from 'node:stream';
import {
  boundNs,
  LOG_CHUNK,
  OpenLog,
  openLogSnapshot,
  parseCriLine,
  replaced,
  timeNs,
  type CriLogLine,
  type LogReadOptions,
  type LogSnapshot,
  type ReadMeter,
} from './logs.js';

// `podrun logs` on a CRI log, as the kubelet's ReadLogs (pkg/kubelet/kuberuntime/logs/logs.go):
// where the lines asked for begin is found from the end (--tail counts whole lines back, --since
// looks back to the first line older than the time), then each file is read on in chunks and each
// line written as it comes. Memory stays a few chunks whatever the log's size.

const NL = 0x0a;

/** A file of the snapshot as the reader sees it: a plain one up to `end`, or a compressed one. */
interface Source {
  log: OpenLog;
  gz: boolean;
  end: number;
}

/** What to write of one file: a plain one from a byte offset, a compressed one after some whole lines. */
type Segment = { log: OpenLog; gz: false; from: number; to: number } | { log: OpenLog; gz: true; skipWhole: number };

/** The end of the file's last whole line: what follows is a line the runtime is still writing. */
function completeEnd(log: OpenLog, size: number): number {
  const buf = Buffer.alloc(Math.min(LOG_CHUNK, size));
  for (let pos = size; pos > 0;) {
    const n = Math.min(LOG_CHUNK, pos);
    pos -= n;
    const got = log.readAt(buf.subarray(0, n), pos);
    const i = buf.subarray(0, got).lastIndexOf(NL);
    if (i >= 0) return pos + i + 1;
  }
  return 0;
}

/** The lines of a plain file's first `end` bytes, the last first, each with where it starts. */
function* linesBackward(log: OpenLog, end: number): Generator<{ line: Buffer; start: number }> {
  // The start of a line whose beginning lies in a chunk not read yet.
  let head = Buffer.alloc(0);
  for (let pos = end; pos > 0;) {
    const n = Math.min(LOG_CHUNK, pos);
    pos -= n;
    const buf = Buffer.alloc(n);
    // Truncated since it was opened: nothing before this is the file's any more.
    if (log.readAt(buf, pos) < n) return;
    const data = head.length ? Buffer.concat([buf, head]) : buf;
    let i = data.length;
    while (i > 0) {
      const j = data.lastIndexOf(NL, i - 1);
      if (j < 0) break;
      if (j + 1 < i) yield { line: data.subarray(j + 1, i), start: pos + j + 1 };
      i = j;
    }
    // A copy: the chunk it came from is let go.
    head = Buffer.from(data.subarray(0, i));
  }
  if (head.length) yield { line: head, start: 0 };
}

async function* plainChunks(log: OpenLog, from: number, to: number): AsyncGenerator<Buffer> {
  for (let pos = from; pos < to;) {
    const buf = Buffer.alloc(Math.min(LOG_CHUNK, to - pos));
    const got = log.readAt(buf, pos);
    if (got === 0) return;
    pos += got;
    yield buf.subarray(0, got);
  }
}

/** Lines (without their newline) of a stream of chunks; a last one without a newline too. */
async function* splitLines(chunks: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  let head: Buffer | undefined;
  for await (const c of chunks) {
    let i = 0;
    for (let j = c.indexOf(NL); j >= 0; j = c.indexOf(NL, i)) {
      const piece = c.subarray(i, j);
      yield head ? Buffer.concat([head, piece]) : piece;
      head = undefined;
      i = j + 1;
    }
    if (i < c.length) head = head ? Buffer.concat([head, c.subarray(i)]) : Buffer.from(c.subarray(i));
  }
  if (head?.length) yield head;
}

/** The lines of a compressed rotated file, from its start, decompressed as they are read. */
async function* gzLines(log: OpenLog): AsyncGenerator<Buffer> {
  // zlib loaded only for a rotated file: not by every command on a CRI runtime.
  const gunzip = process.getBuiltinModule('node:zlib').createGunzip();
  // Read here, not by a file stream: the file is the snapshot's, and stays open after.
  const src = Readable.from(plainChunks(log, 0, log.size()));
  src.on('error', (e) => gunzip.destroy(e));
  src.pipe(gunzip);
  try {
    yield* splitLines(gunzip);
  } catch {
    // Damaged: the kubelet skips what it cannot read.
  } finally {
    src.unpipe(gunzip);
    src.destroy();
    gunzip.destroy();
  }
}

function isWhole(l: CriLogLine): boolean {
  return l.text.endsWith('\n');
}

async function countWhole(log: OpenLog): Promise<number> {
  let n = 0;
  for await (const raw of gzLines(log)) {
    const l = parseCriLine(raw.toString('utf8'));
    if (l && isWhole(l)) n++;
  }
  return n;
}

async function firstTime(log: OpenLog): Promise<bigint | undefined> {
  for await (const raw of gzLines(log)) {
    const l = parseCriLine(raw.toString('utf8'));
    if (l) return timeNs(l.time);
  }
  return undefined;
}

/**
 * Where the lines asked for begin, newest file first: with `tail`, after the (tail+1)th whole line
 * from the end (a line's parts, P, go with the F that ends it, as in the kubelet); with `since`
 * alone, after the newest line older than it. Earlier files are not read at all.
 */
async function segments(files: Source[], tail: number | undefined, since: bigint | undefined): Promise<Segment[]> {
  const whole = (f: Source): Segment => (f.gz ? { log: f.log, gz: true, skipWhole: 0 } : { log: f.log, gz: false, from: 0, to: f.end });
  if (tail === undefined && since === undefined) return files.map(whole);
  if (tail === 0) return [];
  const out: Segment[] = [];
  let need = tail ?? 0;
  for (const f of [...files].reverse()) {
    if (f.gz) {
      if (tail !== undefined) {
        // No reading back through zlib: counted forward, then skipped forward.
        if (need === 0) break;
        const total = await countWhole(f.log);
        out.unshift({ log: f.log, gz: true, skipWhole: Math.max(0, total - need) });
        if (total >= need) break;
        need -= total;
      } else {
        out.unshift(whole(f));
        const first = await firstTime(f.log);
        if (first !== undefined && since !== undefined && first < since) break;
      }
      continue;
    }
    let found = false;
    let from = 0;
    let counted = 0;
    for (const { line, start } of linesBackward(f.log, f.end)) {
      const l = parseCriLine(line.toString('utf8'));
      if (!l) continue;
      const before = tail !== undefined ? isWhole(l) && ++counted > need : since !== undefined && timeNs(l.time) < since;
      if (before) {
        from = start + line.length + 1;
        found = true;
        break;
      }
    }
    out.unshift({ log: f.log, gz: false, from, to: f.end });
    if (found) break;
    need -= counted;
  }
  return out;
}

/** Waits for the writable's room, so a slow reader of a big log holds memory constant. */
function write(to: NodeJS.WritableStream, text: string): Promise<void> {
  if (to.write(text)) return Promise.resolve();
  return new Promise((resolve) => to.once('drain', () => resolve()));
}

/** Lines to their stream, bounded by time, written a chunk at a time (in order across the two streams). */
class LineSink {
  private stream: CriLogLine['stream'] = 'stdout';
  private text = '';

  constructor(
    private readonly o: LogReadOptions,
    private readonly since: bigint | undefined,
    private readonly until: bigint | undefined,
    private readonly out: NodeJS.WritableStream,
    private readonly err: NodeJS.WritableStream,
  ) {}

  async raw(raw: Buffer): Promise<void> {
    const l = parseCriLine(raw.toString('utf8'));
    if (l) await this.line(l);
  }

  async line(l: CriLogLine): Promise<void> {
    const t = this.since !== undefined || this.until !== undefined ? timeNs(l.time) : 0n;
    if (this.since !== undefined && t < this.since) return;
    if (this.until !== undefined && t > this.until) return;
    if (l.stream !== this.stream) await this.flush();
    this.stream = l.stream;
    this.text += this.o.timestamps ? `${l.time} ${l.text}` : l.text;
    if (this.text.length >= LOG_CHUNK) await this.flush();
  }

  async flush(): Promise<void> {
    if (!this.text) return;
    const text = this.text;
    this.text = '';
    await write(this.stream === 'stderr' ? this.err : this.out, text);
  }
}

async function writeSegment(s: Segment, sink: LineSink): Promise<void> {
  if (!s.gz) {
    for await (const raw of splitLines(plainChunks(s.log, s.from, s.to))) await sink.raw(raw);
    return;
  }
  let skip = s.skipWhole;
  for await (const raw of gzLines(s.log)) {
    const l = parseCriLine(raw.toString('utf8'));
    if (!l) continue;
    if (skip > 0) {
      if (isWhole(l)) skip--;
      continue;
    }
    await sink.line(l);
  }
}

function sources(snap: LogSnapshot, currentEnd: number): Source[] {
  const files = snap.rotated.map((h) => ({ log: h.log, gz: h.gz, end: h.gz ? 0 : h.log.size() }));
  return snap.current ? [...files, { log: snap.current, gz: false, end: currentEnd }] : files;
}

/** How the reader runs: its poll while following, and a meter of the bytes it reads (tests). */
export interface LogReadTuning {
  pollMs?: number;
  meter?: ReadMeter;
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
  tuning: LogReadTuning = {},
): Promise<void> {
  const sink = new LineSink(o, boundNs(o.since), boundNs(o.until), out, err);
  const snap = openLogSnapshot(path, undefined, tuning.meter);
  let current = snap.current;
  const currentEnd = current ? completeEnd(current, current.size()) : 0;
  try {
    // A negative tail is kubectl's default, -1: every line.
    const tail = o.tail !== undefined && o.tail >= 0 ? o.tail : undefined;
    for (const s of await segments(sources(snap, currentEnd), tail, boundNs(o.since))) await writeSegment(s, sink);
    await sink.flush();
  } finally {
    for (const h of snap.rotated) h.log.close();
    if (!o.follow) current?.close();
  }
  if (!o.follow) return;
  if (current) current.offset = currentEnd;
  // A line split between two reads: its start, kept for the rest.
  let head: Buffer | undefined;
  const drain = async (log: OpenLog): Promise<number> => {
    let got = 0;
    for (let data = log.read(); data.length; data = log.read()) {
      got += data.length;
      let i = 0;
      for (let j = data.indexOf(NL); j >= 0; j = data.indexOf(NL, i)) {
        const piece = data.subarray(i, j);
        await sink.raw(head ? Buffer.concat([head, piece]) : piece);
        head = undefined;
        i = j + 1;
      }
      if (i < data.length) head = head ? Buffer.concat([head, data.subarray(i)]) : Buffer.from(data.subarray(i));
    }
    return got;
  };
  try {
    for (;;) {
      const alive = await running().catch(() => false);
      await new Promise((r) => setTimeout(r, tuning.pollMs ?? 200));
      let got = 0;
      current ??= OpenLog.open(path, tuning.meter);
      if (current) {
        got += await drain(current);
        if (replaced(path, current)) {
          // Rotated: what the old file got before the rename, then the new file from its start.
          got += await drain(current);
          current.close();
          current = OpenLog.open(path, tuning.meter);
          if (current) got += await drain(current);
        }
      }
      await sink.flush();
      if (!alive && !got) return;
    }
  } finally {
    current?.close();
  }
}
