import { Option, type Command } from 'commander';
import { versionLine } from '../status/version.js';
import { EXIT, type Io } from './context.js';
import { duration, durationOption } from './arg-parsers.js';
import { globals } from './globals.js';

// The verbs that show and wait, and change nothing. Each loads its module when it runs (see main.ts).

/** `podrun get pods` and `podrun get node`. */
export function addGet(program: Command, io: Io, setCode: (code: number) => void): void {
  const get = program.command('get').description('show pods');
  get
    .command('pods')
    .alias('pod')
    .alias('po')
    .description('list the pods podrun runs on this engine (all of them, or those named)')
    .argument('[name...]', 'pod names')
    .option('-o, --output <format>', 'wide, json, yaml, name or jsonpath=TEMPLATE')
    .option('-n, --namespace <ns>', 'namespace', 'default')
    .option('-A, --all-namespaces', 'pods of every namespace', false)
    .option('-l, --selector <selector>', 'label selector: app=web, tier!=db, env in (prod,qa), app, !app')
    .option('--show-labels', 'a LABELS column', false)
    .option('--no-headers', 'no header line')
    .option(
      '-w, --watch',
      'after the list, a line for each pod that changes (not for its AGE alone) and, for a pod that goes, its last state; polled every second, until interrupted',
      false,
    )
    .addHelpText(
      'after',
      '\nAs kubectl get pods, but for the pods of this state directory on this engine; -o json prints a List. --watch polls (podrun has no apiserver to watch).',
    )
    .action(
      async (
        names: string[],
        o: { output?: string; namespace: string; allNamespaces: boolean; selector?: string; showLabels: boolean; headers: boolean; watch: boolean },
        cmd: Command,
      ) => {
        setCode(await (await import('./get.js')).getPodsCommand(names, { ...o, noHeaders: !o.headers }, globals(cmd), io));
      },
    );

  get
    .command('node')
    .alias('nodes')
    .alias('no')
    .description('show this machine as a Kubernetes Node: addresses, capacity, engine, and the Ready and pressure conditions')
    .option('-o, --output <format>', 'wide, json or yaml')
    .action(async (o: { output?: string }, cmd: Command) => {
      setCode(await (await import('./node.js')).getNodeCommand(o, globals(cmd), io));
    });
}

/** `podrun top pods`. */
export function addTop(program: Command, io: Io, setCode: (code: number) => void): void {
  program
    .command('top')
    .description('show resource usage (CPU and memory working set), as kubectl top')
    .command('pods')
    .alias('pod')
    .alias('po')
    .description('CPU and memory of each pod (or, with --containers, each container)')
    .option('-n, --namespace <ns>', 'namespace', 'default')
    .option('-A, --all-namespaces', 'pods of every namespace', false)
    .option('--containers', 'one line per container', false)
    .action(async (o: { namespace: string; allNamespaces: boolean; containers: boolean }, cmd: Command) => {
      setCode(await (await import('./top.js')).topPodsCommand(o, globals(cmd), io));
    });
}

/** `podrun describe pod`. */
export function addDescribe(program: Command, io: Io, setCode: (code: number) => void): void {
  const describe = program.command('describe').description('show pods in detail, with their events');
  describe
    .command('pod')
    .alias('pods')
    .alias('po')
    .argument('[name...]', 'pod names, or namespace/name (none: every pod of the namespace)')
    .option('-n, --namespace <ns>', 'namespace', 'default')
    .option('-A, --all-namespaces', 'pods of every namespace', false)
    .option('-l, --selector <selector>', 'label selector')
    .action(async (names: string[], o: { namespace: string; allNamespaces: boolean; selector?: string }, cmd: Command) => {
      setCode(await (await import('./describe.js')).describePodCommand(names, o, globals(cmd), io));
    });
}

