import { killExec, procView, seesContainer, type ProcView } from '../exec-reaper.js';
import type { ExecEnd, ExecRef } from '../runtime-types.js';
import type { EngineCalls } from './engine.js';

/** Whether the engine runs on this machine (a unix socket), so its /proc may be podrun's. */
export function localEngine(e: Pick<EngineCalls, 'endpoint'>): boolean {
  return e.endpoint.startsWith('unix://') || e.endpoint.startsWith('/');
}

let machineProc: ProcView | undefined;

/** How long each engine call of an end may take. */
const END_CALL_MS = 10_000;

/** The clock an exec is stamped with before it is made: nothing it starts can be older. */
export function execClock(e: EngineCalls, view: ProcView = (machineProc ??= procView())): number {
  return localEngine(e) ? view.now() : 0;
}

/**
 * Kills the processes of an exec that is still running (its deadline passed, or its client went
 * away): its process, then those it started, each first checked to be the container's (see
 * exec-reaper.ts). With `evenIfExited`, children its process left behind go too (they are what
 * keeps a timed-out probe's output open); without, an exec whose process has exited is let be
 * (a `podrun exec` that started something in the background on purpose).
 *
 * Docker's API cannot kill an exec, so this needs the engine's /proc: with a remote engine
 * (tcp://) or a /proc that does not show the container (podrun in a pid namespace of its own),
 * nothing is killed and 'unreachable' is the answer.
 */
export async function endExec(
  e: EngineCalls,
  ref: ExecRef,
  evenIfExited: boolean,
  view: ProcView = (machineProc ??= procView()),
  pause: (ms: number) => Promise<unknown> = (ms) => new Promise((r) => setTimeout(r, ms)),
): Promise<ExecEnd> {
  if (!localEngine(e) || !ref.since) return 'unreachable';
  // A probe waits for its kill: an engine that does not answer may hold it this long, not the
  // request timeout's two minutes.
  const bound = Math.min(e.options.requestTimeoutMs ?? END_CALL_MS, END_CALL_MS);
  const inspect = async (): Promise<{ Running?: boolean; Pid?: number; ExitCode?: number | null }> =>
    (await e.call('exec inspect', () => e.docker.getExec(ref.execId).inspect(), bound)) as { Running?: boolean; Pid?: number; ExitCode?: number | null };
  let info = await inspect();
  // Docker answers an exec's start before its process runs: on a loaded machine a 1 s deadline
  // can pass before it has one (no pid, no exit code yet). It is waited for, within the bound, so
  // a command that starts late is killed too rather than left running for good.
  for (const until = performance.now() + bound; !info.Pid && info.ExitCode === null && performance.now() < until;) {
    await pause(20);
    info = await inspect();
  }
  if (!info.Pid || (!info.Running && !evenIfExited)) return 'finished';
  const c = await e.call('inspect container', () => e.docker.getContainer(ref.containerId).inspect(), bound);
  if (!c.State?.Pid) return 'finished';
  const where = { id: c.Id, initPid: c.State.Pid };
  if (!seesContainer(view, where)) return 'unreachable';
  const killed = await killExec(view, where, info.Pid, ref.since);
  return killed ? { killed } : 'finished';
}
