import { describe, expect, it } from 'vitest';
import { pullLogger } from '../../src/agent/pull-log.js';
import { pullReporter } from '../../src/cli/pull-progress.js';
import { PullTally } from '../../src/runtime/docker/images.js';
import type { PullProgress } from '../../src/runtime/runtime-types.js';

// The engine reports each layer on its own; users see one figure per image.

const layerEvents = [
  { status: 'Pulling from team/app', id: '1' },
  { status: 'Pulling fs layer', id: 'aaa' },
  { status: 'Already exists', id: 'bbb' },
  { status: 'Pulling fs layer', id: 'ccc' },
  { status: 'Downloading', id: 'aaa', progressDetail: { current: 1_000_000, total: 4_000_000 } },
  { status: 'Downloading', id: 'ccc', progressDetail: { current: 500_000, total: 2_000_000 } },
  { status: 'Download complete', id: 'aaa' },
  { status: 'Extracting', id: 'aaa', progressDetail: { current: 4_000_000, total: 4_000_000 } },
  { status: 'Pull complete', id: 'aaa' },
  { status: 'Digest: sha256:0123' },
  { status: 'Status: Downloaded newer image for x' },
];

describe('pull progress', () => {
  it("sums layers and bytes over the engine's per-layer messages, ignoring image-level lines", () => {
    const t = new PullTally('x');
    for (const e of layerEvents.slice(0, 6)) t.add(e);
    expect(t.progress).toEqual({ image: 'x', layers: 3, layersDone: 1, bytes: 1_500_000, totalBytes: 6_000_000 });
    for (const e of layerEvents.slice(6)) t.add(e);
    expect(t.progress).toMatchObject({ layers: 3, layersDone: 2, bytes: 4_500_000 });
  });

  const p = (over: Partial<PullProgress>): PullProgress => ({ image: 'reg/app:1', layers: 3, layersDone: 1, bytes: 1_500_000, totalBytes: 6_000_000, ...over });

  it('on a terminal redraws one line at most 5 times a second, and closes it with the result', () => {
    let out = '';
    let now = 0;
    let asked = 0;
    const r = pullReporter(
      (s) => (out += s),
      () => ++asked > 0,
      () => now,
    );
    // Whether stderr is a terminal is asked at the first pull, once: a start that pulls nothing does not load Node's tty module.
    expect(asked).toBe(0);
    r(p({ layers: 0, layersDone: 0, bytes: 0, totalBytes: 0 }));
    now = 250;
    r(p({}));
    now = 300;
    r(p({ layersDone: 2 })); // within 200 ms of the last draw: skipped
    r(p({ layersDone: 3, end: { ok: true, seconds: 2.5 } }));
    expect(out).toBe('\r\x1b[KPulling reg/app:1: 1/3 layers, 1.5 MB/6.0 MB\r\x1b[KPulled image reg/app:1 in 2.5s (3 layers, 6.0 MB)\n');
    expect(asked).toBe(1);
  });

  it('off a terminal writes plain lines: the start, a figure every 10 s, the end', () => {
    let out = '';
    let now = 0;
    const r = pullReporter(
      (s) => (out += s),
      () => false,
      () => now,
    );
    r(p({ layers: 0 }));
    now = 5_000;
    r(p({}));
    now = 10_001;
    r(p({}));
    r(p({ end: { ok: false, seconds: 11, error: 'unauthorized' } }));
    expect(out).toBe('Pulling image reg/app:1\nPulling image reg/app:1: 1/3 layers, 1.5 MB/6.0 MB\nFailed to pull image reg/app:1 after 11.0s: unauthorized\n');
  });

  it('the agent logs records with fields: start, every 10 s, end', () => {
    const lines: [string, Record<string, unknown> | undefined][] = [];
    const log = {
      debug: () => undefined,
      info: (m: string, f?: Record<string, unknown>) => lines.push([m, f]),
      warn: (m: string, f?: Record<string, unknown>) => lines.push([m, f]),
      error: () => undefined,
    };
    let now = 0;
    const l = pullLogger(log, () => now);
    l(p({}));
    now = 3_000;
    l(p({}));
    now = 10_000;
    l(p({ layersDone: 2 }));
    l(p({ end: { ok: true, seconds: 12.3456 } }));
    expect(lines.map(([m]) => m)).toEqual([
      'pulling image reg/app:1',
      'pulling image reg/app:1: 2/3 layers, 1500000/6000000 bytes',
      'pulled image reg/app:1 in 12.3s',
    ]);
    expect(lines[2]?.[1]).toMatchObject({ image: 'reg/app:1', layers: 3, layersDone: 1, totalBytes: 6_000_000, seconds: 12.346 });
  });
});
