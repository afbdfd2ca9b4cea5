import { Option, type Command } from 'commander';
import { DEFAULT_EVICTION_HARD } from '../stats/node.js';
import { EXIT, type Io } from './context.js';
import { durationOption, evictionHard } from './arg-parsers.js';
import { globals } from './globals.js';
import type { RunOptions } from './run.js';

// `podrun run`, the agent: the most options of any verb, each also read as PODRUN_<FLAG> (program.ts).

/** `podrun run`; `--print-config` reads the whole program (`program`) for the configuration in force. */
export function addRun(program: Command, io: Io, setCode: (code: number) => void): void {
  const collect = (v: string, prev: string[]): string[] => [...prev, v];
  program
    .command('run')
    .description('run the agent: keep the engine converged to the pods in watched directories, polled URLs and applied sets')
    .option('--manifest-dir <dir>', 'a directory of Pod manifests to watch (repeatable)', collect, [])
    .option('--manifest-url <url>', 'a URL serving a Pod or PodList to poll (repeatable)', collect, [])
    .option('--manifest-url-header <header>', "an HTTP header for the URLs, 'Name: value' (repeatable)", collect, [])
    .option('--manifest-url-ca <file>', 'PEM file of CAs to trust for https URLs')
    .option(
      '--manifest-url-verify-key <file>',
      "apply a URL's set only when its signature (URL.sig, from ssh-keygen -Y sign -n podrun) verifies against a key in this OpenSSH public key or allowed-signers file (repeatable)",
      collect,
      [],
    )
    .option(
      '--manifest-dir-verify-key <file>',
      "read a watched directory's file only when its signature (FILE.sig beside it) verifies against a key in this file (repeatable)",
      collect,
      [],
    )
    .addOption(
      durationOption(
        '--rollback-after <duration>',
        'for every pod: an update that is not Ready within this goes back to the last Ready version (0: only pods annotated podrun.io/rollback-after)',
        0,
      ),
    )
    .addOption(durationOption('--resync-period <duration>', 'full rescan of the directories, under the watcher', 20_000))
    .addOption(durationOption('--url-period <duration>', 'URL poll period (jittered)', 20_000))
    .addOption(durationOption('--url-timeout <duration>', 'timeout of one URL request', 10_000))
    .addOption(durationOption('--relist-period <duration>', 'full engine relist, under the event stream', 60_000))
    .option(
      '--max-parallel <n>',
      "engine calls that create, start, remove or list at once (pods never wait behind one another's grace period)",
      (v) => Number(v),
      4,
    )
    .option(
      '--http-port <port>',
      'also serve the API on 127.0.0.1:port (the unix socket <state-dir>/podrun.sock always): /healthz, /metrics*, /stats/summary and /node to anyone; /pods, /events and /gc only with the bearer token of --http-token-file',
      (v) => Number(v),
    )
    .option(
      '--http-token-file <file>',
      'the bearer token the TCP port asks for /pods, /events and /gc (one line, mode 0600; default: <state-dir>/http-token, made when missing)',
    )
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
    .addOption(
      durationOption(
        '--housekeeping-interval <duration>',
        "how often each running container's resource usage is read, for /stats/summary and top (0: never), as cAdvisor's",
        10_000,
      ),
    )
    .option(
      '--eviction-hard <thresholds>',
      "node pressure thresholds as the kubelet's, e.g. 'memory.available<100Mi,nodefs.available<10%' (signals: memory.available, nodefs.available, nodefs.inodesFree, imagefs.available, imagefs.inodesFree, pid.available); podrun reports pressure in the node conditions and evicts nothing",
      evictionHard,
      DEFAULT_EVICTION_HARD,
    )
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
}
