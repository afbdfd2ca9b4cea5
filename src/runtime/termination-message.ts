import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { PassThrough } from 'node:stream';
import type { Container } from '../manifest/types.js';
import { terminationLogPath } from './volumes.js';

// A finished container's termination message, by the kubelet's rules, whichever engine ran it:
// the termination-log file is podrun's own (a host file bind-mounted at terminationMessagePath),
// and only the log's tail is the engine's to read.

/** The kubelet's MaxContainerTerminationMessageLength (pkg/kubelet/container). */
const MAX_TERMINATION_MESSAGE = 4096;

/**
 * The file at its terminationMessagePath, its last 4 KiB; with FallbackToLogsOnError, an empty
 * file and a failure, the last 80 lines of its log (`logTail` writes them), up to 2 KiB.
 */
export async function terminationMessageFrom(
  stateDir: string,
  c: { name: string; restartCount: number; exitCode?: number; spec?: Container },
  podUid: string,
  logTail: (lines: number, out: NodeJS.WritableStream) => Promise<void>,
): Promise<string | undefined> {
  let text = '';
  try {
    const fd = openSync(terminationLogPath(stateDir, podUid, c.name, c.restartCount), 'r');
    try {
      // The end of the file, as the kubelet's tail.ReadAtMost: a crash report's last lines are
      // what tells why it ended.
      const size = fstatSync(fd).size;
      const want = Math.min(size, MAX_TERMINATION_MESSAGE);
      const buf = Buffer.alloc(want);
      text = buf.subarray(0, readSync(fd, buf, 0, want, size - want)).toString('utf8');
    } finally {
      closeSync(fd);
    }
  } catch {
    // No file: made by an older podrun, or collected.
  }
  if (text || c.spec?.terminationMessagePolicy !== 'FallbackToLogsOnError' || !c.exitCode) return text || undefined;
  const logs = new PassThrough();
  let tail = '';
  logs.on('data', (d: Buffer) => (tail += d.toString('utf8')));
  await logTail(80, logs).catch(() => undefined);
  const bytes = Buffer.from(tail);
  return bytes.length > 2048 ? bytes.subarray(bytes.length - 2048).toString('utf8') : tail || undefined;
}