/** `podrun logs`. */
export function addLogs(program: Command, io: Io, setCode: (code: number) => void): void {
  program
    .command('logs')
    .description("print a container's logs")
    .argument('[pod]', 'pod name, pod/NAME or namespace/name')
    .option('-c, --container <name>', 'container (default: the kubectl.kubernetes.io/default-container annotation, else the first)')
    .option('-n, --namespace <ns>', 'namespace', 'default')
    .option('-l, --selector <selector>', 'the logs of every pod these labels select')
    .option('--all-containers', 'every container of the pod, init containers first', false)
    .option('-f, --follow', 'stream new output', false)
    .option(
      '-p, --previous',
      "the container's last terminated instance: the one before the current, or the one that just died while the next waits out its back-off",
      false,
    )
    .option('--tail <lines>', 'only the last lines', (v) => Number(v))
    .addOption(new Option('--since <duration>', 'only lines newer than this (e.g. 5s, 2m, 1h)').argParser(duration))
    .option('--since-time <time>', 'only lines after this RFC3339 time')
    .option('--timestamps', 'prefix each line with its time', false)
    .option('--prefix', 'prefix each line with [pod/NAME/CONTAINER]', false)
    .addHelpText('after', "\nAs kubectl logs; a container's stderr goes to stderr (kubectl merges it into stdout).")
    .action(
      async (
        pod: string | undefined,
        o: {
          container?: string;
          namespace: string;
          selector?: string;
          allContainers: boolean;
          follow: boolean;
          previous: boolean;
          tail?: number;
          since?: number;
          sinceTime?: string;
          timestamps: boolean;
          prefix: boolean;
        },
        cmd: Command,
      ) => {
        setCode(await (await import('./logs.js')).logsCommand(pod, o, globals(cmd), io));
      },
    );
}

/** `podrun explain`. */
export function addExplain(program: Command, io: Io, setCode: (code: number) => void): void {
  program
    .command('explain')
    .description('what a Pod field means, and whether podrun honours, ignores or refuses it')
    .argument('<field>', 'e.g. pod.spec.containers.livenessProbe')
    .option('--recursive', 'every field below, as a tree', false)
    .action(async (field: string, o: { recursive: boolean }) => {
      setCode((await import('./explain.js')).explainCommand(field, o, io));
    });
}

/** `podrun completion`. */
export function addCompletion(program: Command, io: Io, setCode: (code: number) => void): void {
  program
    .command('completion')
    .description('print a shell completion script: source <(podrun completion bash), or podrun completion fish | source')
    .argument('<shell>', 'bash, zsh or fish')
    .action(async (shell: string) => {
      setCode((await import('./completion.js')).completionCommand(shell, io));
    });
}

/** `podrun wait`. */
export function addWait(program: Command, io: Io, setCode: (code: number) => void): void {
  program
    .command('wait')
    .description('wait until pods meet a condition')
    .argument('[pod...]', 'pod/NAME or NAME')
    .requiredOption('--for <condition>', 'condition=Ready, condition=Ready=false, delete, or jsonpath={.status.phase}=Running')
    .option('-n, --namespace <ns>', 'namespace', 'default')
    .option('-l, --selector <selector>', 'the pods these labels select')
    .option('--all', 'every pod of the namespace', false)
    .addOption(durationOption('--timeout <duration>', 'give up after this long', 30_000))
    .addHelpText('after', '\nAs kubectl wait, for pods. Prints "pod/NAME condition met" for each; exits 1 on a timeout.')
    .action(async (names: string[], o: { for: string; namespace: string; selector?: string; all: boolean; timeout: number }, cmd: Command) => {
      setCode(await (await import('./wait.js')).waitCommand(names, o, globals(cmd), io));
    });
}

/** `podrun version`: podrun's, and the engine's unless --client. */
export function addVersion(program: Command, io: Io, setCode: (code: number) => void): void {
  program
    .command('version')
    .description("print podrun's version and the engine's")
    .option('--client', "podrun's version only, without asking the engine", false)
    .action(async (o: { client: boolean }, cmd: Command) => {
      io.out(versionLine());
      if (!o.client) {
        const g = globals(cmd);
        try {
          if (g.engine?.containerRuntimeEndpoint) {
            const { openEngine } = await import('../runtime/open-engine.js');
            const facts = await (await openEngine({ stateDir: g.stateDir, pauseImage: g.pauseImage }, g.engine)).engineFacts();
            io.out(`engine ${facts.version} (CRI runtime.v1 at ${g.engine.containerRuntimeEndpoint})`);
            setCode(EXIT.ok);
            return;
          }
          // (version-start.ts answers the plain `podrun version` with this same line, without the program.)
          io.out(await (await import('./engine-version.js')).dockerEngineLine(g.dockerHost));
        } catch (err) {
          io.out(`engine unreachable (${(err as Error).message})`);
        }
      }
      setCode(EXIT.ok);
    });
}
