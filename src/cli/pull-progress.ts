import type { PullProgress } from '../runtime/runtime-types.js';
import { formatBytes } from '../base/format-bytes.js';

function figures(p: PullProgress): string {
  const bytes = p.totalBytes ? `, ${formatBytes(p.bytes)}/${formatBytes(p.totalBytes)}` : '';
  return `${p.layersDone}/${p.layers} layers${bytes}`;
}

function ended(p: PullProgress): string {
  const e = p.end;
  if (!e) return '';
  if (!e.ok) return `Failed to pull image ${p.image} after ${e.seconds.toFixed(1)}s: ${e.error ?? 'unknown error'}`;
  return `Pulled image ${p.image} in ${e.seconds.toFixed(1)}s (${p.layers} layer${p.layers === 1 ? '' : 's'}${p.totalBytes ? `, ${formatBytes(p.totalBytes)}` : ''})`;
}

/**
 * How a command shows pulls. On a terminal: one line per image at a time, redrawn in place (at
 * most 5 times a second), closed by its result. Off a terminal (a log, CI, a pipe): plain lines,
 * the start, a figure every 10 s, the end. `isTTY` is asked at the first pull, not before: an
 * apply that pulls nothing does not load Node's terminal module to learn it.
 */
export function pullReporter(write: (s: string) => void, isTTY: () => boolean, nowMs: () => number = Date.now): (p: PullProgress) => void {
  const last = new Map<string, number>();
  let drawn = false;
  let terminal: boolean | undefined;
  return (p) => {
    const tty = (terminal ??= isTTY());
    const now = nowMs();
    if (p.end) {
      last.delete(p.image);
      write(`${tty && drawn ? '\r\x1b[K' : ''}${ended(p)}\n`);
      drawn = false;
      return;
    }
    const prev = last.get(p.image);
    if (prev === undefined) {
      last.set(p.image, now);
      if (!tty) write(`Pulling image ${p.image}\n`);
      return;
    }
    if (now - prev < (tty ? 200 : 10_000)) return;
    last.set(p.image, now);
    if (tty) {
      write(`\r\x1b[KPulling ${p.image}: ${figures(p)}`.slice(0, 160));
      drawn = true;
    } else {
      write(`Pulling image ${p.image}: ${figures(p)}\n`);
    }
  };
}
