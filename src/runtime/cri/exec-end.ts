import { readFileSync } from 'node:fs';
import { inContainer, killExec, procView, seesContainer, type ProcView } from '../exec-reaper.js';
import type { ExecEnd, ExecRef } from '../runtime-types.js';
import type { CriRuntimeService } from './runtime-service.js';

// Ending a `podrun exec` whose client died, on a CRI runtime. Measured on containerd 1.6: when the
// session's client goes away (killed, its WebSocket dropped) the runtime keeps the command
// running for as long as the container lives, and the CRI has no call to end an exec. So, as on
// Docker, podrun signals the processes itself from the runtime's /proc (a CRI runtime is reached
// on a unix socket: it runs on this host). The CRI gives an exec no id either, so the exec is
// found by what it is: a process of that container (exec-reaper.ts's checks), started after the
// exec was asked for, whose parent is outside the container (the runtime's shim: the container's
// own processes have parents inside it), running exactly the command. Only a single such process
// is ended: two alike (two sessions of the same command) are left alone rather than guessed at.

/** How often, and how far apart, an in-flight exec told from no other is looked for again (1 s in all). */
const AMBIGUOUS_RETRIES = 10;
const AMBIGUOUS_RETRY_MS = 100;

/** The command as an ExecRef carries it on CRI (`execId`: the CRI has no exec ids). */
export function criExecId(command: readonly string[]): string {
  return JSON.stringify(command);
}

function commandOf(execId: string): string[] | undefined {
  try {
    const c = JSON.parse(execId) as unknown;
    return Array.isArray(c) && c.length > 0 && c.every((a) => typeof a === 'string') ? c : undefined;
  } catch {
    return undefined;
  }
}

/** A process's argv from /proc (NUL-separated, one trailing NUL). */
export function readArgv(pid: number, root = '/proc'): string[] | undefined {
  try {
    const raw = readFileSync(`${root}/${pid}/cmdline`, 'utf8');
    return raw.endsWith('\0') ? raw.slice(0, -1).split('\0') : raw.split('\0');
  } catch {
    return undefined;
  }
}

/** The container's first process, from the runtime's verbose status (containerd's `info.pid`). */
async function initPidOf(client: CriRuntimeService, containerId: string): Promise<number | undefined> {
  const r = await client.containerStatusVerbose(containerId);
  try {
    const pid = (JSON.parse(r.info.info ?? '{}') as { pid?: unknown }).pid;
    return typeof pid === 'number' && Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The exec's process: the one process of the container started since `since`, parented outside
 * it, running `command`. With `inFlight` (the caller knows its exec still runs: an ExecSync not yet
 * answered), a command that replaced itself with another program (`sh -c 'a & b'` runs `b` in the
 * shell's own process; `exec b`) is found too, when it is the only exec process since `since`.
 */
export function findExecLeader(
  view: ProcView,
  where: { id: string; initPid: number },
  command: readonly string[],
  since: number,
  argv: (pid: number) => string[] | undefined = (p) => readArgv(p),
  inFlight = false,
): number | 'none' | 'ambiguous' {
  const want = JSON.stringify(command);
  const execs: number[] = [];
  for (const pid of view.pids(where)) {
    if (pid === where.initPid) continue;
    const s = view.stat(pid);
    if (!s || s.state === 'Z' || s.state === 'X' || s.start < since) continue;
    if (!inContainer(view, where, pid) || inContainer(view, where, s.ppid)) continue;
    execs.push(pid);
  }
  const found = execs.filter((pid) => JSON.stringify(argv(pid)) === want);
  if (!found.length && inFlight && execs.length === 1) return execs[0] as number;
  if (!found.length && inFlight && execs.length > 1) return 'ambiguous';
  return found.length === 1 ? (found[0] as number) : found.length ? 'ambiguous' : 'none';
}

/** Ends an abandoned exec on a CRI runtime (see above); 'unreachable' when it cannot be told apart or /proc is not the runtime's. */
export async function endCriExec(client: CriRuntimeService, ref: ExecRef, view: ProcView = procView()): Promise<ExecEnd> {
  const command = commandOf(ref.execId);
  if (!command || !ref.since) return 'unreachable';
  return killCriExec(client, ref.containerId, command, ref.since, view);
}

/**
 * Kills the exec of `command` made since `since` (ticks, read before it was asked for) and what it
 * started: its session (an orphan that its parent left, reparented to the container's first
 * process, keeps the exec's session) and their descendants (exec-reaper.ts). Needs the exec's own
 * process alive, to be told from the container's: one that exited by itself leaves its children.
 */
export async function killCriExec(
  client: CriRuntimeService,
  containerId: string,
  command: readonly string[],
  since: number,
  view: ProcView,
  inFlight = false,
): Promise<ExecEnd> {
  const initPid = await initPidOf(client, containerId).catch(() => undefined);
  if (!initPid) return 'finished';
  const where = { id: containerId, initPid };
  if (!seesContainer(view, where)) return 'unreachable';
  let leader = findExecLeader(view, where, command, since, undefined, inFlight);
  // Another exec of the container running now (a probe, a `ps`) makes two: most are short, so
  // the look is made again for a while rather than guessed at; one that runs on is left alone.
  for (let i = 0; inFlight && leader === 'ambiguous' && i < AMBIGUOUS_RETRIES; i++) {
    await new Promise((r) => setTimeout(r, AMBIGUOUS_RETRY_MS));
    leader = findExecLeader(view, where, command, since, undefined, inFlight);
  }
  if (leader === 'none') return 'finished';
  if (leader === 'ambiguous') return 'unreachable';
  const killed = await killExec(view, where, leader, since);
  return killed ? { killed } : 'finished';
}
