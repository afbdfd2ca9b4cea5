import { defaultContainer } from './logs.js';
import { podArg, podNotFound } from './pod-args.js';
import { EXIT, makeRuntime, type GlobalOptions, type Io } from './context.js';

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
  try {
    return await rt.execAttached(
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
      },
      { stdin, stdout: io.stdout, stderr: io.stderr },
    );
  } finally {
    if (tty) stdin.setRawMode(false);
    if (o.stdin) stdin.pause();
  }
}
