import { dirname, resolve } from 'node:path';
import { Command, CommanderError, Option } from 'commander';
import { DEFAULTS, EXIT, type Io } from './context.js';
import { addImageCommands } from './image-commands.js';
import { bool, durationOption, ip, logFiles, logSize, podMaxPids, positiveInt } from './arg-parsers.js';
import { globals } from './globals.js';
import { addApply, addDelete, addExec, addGc, addValidate } from './pod-commands.js';
import { addRun } from './run-command.js';
import { addCompletion, addDescribe, addExplain, addGet, addLogs, addTop, addVersion, addWait } from './view-commands.js';

// The program: podrun's own options, its verbs in the order help lists them, --config, and the
// hint a mistyped word gets. Registering a verb loads none of its modules (see main.ts).

/**
 * Every option of podrun itself and of `podrun run` can also come from the environment, as
 * PODRUN_<FLAG> (flags > environment > --config file > defaults), as a unit file's Environment=
 * lines set them. Commander binds an option's variable when the option is added, hence here.
 */
class PodrunCommand extends Command {
  override createCommand(name?: string): PodrunCommand {
    return new PodrunCommand(name);
  }

  override addOption(option: Option): this {
    const own = this.name() === 'podrun' || this.name() === 'run';
    if (own && !option.envVar && option.long && option.long !== '--print-config') option.env(`PODRUN_${option.long.slice(2).toUpperCase().replace(/-/g, '_')}`);
    return super.addOption(option);
  }
}

type AddVerb = (program: Command, io: Io, setCode: (code: number) => void) => void;

const addImages: AddVerb = (program, io, setCode) => addImageCommands(program, io, setCode, globals);

/** Each verb's registration, in the order help lists them; a verb's word is the one it answers to. */
const VERBS: readonly (readonly [AddVerb, readonly string[]])[] = [
  [addApply, ['apply']],
  [addRun, ['run']],
  [addGet, ['get']],
  [addTop, ['top']],
  [addDescribe, ['describe']],
  [addLogs, ['logs']],
  [addExplain, ['explain']],
  [addCompletion, ['completion']],
  [addWait, ['wait']],
  [addExec, ['exec', 'exec-guard']],
  [addDelete, ['delete']],
  [addGc, ['gc']],
  [addValidate, ['validate']],
  [addImages, ['images', 'pull']],
  [addVersion, ['version']],
];

/** The words of the verbs, for tests that hold this table to what the registrations add. */
export const VERB_WORDS: readonly (readonly string[])[] = VERBS.map(([, words]) => words);

/** podrun's own options whose next word is their value, for normalizeArgv and verbOf. */
export function globalValueOptions(program: Command): Set<string> {
  return new Set(program.options.filter((o) => o.required || o.optional).flatMap((o) => [o.long, o.short].filter((f): f is string => f !== undefined)));
}

/**
 * The verb the words run, when they plainly run one: the first word after podrun's own options
 * (and their values). Undefined when a help flag comes first (`podrun --help get` is podrun's
 * help, which lists every verb), or when no verb is named.
 */
export function verbOf(argv: readonly string[], valueOptions: ReadonlySet<string>): string | undefined {
  for (let i = 2; i < argv.length; i++) {
    const word = argv[i]!;
    if (word === '--' || word === '-h' || word === '--help') return undefined;
    if (!word.startsWith('-')) return word;
    if (valueOptions.has(word)) i++;
  }
  return undefined;
}

/**
 * podrun's program. With `argv`, only the verb it runs is registered when it plainly runs one of
 * podrun's (building commander's tree of every verb's options is a measurable part of each start,
 * and a command's parse and help read only its own); otherwise every verb, so that podrun's help,
 * a mistyped verb's suggestion and completion see them all.
 */
