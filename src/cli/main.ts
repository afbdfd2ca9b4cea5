import { DEFAULT_EVICTION_HARD } from '../stats/node.js';
import { podrunVersion, versionLine } from '../status/version.js';
import { parseQuantity } from '../manifest/quantity.js';
import { dirname, resolve } from 'node:path';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { EngineRequestError, EngineUnavailableError } from '../runtime/engine-errors.js';
import { DEFAULTS, directLines, EXIT, processIo, type GlobalOptions, type Io } from './context.js';
import { normalizeArgv } from './argv.js';
import { addImageCommands } from './image-commands.js';
import { bool, duration, durationOption, evictionHard, ip, logFiles, logSize, nonNegativeInt, podMaxPids, positiveInt } from './arg-parsers.js';
import type { RunOptions } from './run.js';

// Each command loads its own modules when it runs: start-up is mostly module loading, and a
// command should pay only for what it uses (validate never loads the engine client).

export function version(): string {
  return podrunVersion();
}

/** The kubelet refuses maxParallelImagePulls other than 1 with serializeImagePulls (validation.go). */
function pullSlots(serialize: boolean | string, max: number | string | undefined): number {
  const serial = typeof serialize === 'string' ? bool(serialize) : serialize;
  const n = max === undefined ? undefined : typeof max === 'string' ? positiveInt(max) : max;
  if (serial && n !== undefined && n !== 1) throw new InvalidArgumentError(`--max-parallel-image-pulls ${n} needs --serialize-image-pulls false (as the kubelet: maxParallelImagePulls must be 1 when serializeImagePulls is true)`);
  return serial ? 1 : (n ?? 0);
}

export function globals(cmd: Command): GlobalOptions {
  const o = cmd.optsWithGlobals<{
    runtimeRequestTimeout: number; dockerHost?: string; containerRuntimeEndpoint?: string; imageServiceEndpoint?: string; podLogsDir?: string; stateDir: string; pauseImage: string; network: string; nodeName?: string; nodeIp?: string;
    allowPrivileged: boolean; allowHostNamespaces: boolean; allowedHostPaths?: string; allowedUnsafeSysctls?: string;
    containerLogMaxSize: string; containerLogMaxFiles: number | string; resolvConf: string;
    imageCredentials?: string; serializeImagePulls: boolean | string; maxParallelImagePulls?: number | string; podMaxPids: number | string;
  }>();
  const commaList = (v: string): string[] => v.split(',').map((p) => p.trim()).filter(Boolean);
  return {
    policy: {
      allowPrivileged: o.allowPrivileged,
      allowHostNamespaces: o.allowHostNamespaces,
      ...(o.allowedHostPaths !== undefined ? { allowedHostPaths: commaList(o.allowedHostPaths) } : {}),
      ...(o.allowedUnsafeSysctls !== undefined ? { allowedUnsafeSysctls: commaList(o.allowedUnsafeSysctls) } : {}),
    },
    containerLog: { maxBytes: Math.floor(parseQuantity(logSize(o.containerLogMaxSize))), maxFiles: logFiles(String(o.containerLogMaxFiles)) },
    resolvConf: o.resolvConf,
    podPidsLimit: podMaxPids(String(o.podMaxPids)),
    ...(o.imageCredentials ? { imageCredentials: o.imageCredentials } : {}),
    pullSlots: pullSlots(o.serializeImagePulls, o.maxParallelImagePulls),
    ...engineChoiceOf(o),
    requestTimeoutMs: o.runtimeRequestTimeout,
    stateDir: o.stateDir,
    pauseImage: o.pauseImage,
    network: o.network,
    ...(o.nodeName ? { nodeName: o.nodeName } : {}),
    ...(o.nodeIp ? { nodeIP: o.nodeIp } : {}),
  };
}

/** A Docker endpoint named as the runtime endpoint (a config file of before CRI, where the field meant Docker's). */
function isDockerEndpoint(v: string): boolean {
  return /^(tcp|https?):\/\//.test(v) || /\/(docker|podman)\.sock$/.test(v);
}

