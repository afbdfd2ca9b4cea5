import { directLines } from './process-io.js';

// How a command started from bin/podrun (or the single executable) meets the process: its lines,
// a reader that goes away, and its end. Shared by main.ts's start() and `podrun version`'s own
// start (version-start.ts), so both behave as one program.

function onStreamError(err: NodeJS.ErrnoException): void {
  if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw err;
}

/**
 * Lets lines go straight to the descriptors (context.ts) and makes a reader that went away
 * (`podrun logs | head`) end the command as it ends cat: quietly. Each stream gets its handler
 * when it is made (Node makes them on first use): a command that writes only lines never makes them.
 */
export function guardProcessStreams(): void {
  const made = directLines();
  for (const [name, fd] of [
    ['stdout', 1],
    ['stderr', 2],
  ] as const) {
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
}

/**
 * Ends the process with the command's exit code once it has answered: a command that failed half
 * way (an agent whose start failed after its watchers or timers began) may not linger half alive.
 * The timer is unref'd, so a process with nothing left to do exits at once, as usual.
 */
export function endWith(answer: Promise<number>): void {
  const exit = (code: number): void => {
    process.exitCode = code;
    setTimeout(() => process.exit(code), 1000).unref();
  };
  answer.then(exit, (err: unknown) => {
    // Every expected failure is a message and an exit code by now; reaching here is a bug.
    process.stderr.write(`podrun: internal error: ${err instanceof Error ? err.stack : String(err)}\n`);
    exit(70);
  });
}
