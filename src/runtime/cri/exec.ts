import type { ExecAttachOptions, ExecResult, ExecStreams } from '../runtime-types.js';
import type { ProcView } from '../exec-reaper.js';
import { timerDelay } from '../../base/duration.js';
import type { CriRuntimeService } from './runtime-service.js';
import { CriExecTimeoutError } from './errors.js';
import { criExecId, killCriExec } from './exec-end.js';

// Commands in a CRI runtime's containers: ExecSync for probes and hooks (podrun keeps the timeout
// itself), Exec and the streaming server for `podrun exec`.

/** The kubelet's cap on a probe's or hook's output (10 KiB). */
const MAX_EXEC_OUTPUT = 10 * 1024;

/** How long past the exec's timeout the ExecSync call may take to answer before podrun stops waiting for it. */
export const EXEC_SYNC_MARGIN_MS = 5000;

/**
 * Seconds the runtime's own timeout for an ExecSync runs past podrun's. containerd kills the exec's
 * process at its timeout, and a child the command left is then an orphan of the container with
 * nothing to tell it by: podrun's kill must come first, while the exec's process is there to be found.
 * With the same deadline on both sides the runtime won under load, and a probe's `yes` outlived it.
 */
export const RUNTIME_EXEC_SLACK_S = 2;

/** The timeout to hand the runtime for an exec podrun times out itself at `timeoutMs`. */
export function runtimeExecTimeoutS(timeoutMs: number): number {
  return Math.max(1, Math.ceil(timeoutMs / 1000)) + RUNTIME_EXEC_SLACK_S;
}

/**
 * A probe's or hook's command through ExecSync. The runtime would end it at the timeout (whole
 * seconds, at least 1, as the kubelet rounds; podrun gives it RUNTIME_EXEC_SLACK_S more), but containerd 1.6 kills the exec's process alone
 * and then waits for its output pipes to close: a child that the command left holds them, and the
 * call would answer only at its deadline (measured: 118 s for a 1 s timeout). So podrun keeps the
 * timeout itself, as on Docker: at the timeout, or when the caller gives up (the pod is going), it
 * kills the exec's processes from the runtime's /proc (exec-end.ts) and answers 'timeout' without
 * waiting for the call, whose own deadline is the timeout plus a short margin. Its timer starts
 * before the runtime's and ends seconds before it, so the exec's process is still there to be
 * found (by its command, or as the only exec process since: the command may have replaced itself
 * with another program).
 */
export async function criExec(
  client: CriRuntimeService,
  containerId: string,
  command: string[],
  timeoutMs: number,
  view: ProcView,
  signal?: AbortSignal,
): Promise<ExecResult> {
  // Given up already: no exec is started that nobody would wait for (nor could find to kill yet).
  if (signal?.aborted) return 'timeout';
  const since = view.now();
  const call = client.execSync(containerId, command, runtimeExecTimeoutS(timeoutMs), EXEC_SYNC_MARGIN_MS);
  call.catch(() => undefined);
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const ended = new Promise<'timeout'>((resolve) => {
    onAbort = () => resolve('timeout');
    signal?.addEventListener('abort', onAbort, { once: true });
    timer = setTimeout(onAbort, timerDelay(timeoutMs));
  });
  try {
    const r = await Promise.race([call, ended]).catch((err: unknown) => {
      if (err instanceof CriExecTimeoutError) return 'timeout' as const;
      throw err;
    });
    if (r !== 'timeout') {
      const both = Buffer.concat([Buffer.from(r.stdout), Buffer.from(r.stderr)]);
      return { exitCode: r.exitCode, output: both.subarray(0, MAX_EXEC_OUTPUT).toString('utf8') };
    }
  } finally {
    clearTimeout(timer);
    if (onAbort) signal?.removeEventListener('abort', onAbort);
  }
  // Killed first, so that nothing it started is left running once the caller hears 'timeout'.
  await killCriExec(client, containerId, command, since, view, true).catch(() => undefined);
  return 'timeout';
}

/**
 * `podrun exec`: the runtime's `Exec` gives the URL of the session on its streaming server
 * (exec-stream.ts), attached to the caller's streams. With a TTY the runtime joins stderr to
 * stdout (it refuses both), as kubectl asks.
 */
export async function criExecAttached(
  client: CriRuntimeService,
  containerId: string,
  command: string[],
  o: ExecAttachOptions,
  streams: ExecStreams,
  since: number,
): Promise<number> {
  const url = await client.exec(containerId, command, { tty: o.tty, stdin: o.stdin, stdout: true, stderr: !o.tty });
  o.onCreated?.({ containerId, execId: criExecId(command), since });
  // Input without a terminal may end, and only SPDY can say so to the command on every runtime
  // (podrun speaks it in the clear only: a TLS streaming server gets the WebSocket). Each loaded
  // here, not with the engine: the WebSocket client (undici) was a third of a CRI apply's start.
  if (o.stdin && !o.tty && url.startsWith('http:')) return (await import('./exec-spdy.js')).spdyExec(url, streams);
  return (await import('./exec-stream.js')).streamExec(url, o, streams);
}
