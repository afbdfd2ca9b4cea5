import type Docker from 'dockerode';
import { terminationMessageFrom } from '../termination-message.js';
import { PassThrough } from 'node:stream';
import { timerDelay } from '../../base/duration.js';
import { FollowedFrames, Paced } from './log-frames.js';
import type { ExecAttachOptions, ExecResult, ExecStreams, FinishedInstance, LogRequest } from '../runtime-types.js';
import { DockerRequestError, type EngineCalls } from './engine.js';
import { endExec, execClock } from './exec-end.js';
import { attachedExitCode } from './exec-exit.js';

// Commands and logs (the streams role): probes' and hooks' exec, `podrun exec`, `podrun logs`.

/** The kubelet keeps this much of an exec probe's output (pkg/probe/exec: maxReadLength, 10 KiB). */
export const MAX_EXEC_OUTPUT = 10 * 1024;

/** The first `limit` bytes written to it; the rest is counted and dropped, so any amount costs the same memory. */
export class CappedBytes {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  /** Every byte offered, kept or not. */
  seen = 0;

  constructor(private readonly limit: number) {}

  add(chunk: Buffer): void {
    this.seen += chunk.length;
    if (this.kept >= this.limit) return;
    const part = chunk.length > this.limit - this.kept ? chunk.subarray(0, this.limit - this.kept) : chunk;
    // A copy: a slice would hold the whole chunk it came from.
    this.chunks.push(Buffer.from(part));
    this.kept += part.length;
  }

  text(): string {
    return Buffer.concat(this.chunks, this.kept).toString('utf8');
  }
}

/**
 * Runs a command in a running container (probes, hooks); gives up after `timeoutMs` or when
 * `signal` aborts, and then kills what the command started (as containerd kills an exec at its
 * deadline), so a probe that hangs costs one process at a time, not one per period. Output is
 * kept up to the kubelet's 10 KiB, in bytes; the rest is read and dropped, as the kubelet's
 * limited writer does, so the command is never held up by a full pipe.
 */
export async function execIn(e: EngineCalls, containerId: string, command: string[], timeoutMs: number, signal?: AbortSignal): Promise<ExecResult> {
  const container = e.docker.getContainer(containerId);
  const since = execClock(e);
  const exec = await e
    .call('exec create', () => container.exec({ Cmd: command, AttachStdout: true, AttachStderr: true }))
    .catch((err: unknown) => {
      // Docker's 409 to an exec: the container is not running (stopped, paused, restarting).
      if (err instanceof DockerRequestError && err.status === 409) return { notRun: 'container-not-running' as const, detail: err.detail };
      throw err;
    });
  if ('notRun' in exec) return exec;
  const stream = await e.call('exec start', () => exec.start({ hijack: true, stdin: false }));
  const output = new CappedBytes(MAX_EXEC_OUTPUT);
  const sink = new PassThrough();
  sink.on('data', (c: Buffer) => output.add(c));
  // Non-TTY exec output is multiplexed (stdout/stderr frames).
  e.docker.modem.demuxStream(stream, sink, sink);
  const deadline = performance.now() + timeoutMs;
  const ended = new Promise<void>((resolve) => {
    stream.on('end', resolve);
    stream.on('close', resolve);
    stream.on('error', () => resolve());
  });
  let finished = await settlesWithin(ended, timeoutMs, signal);
  // Output closed is not the end: a command may close it and run on (`exec >&-; sleep 1000`).
  // As containerd waits for the exit itself, the exit code is waited for up to the deadline.
  for (let pause = 20; finished; pause = Math.min(pause * 2, 250)) {
    const info = await e.call('exec inspect', () => exec.inspect());
    if (!info.Running) return notRunIfStopped(e, containerId, info.ExitCode ?? -1, output.text());
    const left = deadline - performance.now();
    finished = left > 0 && (await settlesWithin(new Promise<void>((r) => setTimeout(r, Math.min(pause, left))), left, signal));
  }
  // Whatever still runs or holds the output open is this exec's: its process, or children it left.
  await endExec(e, { containerId, execId: exec.id, since }, true).catch(() => undefined);
  stream.destroy();
  return 'timeout';
}

/**
 * An exec's end, or that it never ran: the container stopped between the exec's create and its
 * start, which Docker answers with 126 (the exit code of a command that cannot run) and its
 * reason in the output. The container's state, not the text, tells: a command that exits 126
 * in a running container stays a failure.
 */
async function notRunIfStopped(e: EngineCalls, containerId: string, exitCode: number, output: string): Promise<ExecResult> {
  if (exitCode !== 126) return { exitCode, output };
  const state = await e.call('inspect container', () => e.docker.getContainer(containerId).inspect()).catch(() => undefined);
  return state?.State.Running === false ? { notRun: 'container-not-running', detail: output.trim() } : { exitCode, output };
}

/** Whether `done` settles within `ms` (false: the time ran out, or `signal` aborted first). */
function settlesWithin(done: Promise<void>, ms: number, signal?: AbortSignal): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    if (signal?.aborted) return resolve(false);
    const finish = (ok: boolean): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', abort);
      resolve(ok);
    };
    const abort = (): void => finish(false);
    const timer = setTimeout(() => finish(false), timerDelay(ms));
    signal?.addEventListener('abort', abort, { once: true });
    // Settling is rejecting too; with no rejection handler it would be an unhandledRejection.
    done.then(
      () => finish(true),
      () => finish(true),
    );
  });
}

/**
 * `podrun exec`: a command in a running container, attached to the caller's streams, with a
 * TTY (resized with the terminal) when asked. Resolves with the command's exit code.
 */
export async function execAttachedIn(e: EngineCalls, containerId: string, command: string[], o: ExecAttachOptions, streams: ExecStreams): Promise<number> {
  const container = e.docker.getContainer(containerId);
  const since = execClock(e);
  const exec = await e.call('exec create', () => container.exec({ Cmd: command, AttachStdin: o.stdin, AttachStdout: true, AttachStderr: true, Tty: o.tty }));
  o.onCreated?.({ containerId, execId: exec.id, since });
  const sinceSec = Math.floor(Date.now() / 1000) - 1;
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
  return attachedExitCode(e, exec, containerId, sinceSec);
}

/**
 * Writes a container's log to `out` and `err` (split as the container wrote them); with
 * `follow`, until the container stops or the stream ends.
 */
export async function writeLogsOf(e: EngineCalls, id: string, o: LogRequest, out: NodeJS.WritableStream, err: NodeJS.WritableStream): Promise<void> {
  const c = e.docker.getContainer(id);
  const opts = {
    stdout: true,
    stderr: true,
    timestamps: o.timestamps,
    ...(o.tail !== undefined ? { tail: o.tail } : {}),
    ...(o.since !== undefined ? { since: o.since } : {}),
    ...(o.until !== undefined ? { until: o.until } : {}),
  };
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
      {
        path: `/containers/${id}/logs?`,
        method: 'GET',
        options: query,
        isStream: true,
        statusCodes: { 200: true, 404: 'no such container', 500: 'server error' },
      } as Parameters<Docker['modem']['dial']>[0],
      (err, result) => (err ? reject(err) : resolve(result as NodeJS.ReadableStream)),
    );
  });
}

/** What a finished container left as its termination message (termination-message.ts), its log's tail read here. */
export function terminationMessageOf(e: EngineCalls, c: FinishedInstance, podUid: string): Promise<string | undefined> {
  return terminationMessageFrom(e.options.stateDir, c, podUid, (tail, out) => writeLogsOf(e, c.id, { follow: false, timestamps: false, tail }, out, out));
}
