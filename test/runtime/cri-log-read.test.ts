import { appendFileSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { writeCriLog } from '../../src/runtime/cri/log-read.js';
import { LOG_CHUNK, type LogReadOptions, type ReadMeter } from '../../src/runtime/cri/logs.js';

// `podrun logs` on CRI log files written here: what it shows is checked against the same lines
// filtered in memory, and what it reads by a meter of the bytes it took from the files, so a
// `--tail` or `--since` near the end reads near the end, whatever the log's size.

const root = mkdtempSync(join(tmpdir(), 'podrun-logread-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const T0 = Date.parse('2026-01-01T00:00:00Z');

interface Line {
  ms: number;
  stream: 'stdout' | 'stderr';
  tag: 'F' | 'P';
  text: string;
}

function format(l: Line): string {
  return `${new Date(T0 + l.ms).toISOString().replace('Z', '')}000001Z ${l.stream} ${l.tag} ${l.text}\n`;
}

/** `n` lines from `first` on, one a millisecond; every 7th is split into a P part and its F; every 5th to stderr. */
function lines(first: number, n: number): Line[] {
  const out: Line[] = [];
  for (let i = first; i < first + n; i++) {
    const stream = i % 5 === 0 ? 'stderr' : 'stdout';
    if (i % 7 === 0) out.push({ ms: i, stream, tag: 'P', text: `part-${i}-` });
    out.push({ ms: i, stream, tag: 'F', text: `line-${i}` });
  }
  return out;
}

/** What `logs` should show of `all` (the reference: in memory, forward, as the kubelet counts). */
function expected(all: Line[], o: { tail?: number; sinceMs?: number }): { out: string; err: string } {
  let shown = all;
  if (o.tail !== undefined) {
    let whole = 0;
    let i = all.length;
    while (i > 0) {
      if (all[i - 1]?.tag === 'F' && ++whole > o.tail) break;
      i--;
    }
    shown = o.tail === 0 ? [] : all.slice(i);
  }
  if (o.sinceMs !== undefined) shown = shown.filter((l) => l.ms >= (o.sinceMs ?? 0));
  const text = (s: string): string =>
    shown
      .filter((l) => l.stream === s)
      .map((l) => (l.tag === 'F' ? `${l.text}\n` : l.text))
      .join('');
  return { out: text('stdout'), err: text('stderr') };
}

/** A container's log dir: rotated files (the oldest compressed) and the current one. */
function logDir(parts: { lines: Line[]; gz?: boolean }[], current: Line[]): string {
  const dir = mkdtempSync(join(root, 'c-'));
  const log = join(dir, '0.log');
  parts.forEach((p, i) => {
    const name = `${log}.20260101-0000${String(i).padStart(2, '0')}`;
    const text = p.lines.map(format).join('');
    if (p.gz) writeFileSync(`${name}.gz`, gzipSync(text));
    else writeFileSync(name, text);
  });
  writeFileSync(log, current.map(format).join(''));
  return log;
}

async function read(path: string, o: Partial<LogReadOptions>, meter?: ReadMeter): Promise<{ out: string; err: string }> {
  let out = '';
  let err = '';
  const o1 = new PassThrough().on('data', (b: Buffer) => (out += b.toString()));
  const e1 = new PassThrough().on('data', (b: Buffer) => (err += b.toString()));
  await writeCriLog(path, { follow: false, timestamps: false, ...o }, o1, e1, async () => false, meter ? { meter } : {});
  return { out, err };
}

describe('reading a CRI log from its end', () => {
  // 40,000 lines a file: the current one is about 2.6 MB, 40 chunks.
  const old = lines(0, 40_000);
  const mid = lines(40_000, 40_000);
  const cur = lines(80_000, 40_000);
  const all = [...old, ...mid, ...cur];
  const path = logDir([{ lines: old, gz: true }, { lines: mid }], cur);

  it('--tail shows the last whole lines (P parts with their F) across the rotated files, plain and compressed', async () => {
    for (const tail of [0, 1, 2, 5, 7, 1_000, 39_999, 40_000, 40_001, 79_999, 80_000, 80_001, 119_999, 120_000, 200_000])
      expect(await read(path, { tail }), `tail ${tail}`).toEqual(expected(all, { tail }));
  });

  it('--tail 5 reads a chunk or two of the end of the current file, not the file', async () => {
    const meter = { bytes: 0 };
    expect(await read(path, { tail: 5 }, meter)).toEqual(expected(all, { tail: 5 }));
    // The end found (a chunk), the lines before it read back (a chunk), those shown read again.
    expect(meter.bytes).toBeGreaterThan(0);
    expect(meter.bytes).toBeLessThanOrEqual(3 * LOG_CHUNK);
  });

  it('--since shows the lines from that time on, across files, and reads back only as far as that time', async () => {
    for (const sinceMs of [0, 39_999, 40_000, 40_001, 100_000, 119_999, 120_000]) {
      const since = new Date(T0 + sinceMs).toISOString();
      expect(await read(path, { since }), `since ${since}`).toEqual(expected(all, { sinceMs }));
    }
    const meter = { bytes: 0 };
    await read(path, { since: new Date(T0 + 119_990).toISOString() }, meter);
    expect(meter.bytes).toBeLessThanOrEqual(3 * LOG_CHUNK);
  });

  it('--tail with --since: the tail first, then the time, as the kubelet', async () => {
    expect(await read(path, { tail: 10, since: new Date(T0 + 119_995).toISOString() })).toEqual(expected(all, { tail: 10, sinceMs: 119_995 }));
  });

  it("a full read shows every file in order, and so does --tail -1 (kubectl's default)", async () => {
    expect(await read(path, {})).toEqual(expected(all, {}));
    expect(await read(path, { tail: -1 })).toEqual(expected(all, {}));
  });

  it('a full read goes no further into the files than the reader of its output has taken', async () => {
    const meter = { bytes: 0 };
    let wrote = 0;
    let calls = 0;
    let held: (() => void) | undefined;
    // A reader that takes the first write and then holds the next until the test lets it go.
    const stuck = new Writable({
      highWaterMark: LOG_CHUNK,
      write: (chunk: Buffer, _enc, done) => {
        wrote += chunk.length;
        if (++calls === 1 || !held) done();
        else held = done;
      },
    });
    held = () => undefined;
    const reading = writeCriLog(path, { follow: false, timestamps: false }, stuck, stuck, async () => false, { meter });
    // Held, with a chunk's worth waiting: the reader waits for the output's room (one that does not never waits).
    await vi.waitFor(() => expect([calls >= 2, stuck.listenerCount('drain')]).toEqual([true, 1]));
    expect(meter.bytes).toBeLessThanOrEqual(8 * LOG_CHUNK);
    const release = held;
    held = undefined;
    release();
    await reading;
    expect(wrote).toBe(Buffer.byteLength(expected(all, {}).out + expected(all, {}).err));
  });
});

describe('following a CRI log', () => {
  it('shows the lines the runtime writes on, a line written in two parts once, and reads on across a rotation', async () => {
    const path = logDir([], lines(0, 3));
    let out = '';
    const o1 = new PassThrough().on('data', (b: Buffer) => (out += b.toString()));
    let alive = true;
    const done = writeCriLog(path, { follow: true, timestamps: false, tail: 1 }, o1, new PassThrough().resume(), async () => alive, { pollMs: 5 });
    await vi.waitFor(() => expect(out).toBe('line-2\n'));
    const [a, b] = [format({ ms: 3, stream: 'stdout', tag: 'F', text: 'line-3' }), format({ ms: 4, stream: 'stdout', tag: 'F', text: 'line-4' })];
    appendFileSync(path, a.slice(0, 20));
    appendFileSync(path, a.slice(20));
    await vi.waitFor(() => expect(out).toBe('line-2\nline-3\n'));
    // Rotated: the old file gets its last line after the rename, the new one the next.
    renameSync(path, `${path}.20260101-000000`);
    appendFileSync(`${path}.20260101-000000`, b);
    writeFileSync(path, format({ ms: 5, stream: 'stdout', tag: 'F', text: 'line-5' }));
    await vi.waitFor(() => expect(out).toBe('line-2\nline-3\nline-4\nline-5\n'));
    alive = false;
    await done;
  });
});
