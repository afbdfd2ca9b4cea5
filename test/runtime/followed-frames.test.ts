import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { FollowedFrames } from '../../src/runtime/docker/log-frames.js';

function frame(stream: 1 | 2, text: string): Buffer {
  const body = Buffer.from(text);
  const head = Buffer.alloc(8);
  head[0] = stream;
  head.writeUInt32BE(body.length, 4);
  return Buffer.concat([head, body]);
}

function run(frames: Buffer[], keepTimestamps = false, chunk = 5): { out: string; err: string } {
  const out = new PassThrough();
  const err = new PassThrough();
  let o = '';
  let e = '';
  out.on('data', (d: Buffer) => (o += d.toString()));
  err.on('data', (d: Buffer) => (e += d.toString()));
  const w = new FollowedFrames(out, err, keepTimestamps);
  const all = Buffer.concat(frames);
  // Frames arrive cut anywhere, as a socket delivers them.
  for (let i = 0; i < all.length; i += chunk) w.write(all.subarray(i, i + chunk));
  return { out: o, err: e };
}

describe('following a log across rotation', () => {
  it('drops what the engine reads again after a rotation, and strips the timestamps it asked for', () => {
    const r = run([
      frame(1, '2026-12-01T03:00:00.1Z one\n'),
      frame(2, '2026-12-01T03:00:00.2Z two\n'),
      frame(1, '2026-12-01T03:00:00.30000001Z three\n'),
      frame(1, '2026-12-01T03:00:00.2Z two\n'), // an older stretch read again
      frame(1, '2026-12-01T03:00:00.30000001Z three\n'), // the same line again
      frame(1, '2026-12-01T03:00:01Z four\n'),
    ]);
    expect(r.out).toBe('one\nthree\nfour\n');
    expect(r.err).toBe('two\n');
  });

  it('keeps the parts of one long line, which share a time, and the timestamps when asked', () => {
    const r = run([frame(1, '2026-12-01T03:00:00.5Z aaaa'), frame(1, '2026-12-01T03:00:00.5Z bbbb\n')], true, 3);
    expect(r.out).toBe('2026-12-01T03:00:00.5Z aaaa2026-12-01T03:00:00.5Z bbbb\n');
  });
});
