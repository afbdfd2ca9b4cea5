import type { Command } from 'commander';
import { EXIT, type Io } from './context.js';
import { durationOption, nonNegativeInt } from './arg-parsers.js';
import { globals } from './globals.js';

// The verbs that act on manifests and pods. Each loads its module when it runs (see main.ts).

/** `podrun apply`. */
export function addApply(program: Command, io: Io, setCode: (code: number) => void): void {
  program
    .command('apply')
    .description('validate manifests (files, directories, http(s) URLs), then make the engine run exactly those pods')
    .argument('[path...]', 'manifest files, directories or URLs; - for standard input')
    .option('-f, --filename <path...>', 'the same, as kubectl spells it (apply -f DIR, apply -f -)')
    .option('--dry-run', 'print the plan and change nothing', false)
    .option('--prune', 'delete pods that an earlier apply of the same paths created and that are gone now', false)
    .option('--no-wait', 'return once the changes are made, without waiting for the pods to run')
    .addOption(durationOption('--timeout <duration>', 'how long to wait for the pods to run', 120_000))
    .addHelpText(
      'after',
      '\nAs kubectl apply, for Pods; unlike kubectl it waits until the pods run (--no-wait does not), and --prune needs no selector: it deletes what an earlier apply of the same paths made.\nA pod is ready once every container has run, passing its readiness probe, for 1 s with no restart (or the pod has succeeded). A pod that cannot become ready (CrashLoopBackOff, ErrImagePull, ImagePullBackOff, CreateContainerConfigError, RunContainerError, a failing init container) ends the wait at once: exit 1, with its last exit code and the last lines of its log.',
    )
    .action(async (args: string[], o: { filename?: string[]; dryRun: boolean; prune: boolean; wait: boolean; timeout: number }, cmd: Command) => {
      const paths = [...args, ...(o.filename ?? [])];
      if (!paths.length) {
        io.err('podrun: give the manifests: podrun apply -f PATH (a file, a directory, a URL, or - for stdin)');
        setCode(EXIT.usage);
        return;
      }
      const g = globals(cmd);
      // The engine's loading and list first, on the wire before the apply module is evaluated: that
      // evaluation (the plan, the driver, the applied sets) then runs beside the list's round trip.
      const engine = (await import('./engine-prefetch.js')).prefetchEngine(g, io);
      await engine.sent;
      setCode(await (await import('./apply.js')).applyCommand(paths, { dryRun: o.dryRun, prune: o.prune, wait: o.wait, timeoutMs: o.timeout }, g, io, engine));
    });
}

/** `podrun exec`, and the guard it starts beside itself. */
export function addExec(program: Command, io: Io, setCode: (code: number) => void): void {
  program
    .command('exec')
    .description('run a command in a container of a pod')
    .argument('<pod>', 'pod name, pod/NAME or namespace/name')
    .argument('[command...]', 'the command, after --')
    .option('-c, --container <name>', 'container (default: the kubectl.kubernetes.io/default-container annotation, else the first)')
    .option('-n, --namespace <ns>', 'namespace', 'default')
    .option('-i, --stdin', 'pass stdin to the command', false)
    .option('-t, --tty', 'stdin is a TTY', false)
    .addHelpText('after', "\nAs kubectl exec: podrun exec -it web -- sh. Exits with the command's exit code.")
    .action(async (pod: string, command: string[], o: { container?: string; namespace: string; stdin: boolean; tty: boolean }, cmd: Command) => {
      setCode(await (await import('./exec.js')).execCommand(pod, command, o, globals(cmd), io));
    });

  // Started by `podrun exec` beside itself: ends the exec if `podrun exec` dies before it does.
  program
    .command('exec-guard', { hidden: true })
    .argument('<ref>')
    .action(async (ref: string, _o: unknown, cmd: Command) => {
      setCode(await (await import('./exec.js')).guardCommand(ref, globals(cmd), io));
    });
}

/** `podrun delete`. */
export function addDelete(program: Command, io: Io, setCode: (code: number) => void): void {
  program
    .command('delete')
    .description('delete pods gracefully (stop signal, grace period, then SIGKILL)')
    .argument('[pod...]', 'pod names: NAME, pod NAME..., pod/NAME, or namespace/name')
    .option('-f, --filename <path...>', 'delete the pods these manifests declare')
    .option('-n, --namespace <ns>', 'namespace of the named pods', 'default')
    .option('-l, --selector <selector>', 'delete the pods these labels select')
    .option('--all', 'delete every pod of the namespace (with -A, of every namespace)', false)
    .option('-A, --all-namespaces', 'with --all or -l: pods of every namespace', false)
    .option('--grace-period <seconds>', 'override terminationGracePeriodSeconds', nonNegativeInt)
    .option('--now', 'signal the pods to stop at once: a grace period of 1 s', false)
    .option('--force', 'kill the pods at once: a grace period of 0', false)
    .option('--ignore-not-found', 'a pod that does not exist is not an error', false)
    .addHelpText(
      'after',
      '\nA pod that a watched directory or URL declares comes back (the agent makes it anew, as the kubelet a static pod): delete warns so, and says where to remove it for good. A pod an apply made stays deleted.',
    )
    .action(
      async (
        names: string[],
        o: {
          filename?: string[];
          namespace: string;
          selector?: string;
          all: boolean;
          allNamespaces: boolean;
          gracePeriod?: number;
          now: boolean;
          force: boolean;
          ignoreNotFound: boolean;
        },
        cmd: Command,
      ) => {
        // kubectl's rule: --now is a grace period, so the two cannot both be given.
        if (o.now && o.gracePeriod !== undefined) {
          io.err('podrun: --now and --grace-period cannot both be given');
          setCode(EXIT.usage);
          return;
        }
        setCode(await (await import('./delete.js')).deleteCommand(names, o, globals(cmd), io));
      },
    );
}

/** `podrun gc`. */
export function addGc(program: Command, io: Io, setCode: (code: number) => void): void {
  program
    .command('gc')
    .description('remove dead containers over the bound (and, with an agent, pods no longer wanted) and unused images over the disk threshold')
    .option('--dry-run', 'show what would go', false)
    .option('--no-images', 'leave images alone')
    .action(async (o: { dryRun: boolean; images: boolean }, cmd: Command) => {
      setCode(await (await import('./gc.js')).gcCommand(o, globals(cmd), io));
    });
}

/** `podrun validate`. */
export function addValidate(program: Command, io: Io, setCode: (code: number) => void): void {
  program
    .command('validate')
    .description('check manifests without touching the engine')
    .argument('[path...]', 'manifest files, directories or URLs; - for standard input')
    .option('-f, --filename <path...>', 'the same, as apply -f takes them')
    .action(async (args: string[], o: { filename?: string[] }, cmd: Command) => {
      const paths = [...args, ...(o.filename ?? [])];
      if (!paths.length) {
        io.err("podrun: give the manifests: podrun validate -f PATH (a file, a directory, a URL, or - for stdin)\nSee 'podrun validate --help'.");
        setCode(EXIT.usage);
        return;
      }
      setCode(await (await import('./validate.js')).validateCommand(paths, io, globals(cmd).policy));
    });
}