/** The engine the options choose: a CRI runtime's endpoint, or the Docker engine's (engine selection: runtime/open-engine.ts). */
function engineChoiceOf(o: { dockerHost?: string; containerRuntimeEndpoint?: string; imageServiceEndpoint?: string; podLogsDir?: string }): Pick<GlobalOptions, 'dockerHost' | 'engine'> {
  const cri = o.containerRuntimeEndpoint && !isDockerEndpoint(o.containerRuntimeEndpoint) ? o.containerRuntimeEndpoint : undefined;
  const dockerHost = o.dockerHost ?? (o.containerRuntimeEndpoint && !cri ? o.containerRuntimeEndpoint : undefined);
  const engine = { ...(cri ? { containerRuntimeEndpoint: cri } : {}), ...(o.imageServiceEndpoint ? { imageServiceEndpoint: o.imageServiceEndpoint } : {}), ...(o.podLogsDir ? { podLogsDir: o.podLogsDir } : {}) };
  return { ...(dockerHost ? { dockerHost } : {}), ...(Object.keys(engine).length ? { engine } : {}) };
}

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

export function buildProgram(io: Io, setCode: (code: number) => void): Command {
  const program = new PodrunCommand('podrun')
    .description('Run Kubernetes Pod manifests on one Docker engine, with no apiserver.')
    .addOption(new Option('--config <file>', 'a PodrunConfiguration file (schemas/config.schema.json); flags and PODRUN_* variables override it'))
    .addOption(new Option('--docker-host <url>', 'Docker engine endpoint (unix:///path or tcp://host:port)').env('DOCKER_HOST'))
    .addOption(new Option('--container-runtime-endpoint <url>', "a CRI runtime's socket (unix:///run/containerd/containerd.sock, unix:///run/crio/crio.sock), as the kubelet's: podrun then runs pods through the CRI instead of the Docker API"))
    .addOption(new Option('--image-service-endpoint <url>', "the CRI image service's socket, when not the runtime's, as the kubelet's"))
    .addOption(new Option('--pod-logs-dir <dir>', "where a CRI runtime writes containers' logs (default /var/log/pods), as the kubelet's podLogsDir"))
    .addOption(new Option('--state-dir <dir>', 'where podrun keeps emptyDir volumes and its state').default(DEFAULTS.stateDir))
    .addOption(new Option('--pause-image <image>', 'image of the sandbox container that holds each pod\'s namespaces').default(DEFAULTS.pauseImage))
    .addOption(new Option('--network <name>', 'Docker network for pods without hostNetwork').default(DEFAULTS.network))
    .option('--node-name <name>', 'node name for spec.nodeName (default: the hostname)')
    .addOption(new Option('--node-ip <ip>', "the node's IP: status.hostIP, and the pod IP of hostNetwork pods that probes and hooks use (default: the first non-loopback IPv4)").argParser(ip))
    .addOption(durationOption('--runtime-request-timeout <duration>', 'how long one engine call may take before podrun gives up on it (a stop: its grace period plus this), as the kubelet\'s', 120_000))
    .option('--allow-privileged <bool>', 'allow privileged containers (true|false)', bool, true)
    .option('--allow-host-namespaces <bool>', 'allow hostNetwork, hostPID and hostIPC (true|false)', bool, true)
    .option('--allowed-host-paths <paths>', 'comma-separated paths hostPath volumes must be at or below, judged where they really lead when mounted (default: any)')
    .option('--allowed-unsafe-sysctls <patterns>', "comma-separated sysctls (or prefixes ending in *) pods may set beyond the kubelet's safe set, as the kubelet's flag")
    .addOption(new Option('--container-log-max-size <size>', "a container's log file is rotated at this size, as the kubelet's").argParser(logSize).default('10Mi'))
    .addOption(new Option('--container-log-max-files <n>', 'log files kept per container, the current one included, as the kubelet\'s').argParser(logFiles).default(5))
    .addOption(new Option('--image-credentials <file>', "a Docker config.json pulls read (auths, credHelpers, credsStore; keys may name a path: registry:5000/team); default <state-dir>/config.json, then ~/.docker/config.json"))
    .addOption(new Option('--serialize-image-pulls <bool>', "pull one image at a time, as the kubelet's default").argParser(bool).default(true))
    .addOption(new Option('--max-parallel-image-pulls <n>', 'most pulls at once with --serialize-image-pulls false (default: no limit)').argParser(positiveInt))
    .addOption(new Option('--pod-max-pids <n>', "most processes each of a pod's containers may have (-1: no limit), as the kubelet's per pod (on CRI, a pod cgroup); on Docker it holds per container").argParser(podMaxPids).default(-1))
    .addOption(new Option('--resolv-conf <file>', "the resolver configuration pods inherit (their dnsConfig is added to it), as the kubelet's").default('/etc/resolv.conf'))
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

  program
    .command('apply')
    .description('validate manifests (files, directories, http(s) URLs), then make the engine run exactly those pods')
    .argument('[path...]', 'manifest files, directories or URLs; - for standard input')
    .option('-f, --filename <path...>', 'the same, as kubectl spells it (apply -f DIR, apply -f -)')
    .option('--dry-run', 'print the plan and change nothing', false)
    .option('--prune', 'delete pods that an earlier apply of the same paths created and that are gone now', false)
    .option('--no-wait', 'return once the changes are made, without waiting for the pods to run')
    .addOption(durationOption('--timeout <duration>', 'how long to wait for the pods to run', 120_000))
    .addHelpText('after', '\nAs kubectl apply, for Pods; unlike kubectl it waits until the pods run (--no-wait does not), and --prune needs no selector: it deletes what an earlier apply of the same paths made.\nA pod is ready once every container has run, passing its readiness probe, for 1 s with no restart (or the pod has succeeded). A pod that cannot become ready (CrashLoopBackOff, ErrImagePull, ImagePullBackOff, CreateContainerConfigError, RunContainerError, a failing init container) ends the wait at once: exit 1, with its last exit code and the last lines of its log.')
    .action(async (args: string[], o: { filename?: string[]; dryRun: boolean; prune: boolean; wait: boolean; timeout: number }, cmd: Command) => {
      const paths = [...args, ...(o.filename ?? [])];
      if (!paths.length) {
        io.err('podrun: give the manifests: podrun apply -f PATH (a file, a directory, a URL, or - for stdin)');
        setCode(EXIT.usage);
        return;
      }
      setCode(await (await import('./apply.js')).applyCommand(paths, { dryRun: o.dryRun, prune: o.prune, wait: o.wait, timeoutMs: o.timeout }, globals(cmd), io));
    });

  const collect = (v: string, prev: string[]): string[] => [...prev, v];
  program
    .command('run')
    .description('run the agent: keep the engine converged to the pods in watched directories, polled URLs and applied sets')
    .option('--manifest-dir <dir>', 'a directory of Pod manifests to watch (repeatable)', collect, [])
    .option('--manifest-url <url>', 'a URL serving a Pod or PodList to poll (repeatable)', collect, [])
    .option('--manifest-url-header <header>', "an HTTP header for the URLs, 'Name: value' (repeatable)", collect, [])
    .option('--manifest-url-ca <file>', 'PEM file of CAs to trust for https URLs')
    .option('--manifest-url-verify-key <file>', "apply a URL's set only when its signature (URL.sig, from ssh-keygen -Y sign -n podrun) verifies against a key in this OpenSSH public key or allowed-signers file (repeatable)", collect, [])
    .option('--manifest-dir-verify-key <file>', "read a watched directory's file only when its signature (FILE.sig beside it) verifies against a key in this file (repeatable)", collect, [])
    .addOption(durationOption('--rollback-after <duration>', "for every pod: an update that is not Ready within this goes back to the last Ready version (0: only pods annotated podrun.io/rollback-after)", 0))
    .addOption(durationOption('--resync-period <duration>', 'full rescan of the directories, under the watcher', 20_000))
    .addOption(durationOption('--url-period <duration>', 'URL poll period (jittered)', 20_000))
    .addOption(durationOption('--url-timeout <duration>', 'timeout of one URL request', 10_000))
    .addOption(durationOption('--relist-period <duration>', 'full engine relist, under the event stream', 60_000))
    .option('--max-parallel <n>', 'engine calls that create, start, remove or list at once (pods never wait behind one another\'s grace period)', (v) => Number(v), 4)
    .option('--http-port <port>', 'also serve the API on 127.0.0.1:port (the unix socket <state-dir>/podrun.sock always): /healthz, /metrics*, /stats/summary and /node to anyone; /pods, /events and /gc only with the bearer token of --http-token-file', (v) => Number(v))
    .option('--http-token-file <file>', 'the bearer token the TCP port asks for /pods, /events and /gc (one line, mode 0600; default: <state-dir>/http-token, made when missing)')
    .addOption(durationOption('--gc-period <duration>', 'container garbage collection sweep period', 60_000))
    .option('--maximum-dead-containers-per-container <n>', 'dead instances kept per container, for logs --previous', (v) => Number(v), 1)
    .option('--maximum-dead-containers <n>', 'cap on dead containers overall (-1: none)', (v) => Number(v), -1)
    .option('--image-gc <bool>', 'remove unused images when the disk fills (true|false)', (v) => v !== 'false', true)
    .addOption(durationOption('--image-gc-period <duration>', 'image garbage collection period', 300_000))
    .addOption(durationOption('--image-minimum-gc-age <duration>', 'an unused image younger than this is never removed', 120_000))
    .option('--image-gc-high-threshold <percent>', 'disk usage that starts image GC', (v) => Number(v), 85)
    .option('--image-gc-low-threshold <percent>', 'disk usage image GC frees down to', (v) => Number(v), 80)
    .addOption(durationOption('--crash-backoff-initial <duration>', 'first crash-loop restart delay', 10_000))
    .addOption(durationOption('--crash-backoff-max <duration>', 'longest crash-loop restart delay', 300_000))
    .addOption(durationOption('--housekeeping-interval <duration>', "how often each running container's resource usage is read, for /stats/summary and top (0: never), as cAdvisor's", 10_000))
    .option('--eviction-hard <thresholds>', "node pressure thresholds as the kubelet's, e.g. 'memory.available<100Mi,nodefs.available<10%' (signals: memory.available, nodefs.available, nodefs.inodesFree, imagefs.available, imagefs.inodesFree, pid.available); podrun reports pressure in the node conditions and evicts nothing", evictionHard, DEFAULT_EVICTION_HARD)
    .addOption(new Option('--log-level <level>', 'least severe level logged').choices(['debug', 'info', 'warn', 'error']))
    .option('--v <n>', "log verbosity as the kubelet's --v: 4 and up logs at debug", (v) => Number(v))
    .addOption(new Option('--log-format <format>', 'json lines, or text (default: text on a terminal, else json)').choices(['json', 'text']))
    .option('--print-config', 'print the configuration in force (flags, PODRUN_* variables, --config file, defaults) as a config file, and exit', false)
    .action(async (o: RunOptions & { crashBackoffInitial: number; crashBackoffMax: number; printConfig: boolean }, cmd: Command) => {
      if (o.printConfig) {
        const [{ effectiveConfig }, { yamlText }] = await Promise.all([import('../config/effective.js'), import('./yaml-out.js')]);
        io.out(yamlText(effectiveConfig(program, cmd), { lineWidth: -1 }));
        setCode(EXIT.ok);
        return;
      }
      setCode(await (await import('./run.js')).runCommand({ ...o, backoffInitial: o.crashBackoffInitial, backoffMax: o.crashBackoffMax }, globals(cmd), io));
    });

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
    .option('-w, --watch', 'after the list, a line for each pod that changes (not for its AGE alone) and, for a pod that goes, its last state; polled every second, until interrupted', false)
    .addHelpText('after', '\nAs kubectl get pods, but for the pods of this state directory on this engine; -o json prints a List. --watch polls (podrun has no apiserver to watch).')
    .action(async (names: string[], o: { output?: string; namespace: string; allNamespaces: boolean; selector?: string; showLabels: boolean; headers: boolean; watch: boolean }, cmd: Command) => {
      setCode(await (await import('./get.js')).getPodsCommand(names, { ...o, noHeaders: !o.headers }, globals(cmd), io));
    });

  get
    .command('node')
    .alias('nodes')
    .alias('no')
    .description('show this machine as a Kubernetes Node: addresses, capacity, engine, and the Ready and pressure conditions')
    .option('-o, --output <format>', 'wide, json or yaml')
    .action(async (o: { output?: string }, cmd: Command) => {
      setCode(await (await import('./node.js')).getNodeCommand(o, globals(cmd), io));
    });

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

  program
    .command('logs')
    .description("print a container's logs")
    .argument('[pod]', 'pod name, pod/NAME or namespace/name')
    .option('-c, --container <name>', 'container (default: the kubectl.kubernetes.io/default-container annotation, else the first)')
    .option('-n, --namespace <ns>', 'namespace', 'default')
    .option('-l, --selector <selector>', 'the logs of every pod these labels select')
    .option('--all-containers', 'every container of the pod, init containers first', false)
    .option('-f, --follow', 'stream new output', false)
    .option('-p, --previous', "the container's last terminated instance: the one before the current, or the one that just died while the next waits out its back-off", false)
    .option('--tail <lines>', 'only the last lines', (v) => Number(v))
    .addOption(new Option('--since <duration>', 'only lines newer than this (e.g. 5s, 2m, 1h)').argParser(duration))
    .option('--since-time <time>', 'only lines after this RFC3339 time')
    .option('--timestamps', 'prefix each line with its time', false)
    .option('--prefix', 'prefix each line with [pod/NAME/CONTAINER]', false)
    .addHelpText('after', "\nAs kubectl logs; a container's stderr goes to stderr (kubectl merges it into stdout).")
    .action(async (pod: string | undefined, o: { container?: string; namespace: string; selector?: string; allContainers: boolean; follow: boolean; previous: boolean; tail?: number; since?: number; sinceTime?: string; timestamps: boolean; prefix: boolean }, cmd: Command) => {
      setCode(await (await import('./logs.js')).logsCommand(pod, o, globals(cmd), io));
    });

  program
    .command('explain')
    .description('what a Pod field means, and whether podrun honours, ignores or refuses it')
    .argument('<field>', 'e.g. pod.spec.containers.livenessProbe')
    .option('--recursive', 'every field below, as a tree', false)
    .action(async (field: string, o: { recursive: boolean }) => {
      setCode((await import('./explain.js')).explainCommand(field, o, io));
    });

  program
    .command('completion')
    .description('print a shell completion script: source <(podrun completion bash), or podrun completion fish | source')
    .argument('<shell>', 'bash, zsh or fish')
    .action(async (shell: string) => {
      setCode((await import('./completion.js')).completionCommand(shell, io));
    });

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

  program
    .command('exec')
    .description('run a command in a container of a pod')
    .argument('<pod>', 'pod name, pod/NAME or namespace/name')
    .argument('[command...]', 'the command, after --')
    .option('-c, --container <name>', 'container (default: the kubectl.kubernetes.io/default-container annotation, else the first)')
    .option('-n, --namespace <ns>', 'namespace', 'default')
    .option('-i, --stdin', 'pass stdin to the command', false)
    .option('-t, --tty', 'stdin is a TTY', false)
    .addHelpText('after', '\nAs kubectl exec: podrun exec -it web -- sh. Exits with the command\'s exit code.')
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
    .option('--ignore-not-found', 'a pod that does not exist is not an error', false)
    .addHelpText('after', '\nA pod that a watched directory or URL declares comes back (the agent makes it anew, as the kubelet a static pod): delete warns so, and says where to remove it for good. A pod an apply made stays deleted.')
    .action(async (names: string[], o: { filename?: string[]; namespace: string; selector?: string; all: boolean; allNamespaces: boolean; gracePeriod?: number; ignoreNotFound: boolean }, cmd: Command) => {
      setCode(await (await import('./delete.js')).deleteCommand(names, o, globals(cmd), io));
    });

  program
    .command('gc')
    .description('remove dead containers over the bound (and, with an agent, pods no longer wanted) and unused images over the disk threshold')
    .option('--dry-run', 'show what would go', false)
    .option('--no-images', 'leave images alone')
    .action(async (o: { dryRun: boolean; images: boolean }, cmd: Command) => {
      setCode(await (await import('./gc.js')).gcCommand(o, globals(cmd), io));
    });

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

  addImageCommands(program, io, setCode, globals);

  program
    .command('version')
    .description('print podrun\'s version and the engine\'s')
    .option('--client', 'podrun\'s version only, without asking the engine', false)
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
          const { engineVersion } = await import('./engine-version.js');
          const v = await engineVersion(g.dockerHost ?? process.env.DOCKER_HOST ?? 'unix:///var/run/docker.sock');
          io.out(`engine ${v.version} (API ${v.apiVersion})`);
        } catch (err) {
          io.out(`engine unreachable (${(err as Error).message})`);
        }
      }
      setCode(EXIT.ok);
    });

  program.hook('preAction', async (_self, action) => {
    const file = program.getOptionValue('config') as string | undefined;
    if (!file) return;
    const [{ loadConfigFile }, { applyConfig }, { formatIssue }] = await Promise.all([import('../config/config-file.js'), import('../config/effective.js'), import('../manifest/errors.js')]);
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

/** The pods `get pods` would list with the completed line's global options, asked in-process. */
async function podsForCompletion(head: string[], globalArgs: string[], ns: string | undefined): Promise<{ name: string; namespace: string; containers: string[] }[]> {
  let text = '';
  const quiet = new (await import('node:stream')).PassThrough();
  const io: Io = { out: (l) => (text += `${l}\n`), err: () => undefined, stdout: quiet, stderr: quiet, isTTY: false };
  const code = await main([...head, ...globalArgs, 'get', 'pods', ...(ns === undefined ? ['-A'] : ['-n', ns]), '-o', 'json'], io);
  if (code !== EXIT.ok || !text) return [];
  const list = JSON.parse(text) as { items?: { metadata: { name: string; namespace: string }; spec: { containers?: { name: string }[]; initContainers?: { name: string }[] } }[] };
  return (list.items ?? []).map((p) => ({ name: p.metadata.name, namespace: p.metadata.namespace, containers: [...(p.spec.initContainers ?? []), ...(p.spec.containers ?? [])].map((c) => c.name) }));
}

/** Where the engine's address came from, and what to do about the failure to reach it. */
export function engineAdvice(code: string | undefined, source: string | undefined): string {
  const from =
    source === 'cli' ? 'the address is --docker-host\'s'
      : source === 'env' ? 'the address came from DOCKER_HOST'
        : source === 'config' ? 'the address came from the --config file'
          : 'the address is the default (neither --docker-host nor DOCKER_HOST is set)';
  const fix =
    code === 'ENOENT' ? 'no socket is there: is the Docker engine running (systemctl start docker)? if it listens elsewhere, give that address with --docker-host or DOCKER_HOST'
      : code === 'EACCES' || code === 'EPERM' ? "the socket is not this user's to use: run podrun as root, or as a member of the socket's group (docker)"
        : code === 'ECONNREFUSED' ? 'nothing answers there: is the Docker engine running, and listening at that address?'
          : 'is the Docker engine running there? give its address with --docker-host or DOCKER_HOST';
  return `${from}; ${fix}`;
}

/** Global options whose next word is their value, for normalizeArgv. */
function globalValueOptions(program: Command): Set<string> {
  return new Set(program.options.filter((o) => o.required || o.optional).flatMap((o) => [o.long, o.short].filter((f): f is string => f !== undefined)));
}

/** Runs the CLI; every expected failure becomes one line on stderr and an exit code. */
export async function main(argv: string[], io: Io = processIo): Promise<number> {
  let code: number = EXIT.ok;
  const program = buildProgram(io, (c) => {
    code = c;
  });
  // The shells' completion functions ask here, with the words typed so far (never parsed as options).
  if (argv[2] === '__complete') {
    const { completeCommand } = await import('./completion.js');
    return completeCommand(program, argv.slice(3), { pods: (globalArgs, ns) => podsForCompletion(argv.slice(0, 2), globalArgs, ns) }, io);
  }
  try {
    await program.parseAsync(normalizeArgv(argv, { globalValueOptions: globalValueOptions(program) }));
    return code;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.help' || err.code === 'commander.version') return EXIT.ok;
      // Commander printed its own; a combination of options judged in an action has not been yet.
      if (err.code === 'commander.invalidArgument' && err.message.startsWith('--')) io.err(`podrun: ${err.message}`);
      return EXIT.usage;
    }
    if (err instanceof EngineUnavailableError && err.name === 'CriUnavailableError') {
      // The CRI error names the runtime and, where it can tell, the fix (a disabled CRI plugin).
      const down = err.code === 'ENOENT' || err.code === 'ECONNREFUSED';
      io.err(`podrun: ${err.message}${down ? '; systemctl status containerd (or crio) tells; a socket elsewhere is given with --container-runtime-endpoint' : ''}`);
      return EXIT.engine;
    }
    if (err instanceof EngineUnavailableError) {
      // One line, as every expected failure: what failed, where the address came from, the fix.
      io.err(`podrun: ${err.message}; ${engineAdvice(err.code, program.getOptionValueSource('dockerHost') as string | undefined)}`);
      return EXIT.engine;
    }
    if (err instanceof EngineRequestError) {
      // The engine failing (a 5xx), not the request being wrong: as good as unreachable.
      if (err.kind === 'failing' || err.kind === 'unsupported') {
        io.err(`podrun: the Docker engine is failing: ${err.message}`);
        return EXIT.engine;
      }
      io.err(`podrun: engine error: ${err.message}`);
      return EXIT.failed;
    }
    throw err;
  }
}

function onStreamError(err: NodeJS.ErrnoException): void {
  if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw err;
}

/**
 * What bin/podrun (and the single executable) runs: main() on the process's own arguments. Once
 * main() has answered, the process must end: a command that failed half way (an agent whose start
 * failed after its watchers or timers began) may not linger half alive. The timer is unref'd, so
 * a process with nothing left to do exits at once, as usual.
 */
export function start(): void {
  const exit = (code: number): void => {
    process.exitCode = code;
    setTimeout(() => process.exit(code), 1000).unref();
  };
  // A reader that went away (`podrun logs | head`) ends the command as it ends cat: quietly.
  // Each stream gets its handler when it is made (Node makes them on first use): a command that
  // writes only lines never makes them (processIo writes those to the descriptors).
  const made = directLines();
  for (const [name, fd] of [['stdout', 1], ['stderr', 2]] as const) {
    const own = Object.getOwnPropertyDescriptor(process, name);
    const get = own?.get;
    if (!get || !own.configurable) {
      process[name].on('error', onStreamError);
      made(fd);
      continue;
    }
    let stream: NodeJS.WriteStream | undefined;
    Object.defineProperty(process, name, {
      configurable: true,
      enumerable: own.enumerable ?? true,
      get: () => {
        if (!stream) {
          stream = get.call(process) as NodeJS.WriteStream;
          stream.on('error', onStreamError);
          made(fd);
        }
        return stream;
      },
    });
  }
  main(process.argv).then(exit, (err: unknown) => {
    // main() turns every expected failure into a message and an exit code; reaching here is a bug.
    process.stderr.write(`podrun: internal error: ${err instanceof Error ? err.stack : String(err)}\n`);
    exit(70);
  });
}