export function buildProgram(io: Io, setCode: (code: number) => void, argv?: readonly string[]): Command {
  const program = new PodrunCommand('podrun')
    .description('Run Kubernetes Pod manifests on one Docker engine, with no apiserver.')
    .addOption(new Option('--config <file>', 'a PodrunConfiguration file (schemas/config.schema.json); flags and PODRUN_* variables override it'))
    .addOption(new Option('--docker-host <url>', 'Docker engine endpoint (unix:///path or tcp://host:port)').env('DOCKER_HOST'))
    .addOption(
      new Option(
        '--container-runtime-endpoint <url>',
        "a CRI runtime's socket (unix:///run/containerd/containerd.sock, unix:///run/crio/crio.sock), as the kubelet's: podrun then runs pods through the CRI instead of the Docker API",
      ),
    )
    .addOption(new Option('--image-service-endpoint <url>', "the CRI image service's socket, when not the runtime's, as the kubelet's"))
    .addOption(new Option('--pod-logs-dir <dir>', "where a CRI runtime writes containers' logs (default /var/log/pods), as the kubelet's podLogsDir"))
    .addOption(new Option('--state-dir <dir>', 'where podrun keeps emptyDir volumes and its state').default(DEFAULTS.stateDir))
    .addOption(new Option('--pause-image <image>', "image of the sandbox container that holds each pod's namespaces").default(DEFAULTS.pauseImage))
    .addOption(new Option('--network <name>', 'Docker network for pods without hostNetwork').default(DEFAULTS.network))
    .option('--node-name <name>', 'node name for spec.nodeName (default: the hostname)')
    .addOption(
      new Option(
        '--node-ip <ip>',
        "the node's IP: status.hostIP, and the pod IP of hostNetwork pods that probes and hooks use (default: the first non-loopback IPv4)",
      ).argParser(ip),
    )
    .addOption(
      durationOption(
        '--runtime-request-timeout <duration>',
        "how long one engine call may take before podrun gives up on it (a stop: its grace period plus this), as the kubelet's",
        120_000,
      ),
    )
    .option('--allow-privileged <bool>', 'allow privileged containers (true|false)', bool, true)
    .option('--allow-host-namespaces <bool>', 'allow hostNetwork, hostPID and hostIPC (true|false)', bool, true)
    .option(
      '--allowed-host-paths <paths>',
      'comma-separated paths hostPath volumes must be at or below, judged where they really lead when mounted (default: any)',
    )
    .option(
      '--allowed-unsafe-sysctls <patterns>',
      "comma-separated sysctls (or prefixes ending in *) pods may set beyond the kubelet's safe set, as the kubelet's flag",
    )
    .addOption(
      new Option('--container-log-max-size <size>', "a container's log file is rotated at this size, as the kubelet's").argParser(logSize).default('10Mi'),
    )
    .addOption(
      new Option('--container-log-max-files <n>', "log files kept per container, the current one included, as the kubelet's").argParser(logFiles).default(5),
    )
    .addOption(
      new Option(
        '--image-credentials <file>',
        'a Docker config.json pulls read (auths, credHelpers, credsStore; keys may name a path: registry:5000/team); default <state-dir>/config.json, then ~/.docker/config.json',
      ),
    )
    .addOption(new Option('--serialize-image-pulls <bool>', "pull one image at a time, as the kubelet's default").argParser(bool).default(true))
    .addOption(new Option('--max-parallel-image-pulls <n>', 'most pulls at once with --serialize-image-pulls false (default: no limit)').argParser(positiveInt))
    .addOption(
      new Option(
        '--pod-max-pids <n>',
        "most processes each of a pod's containers may have (-1: no limit), as the kubelet's per pod (on CRI, a pod cgroup); on Docker it holds per container",
      )
        .argParser(podMaxPids)
        .default(-1),
    )
    .addOption(
      new Option('--resolv-conf <file>', "the resolver configuration pods inherit (their dnsConfig is added to it), as the kubelet's").default(
        '/etc/resolv.conf',
      ),
    )
    .addHelpText(
      'after',
      `
For kubectl users: apply, get, describe, logs, exec, wait, delete, explain and top work as
kubectl's do, for Pods only and for the pods of this state directory on this engine (there is no
apiserver). Differences: apply waits until the pods run; get -w polls; -o json lists are a List;
logs keeps a container's stderr on stderr; there are no contexts or kubeconfig (--docker-host,
--state-dir and --config instead). Exit codes: 0 ok, 1 failed, 2 usage, 3 engine unreachable.`,
    )
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.out(s.trimEnd()), writeErr: (s) => io.err(s.trimEnd()) });

  const verb = argv && verbOf(argv, globalValueOptions(program));
  const only = verb === undefined ? undefined : VERBS.find(([, words]) => words.includes(verb));
  for (const [add] of only ? [only] : VERBS) add(program, io, setCode);

  program.hook('preAction', async (_self, action) => {
    const file = program.getOptionValue('config') as string | undefined;
    if (!file) return;
    const [{ loadConfigFile }, { applyConfig }, { formatIssue }] = await Promise.all([
      import('../config/config-file.js'),
      import('../config/effective.js'),
      import('../manifest/errors.js'),
    ]);
    const loaded = loadConfigFile(file);
    if (!loaded.ok) {
      for (const issue of loaded.issues) io.err(`podrun: ${formatIssue(issue)}`);
      throw new CommanderError(EXIT.usage, 'podrun.invalidConfig', 'invalid configuration file');
    }
    applyConfig(loaded.config, program, action.name() === 'run' ? action : undefined, dirname(resolve(file)));
  });

  // A mistyped word gets its one line, the suggestion, and where help is: not a screen of help
  // that scrolls the useful line away (kubectl: "See 'kubectl apply --help'").
  const hint = (cmd: Command, path: string[]): void => {
    cmd.showHelpAfterError(`See 'podrun ${[...path, ''].join(' ')}--help'.`);
    for (const sub of cmd.commands) hint(sub, [...path, sub.name()]);
  };
  hint(program, []);
  return program;
}
