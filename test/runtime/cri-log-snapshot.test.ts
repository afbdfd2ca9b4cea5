import { appendFileSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync, gunzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { openLogSnapshot, type SnapshotStep } from '../../src/runtime/cri/logs.js';

// `podrun logs` reading while the container log manager rotates (log-rotation.ts), on plain files:
// a rotation's steps (remove the oldest, compress the newest rotated one through `.gz.tmp`, rename
// the current one, the runtime reopening it, the container writing on) run at each point of the
// read, all at once or one per point, once or twice. Whatever the interleaving, the text read must
// be what the files held at one instant: every line once, in order, none of the middle missing.
const root = mkdtempSync(join(tmpdir(), 'podrun-logsnap-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const PER_FILE = 10;
const MAX_FILES = 5;

class RotatingLog {
  readonly dir = mkdtempSync(join(root, 'c-'));
  readonly log = join(this.dir, '0.log');
  private next = 1;
  private stamp = 0;

  constructor() {
    // Three compressed, the newest rotated one plain, the current: maxFiles 5, 50 lines.
    for (let i = 0; i < 3; i++) writeFileSync(this.rotated() + '.gz', gzipSync(this.lines()));
    writeFileSync(this.rotated(), this.lines());
    writeFileSync(this.log, this.lines());
  }

  private rotated(): string {
    this.stamp++;
    return `${this.log}.20260101-0000${String(this.stamp).padStart(2, '0')}`;
  }

  private lines(): string {
    let s = '';
    for (let i = 0; i < PER_FILE; i++) s += `2026-01-01T00:00:00.000000000Z stdout F line-${this.next++}\n`;
    return s;
  }

  /** One rotation as podrun's rotateLog does it, step by step (the file names decided when each step runs). */
  rotationSteps(): (() => void)[] {
    const rotatedNow = (): string[] =>
      readdirSync(this.dir)
        .filter((n) => n !== '0.log' && !n.endsWith('.tmp'))
        .sort()
        .map((n) => join(this.dir, n));
    let victim: string | undefined;
    let newest: string | undefined;
    let stampName = '';
    return [
      () => {
        const all = rotatedNow();
        victim = all.length > MAX_FILES - 2 ? all[0] : undefined;
        if (victim) rmSync(victim);
      },
      () => {
        newest = rotatedNow().find((f) => !f.endsWith('.gz'));
        if (newest) writeFileSync(`${newest}.gz.tmp`, gzipSync(readFileSync(newest)));
      },
      () => newest && renameSync(`${newest}.gz.tmp`, `${newest}.gz`),
      () => newest && rmSync(newest),
      () => {
        stampName = this.rotated();
        renameSync(this.log, stampName);
      },
      () => writeFileSync(this.log, ''),
      () => appendFileSync(this.log, this.lines()),
    ];
  }

  /** The numbers of the lines the files hold now. */
  held(): number[] {
    const names = readdirSync(this.dir).filter((n) => !n.endsWith('.tmp') && !readdirSync(this.dir).includes(`${n}.gz`));
    const text = names
      .filter((n) => n !== '0.log')
      .sort()
      .map((n) => {
        const data = readFileSync(join(this.dir, n));
        return (n.endsWith('.gz') ? gunzipSync(data) : data).toString();
      })
      .join('');
    // Between the rename and the reopen there is no current file.
    const current = readdirSync(this.dir).includes('0.log') ? readFileSync(this.log, 'utf8') : '';
    return numbers(text + current);
  }
}

function numbers(text: string): number[] {
  return [...text.matchAll(/ line-(\d+)$/gm)].map((m) => Number(m[1]));
}

describe('CRI log snapshot across rotations', () => {
  // `pre`: that many of the first rotation's steps done before the read begins (a rotation under way).
  const cases: { rotations: number; at: number; spread: boolean; pre: number }[] = [];
  for (const rotations of [1, 2]) for (let at = 0; at < 12; at++) for (const spread of [false, true]) cases.push({ rotations, at, spread, pre: 0 });
  for (const rotations of [1, 2]) for (let pre = 1; pre < 7; pre++) cases.push({ rotations, at: 0, spread: true, pre });

  it.each(cases)('$rotations rotation(s) from read step $at (spread: $spread, $pre steps before) read as one instant', ({ rotations, at, spread, pre }) => {
    const log = new RotatingLog();
    const pending: (() => void)[] = [];
    const states: number[][] = [log.held()];
    let calls = 0;
    let rotationsLeft = rotations;
    const run = (s: () => void): void => {
      s();
      states.push(log.held());
    };
    const step = (_at: SnapshotStep): void => {
      if (calls++ < at) return;
      // A second rotation's steps are decided once the first's are done (it lists the directory then).
      if (!pending.length && rotationsLeft > 0) {
        rotationsLeft--;
        pending.push(...log.rotationSteps());
      }
      do {
        const s = pending.shift();
        if (s) run(s);
        if (!pending.length && rotationsLeft > 0 && !spread) {
          rotationsLeft--;
          pending.push(...log.rotationSteps());
        }
      } while (!spread && pending.length);
    };
    if (pre) {
      rotationsLeft--;
      pending.push(...log.rotationSteps());
      for (const s of pending.splice(0, pre)) run(s);
    }
    const { rotated, current } = openLogSnapshot(log.log, step);
    // What the held files hold, read whole here (the reader itself reads them in chunks).
    let text = '';
    for (const h of [...rotated, ...(current ? [{ log: current, gz: false }] : [])]) {
      const data = readFileSync(h.log.fd);
      text += (h.gz ? gunzipSync(data) : data).toString();
      h.log.close();
    }
    const got = numbers(text);
    // The text is what the files held after one of the steps (whatever of the current file was written by the read's end).
    expect(states.map((s) => JSON.stringify(s))).toContain(JSON.stringify(got));
    expect(got.length).toBeGreaterThanOrEqual((MAX_FILES - 1) * PER_FILE);
  });
});
