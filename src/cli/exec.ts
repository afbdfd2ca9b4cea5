import { spawn } from 'node:child_process';
import type { Socket } from 'node:net';
import type { Writable } from 'node:stream';
import type { ExecRef } from '../runtime/runtime-types.js';
import { defaultContainer } from './logs.js';
import { podArg, podNotFound } from './pod-args.js';
import { EXIT, makeRuntime, processIo, type GlobalOptions, type Io } from './context.js';

export interface ExecOptions {
  container?: string;
  namespace: string;
  stdin: boolean;
  tty: boolean;
}

/**
 * `podrun exec [-i] [-t] POD [-c C] -- CMD...`: the engine's exec in the pod's container; the
 * process exits with the command's exit code, as kubectl exec does.
 */
export async function execCommand(podName: string, command: string[], o: ExecOptions, g: GlobalOptions, io: Io): Promise<number> {
  if (!command.length) {
    io.err('podrun: give the command after --, e.g. podrun exec web -- sh -c "echo hi"');
    return EXIT.usage;
  }
  const rt = await makeRuntime(g, io);
  if (!rt.capabilities.streaming) {
    io.err(`podrun: the engine at ${rt.endpoint} cannot attach a command to this terminal (no streaming)`);
    return EXIT.failed;
  }
  const { namespace: ns, name } = podArg(podName, o.namespace);
  const observed = await rt.listPods();
  const pod = observed.find((p) => p.namespace === ns && p.name === name);
  if (!pod) {
    podNotFound(io, name, ns, observed);
    return EXIT.failed;
  }
  const def = defaultContainer(pod);
  const container = o.container ?? def?.name;
  if (!o.container && def && def.all.length > 1) io.err(`Defaulted container "${def.name}" out of: ${def.all.join(', ')}`);
  const target = pod.containers.find((c) => c.name === container && c.state === 'running');
  if (!target) {
    io.err(`error: unable to upgrade connection: container ${container ?? '?'} not found or not running in pod ${ns}/${name}`);
    return EXIT.failed;
  }
  const stdin = process.stdin;
  const tty = o.tty && stdin.isTTY === true;
  if (o.tty && !tty) io.err('Unable to use a TTY - input is not a terminal or the right kind of file');
  if (tty) stdin.setRawMode(true);
  let guard: Writable | undefined;
  try {
    const code = await rt.execAttached(
      target.id,
      command,
      {
        tty,
        stdin: o.stdin,
        size: () => (process.stdout.isTTY ? { rows: process.stdout.rows, columns: process.stdout.columns } : undefined),
        onResize: (fn) => {
          process.stdout.on('resize', fn);
          return () => process.stdout.removeListener('resize', fn);
        },
        // Only a podrun of its own process can leave a guard behind (not one run inside a test), and
        // only where the engine's execs can be killed: a guard that cannot end one is no guard.
        ...(io === processIo && rt.capabilities.execKill ? { onCreated: (ref: ExecRef) => (guard = startGuard(ref, guardEngineArgs(g, rt.endpoint))) } : {}),
      },
      { stdin, stdout: io.stdout, stderr: io.stderr },
    );
    // The session ended as sessions end (the command's status came): nothing for the guard to do.
    guard?.write(GUARD_DONE);
    return code;
  } finally {
    if (tty) stdin.setRawMode(false);
    if (o.stdin) stdin.pause();
  }
}

/**
 * The engine keeps an exec running when its client goes away, and a client killed with SIGKILL
 * runs no more code: so each `podrun exec` has a guard, a podrun process of its own session (a
 * Ctrl-C or a hang-up of the terminal does not reach it) that holds the other end of a pipe.
 * When this process ends, however it ends, the pipe closes and the guard ends the exec if it
 * still runs, as the kubelet's runtime does when kubectl exec's stream goes.
 */
function startGuard(ref: ExecRef, engineArgs: string[]): Writable | undefined {
  const script = process.argv[1];
  if (!script) return undefined;
  const guard = spawn(process.execPath, [...process.execArgv, script, ...engineArgs, 'exec-guard', JSON.stringify(ref)], {
    detached: true,
    stdio: ['pipe', 'ignore', 'ignore'],
  });
  guard.on('error', () => undefined);
  guard.unref();
  // Neither the guard nor its pipe keeps this process alive.
  (guard.stdin as Socket | null)?.unref();
  guard.stdin?.on('error', () => undefined);
  return guard.stdin ?? undefined;
}

/** Tells the guard the session ended by itself: an exec that is not abandoned is not the guard's. */
const GUARD_DONE = 'done\n';

/** The guard's engine: the one this exec ran on. */
function guardEngineArgs(g: GlobalOptions, endpoint: string): string[] {
  const cri = g.engine?.containerRuntimeEndpoint;
  return cri ? ['--container-runtime-endpoint', cri] : ['--docker-host', endpoint];
}

/** `podrun exec-guard REF` (not for users): waits for its stdin to close, then ends the exec if it still runs. */
export async function guardCommand(ref: string, g: GlobalOptions, io: Io): Promise<number> {
  let parsed: Partial<ExecRef> | undefined;
  try {
    parsed = JSON.parse(ref) as Partial<ExecRef>;
  } catch {
    parsed = undefined;
  }
  if (typeof parsed?.containerId !== 'string' || typeof parsed.execId !== 'string' || typeof parsed.since !== 'number') {
    io.err('podrun exec-guard: started by podrun exec, with the exec it guards');
    return EXIT.usage;
  }
  for (const sig of ['SIGINT', 'SIGHUP', 'SIGTERM'] as const) process.on(sig, () => undefined);
  let said = '';
  const abandoned = await new Promise<boolean>((resolve) => {
    process.stdin.on('data', (c: Buffer) => {
      said = (said + c.toString()).slice(-GUARD_DONE.length);
      if (said === GUARD_DONE) {
        process.stdin.destroy();
        resolve(false);
      }
    });
    process.stdin
      .on('end', () => resolve(true))
      .on('close', () => resolve(true))
      .on('error', () => resolve(true));
    process.stdin.resume();
  });
  if (!abandoned) return EXIT.ok;
  const rt = await makeRuntime(g, io);
  await rt.endAbandonedExec({ containerId: parsed.containerId, execId: parsed.execId, since: parsed.since }).catch(() => undefined);
  return EXIT.ok;
}
