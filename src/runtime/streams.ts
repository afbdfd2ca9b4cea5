import type Docker from 'dockerode';
import { closeSync, openSync, readSync } from 'node:fs';
import type { Container } from '../manifest/types.js';
import { terminationLogPath } from './volumes.js';
import { PassThrough } from 'node:stream';
import { timerDelay } from '../base/duration.js';
import { FollowedFrames, Paced } from './log-frames.js';
import type { EngineCalls } from './runtime-types.js';

// Commands and logs (the streams role): probes' and hooks' exec, `podrun exec`, `podrun logs`.

/** Runs a command in a running container (probes, hooks); gives up after `timeoutMs`. */
export async function execIn(e: EngineCalls, containerId: string, command: string[], timeoutMs: number, signal?: AbortSignal): Promise<{ exitCode: number; output: string } | 'timeout'> {
  const container = e.docker.getContainer(containerId);
  const exec = await e.call('exec create', () => container.exec({ Cmd: command, AttachStdout: true, AttachStderr: true }));
  const stream = await e.call('exec start', () => exec.start({ hijack: true, stdin: false }));
  let output = '';
  const sink = new PassThrough();
  sink.on('data', (c: Buffer) => {
    if (output.length < 4096) output += c.toString('utf8');
  });
  // Non-TTY exec output is multiplexed (stdout/stderr frames).
  e.docker.modem.demuxStream(stream, sink, sink);
  const finished = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), timerDelay(timeoutMs));
    const done = (): void => {
      clearTimeout(timer);
      resolve(true);
    };
    stream.on('end', done);
    stream.on('close', done);
    stream.on('error', done);
    const abort = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    if (signal?.aborted) abort();
    else signal?.addEventListener('abort', abort, { once: true });
  });
  if (!finished) {
    stream.destroy();
    return 'timeout';
  }
  const info = await e.call('exec inspect', () => exec.inspect());
  return { exitCode: info.ExitCode ?? -1, output };
}

/**
 * `podrun exec`: a command in a running container, attached to the caller's streams, with a
 * TTY (resized with the terminal) when asked. Resolves with the command's exit code.
 */
export async function execAttachedIn(
  e: EngineCalls,
  containerId: string,
  command: string[],
  o: { tty: boolean; stdin: boolean; size?: () => { rows: number; columns: number } | undefined; onResize?: (fn: () => void) => () => void },
  streams: { stdin: NodeJS.ReadableStream; stdout: NodeJS.WritableStream; stderr: NodeJS.WritableStream },
): Promise<number> {
  const container = e.docker.getContainer(containerId);
  const exec = await e.call('exec create', () => container.exec({ Cmd: command, AttachStdin: o.stdin, AttachStdout: true, AttachStderr: true, Tty: o.tty }));
  const stream = await e.call('exec start', () => exec.start({ hijack: true, stdin: o.stdin, Tty: o.tty }));
  const resize = (): void => {
    const size = o.size?.();
    if (size) void exec.resize({ h: size.rows, w: size.columns }).catch(() => undefined);
  };
  const stopResizing = o.tty ? o.onResize?.(resize) : undefined;
  if (o.tty) {
    resize();
    stream.pipe(streams.stdout, { end: false });
  } else {
    e.docker.modem.demuxStream(stream, streams.stdout, streams.stderr);
  }
  if (o.stdin) {
    streams.stdin.pipe(stream);
    // End of input closes the command's stdin, as kubectl exec -i does.
    streams.stdin.on('end', () => (stream as unknown as { end?: () => void }).end?.());
  }
  await new Promise<void>((resolve) => {
    stream.on('end', resolve);
    stream.on('close', resolve);
    stream.on('error', () => resolve());
  });
  stopResizing?.();
  if (o.stdin) streams.stdin.unpipe(stream);
  const info = await e.call('exec inspect', () => exec.inspect());
  return info.ExitCode ?? 1;
}

/**
 * Writes a container's log to `out` and `err` (split as the container wrote them); with
 * `follow`, until the container stops or the stream ends.
 */
/**
 * Bounds of a log read, as the engine takes them: seconds since the epoch, whole or `S.NANOS` (the
 * runs of a container the engine restarted in place are told apart by their start, to the ns).
 */
export interface LogWindow {
  since?: number | string;
  until?: string;
}

export async function writeLogsOf(e: EngineCalls, id: string, o: { follow: boolean; timestamps: boolean; tail?: number } & LogWindow, out: NodeJS.WritableStream, err: NodeJS.WritableStream): Promise<void> {
  const c = e.docker.getContainer(id);
  const opts = { stdout: true, stderr: true, timestamps: o.timestamps, ...(o.tail !== undefined ? { tail: o.tail } : {}), ...(o.since !== undefined ? { since: o.since } : {}), ...(o.until !== undefined ? { until: o.until } : {}) };
  const tty = (await e.call('inspect container', () => c.inspect())).Config.Tty;
  // Non-TTY: timestamps always, so a stretch the engine reads twice when a file rotates under a
  // follower (json-file re-reads part of the rotated file) is dropped rather than printed again.
  // Streamed, never buffered, and at the reader's pace: a log of any size costs constant memory.
  const query = { ...opts, ...(tty ? {} : { timestamps: true }), follow: o.follow };
  const stream = await e.call(o.follow ? 'follow logs' : 'read logs', () => logStream(e, id, query));
  const ended = new Promise<void>((resolve) => {
    stream.on('end', resolve);
    stream.on('close', resolve);
    stream.on('error', () => resolve());
  });
  stream.pipe(tty ? new Paced(out) : new FollowedFrames(out, err, o.timestamps));
  await ended;
}

/** GET /containers/{id}/logs as a stream, followed or not (dockerode buffers a log that is not followed). */
function logStream(e: EngineCalls, id: string, query: Record<string, unknown>): Promise<NodeJS.ReadableStream> {
  return new Promise((resolve, reject) => {
    e.docker.modem.dial(
      { path: `/containers/${id}/logs?`, method: 'GET', options: query, isStream: true, statusCodes: { 200: true, 404: 'no such container', 500: 'server error' } } as Parameters<Docker['modem']['dial']>[0],
      (err, result) => (err ? reject(err) : resolve(result as NodeJS.ReadableStream)),
    );
  });
}

/**
 * What a finished container left as its termination message (the kubelet's rules): the file at
 * its terminationMessagePath, up to 4 KiB; with FallbackToLogsOnError, an empty file and a
 * failure, the last 80 lines of its log, up to 2 KiB.
 */
export async function terminationMessageOf(e: EngineCalls, c: { id: string; name: string; restartCount: number; exitCode?: number; spec?: Container }, podUid: string): Promise<string | undefined> {
  let text = '';
  try {
    const fd = openSync(terminationLogPath(e.options.stateDir, podUid, c.name, c.restartCount), 'r');
    try {
      const buf = Buffer.alloc(4096);
      text = buf.subarray(0, readSync(fd, buf, 0, 4096, 0)).toString('utf8');
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
  await writeLogsOf(e, c.id, { follow: false, timestamps: false, tail: 80 }, logs, logs).catch(() => undefined);
  const bytes = Buffer.from(tail);
  return bytes.length > 2048 ? bytes.subarray(bytes.length - 2048).toString('utf8') : tail || undefined;
}
