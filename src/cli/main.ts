import { CommanderError } from 'commander';
import { podrunVersion } from '../status/version.js';
import { EngineRequestError, EngineUnavailableError, isEngineFault } from '../runtime/engine-errors.js';
import { EXIT, processIo, type Io } from './context.js';
import { normalizeArgv } from './argv.js';
import { buildProgram, globalValueOptions } from './program.js';
import { endWith, guardProcessStreams } from './process-start.js';

// Each command loads its own modules when it runs: start-up is mostly module loading, and a
// command should pay only for what it uses (validate never loads the engine client).

export function version(): string {
  return podrunVersion();
}

/** The pods `get pods` would list with the completed line's global options, asked in-process. */
async function podsForCompletion(
  head: string[],
  globalArgs: string[],
  ns: string | undefined,
): Promise<{ name: string; namespace: string; containers: string[] }[]> {
  let text = '';
  const quiet = new (await import('node:stream')).PassThrough();
  const io: Io = { out: (l) => (text += `${l}\n`), err: () => undefined, stdout: quiet, stderr: quiet, isTTY: false };
  const code = await main([...head, ...globalArgs, 'get', 'pods', ...(ns === undefined ? ['-A'] : ['-n', ns]), '-o', 'json'], io);
  if (code !== EXIT.ok || !text) return [];
  const list = JSON.parse(text) as {
    items?: { metadata: { name: string; namespace: string }; spec: { containers?: { name: string }[]; initContainers?: { name: string }[] } }[];
  };
  return (list.items ?? []).map((p) => ({
    name: p.metadata.name,
    namespace: p.metadata.namespace,
    containers: [...(p.spec.initContainers ?? []), ...(p.spec.containers ?? [])].map((c) => c.name),
  }));
}

/** Where the engine's address came from, and what to do about the failure to reach it. */
export function engineAdvice(code: string | undefined, source: string | undefined): string {
  const from =
    source === 'cli'
      ? "the address is --docker-host's"
      : source === 'env'
        ? 'the address came from DOCKER_HOST'
        : source === 'config'
          ? 'the address came from the --config file'
          : 'the address is the default (neither --docker-host nor DOCKER_HOST is set)';
  const fix =
    code === 'ENOENT'
      ? 'no socket is there: is the Docker engine running (systemctl start docker)? if it listens elsewhere, give that address with --docker-host or DOCKER_HOST'
      : code === 'EACCES' || code === 'EPERM'
        ? "the socket is not this user's to use: run podrun as root, or as a member of the socket's group (docker)"
        : code === 'ECONNREFUSED'
          ? 'nothing answers there: is the Docker engine running, and listening at that address?'
          : 'is the Docker engine running there? give its address with --docker-host or DOCKER_HOST';
  return `${from}; ${fix}`;
}

/** An engine's refusal as the CLI's one line and exit code. */
export function requestFailure(err: EngineRequestError): { line: string; exit: number } {
  // The engine sick, stuck or lacking, not the request wrong: as good as unreachable.
  if (isEngineFault(err.kind)) return { line: `podrun: ${err.engine} is failing: ${err.message}`, exit: EXIT.engine };
  return { line: `podrun: engine error: ${err.message}`, exit: EXIT.failed };
}

/** Runs the CLI; every expected failure becomes one line on stderr and an exit code. */
export async function main(argv: string[], io: Io = processIo): Promise<number> {
  let code: number = EXIT.ok;
  const program = buildProgram(
    io,
    (c) => {
      code = c;
    },
    // Completion asks about every verb.
    argv[2] === '__complete' ? undefined : argv,
  );
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
      io.err(
        `podrun: ${err.message}${down ? '; systemctl status containerd (or crio) tells; a socket elsewhere is given with --container-runtime-endpoint' : ''}`,
      );
      return EXIT.engine;
    }
    if (err instanceof EngineUnavailableError) {
      // One line, as every expected failure: what failed, where the address came from, the fix.
      io.err(`podrun: ${err.message}; ${engineAdvice(err.code, program.getOptionValueSource('dockerHost') as string | undefined)}`);
      return EXIT.engine;
    }
    if (err instanceof EngineRequestError) {
      const failure = requestFailure(err);
      io.err(failure.line);
      return failure.exit;
    }
    throw err;
  }
}

/**
 * What bin/podrun (and the single executable) runs: main() on the process's own arguments, with
 * the process's streams and end as process-start.ts makes them.
 */
export function start(): void {
  guardProcessStreams();
  endWith(main(process.argv));
}
