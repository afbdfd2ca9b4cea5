import { writeSync } from 'node:fs';

/** podrun's exit codes. */
export const EXIT = { ok: 0, failed: 1, usage: 2, engine: 3 } as const;

/** Where command output goes; tests hand in their own. */
export interface Io {
  out: (line: string) => void;
  err: (line: string) => void;
  /** Raw streams, for output that is not line by line (logs). */
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  isTTY: boolean;
}

// A command's lines go to descriptors 1 and 2 with writeSync until something asks for Node's
// stdout or stderr stream: making one loads Node's stream modules (and net or tty), a measurable
// part of a start that only writes a few lines. Node's own writes to pipes, files and terminals
// are synchronous on Linux, so lines come out where and when they did. Only bin/podrun's starts
// turn this on (directLines, from process-start.ts), after making sure they learn when a stream is
// made: from then on every line goes through the stream, so that nothing overtakes what it holds.
let direct = false;
const streamMade = { 1: false, 2: false };

/** For process-start.ts: lines may go straight to the descriptors; a stream made later is reported here. */
export function directLines(): (fd: 1 | 2) => void {
  direct = true;
  return (fd) => {
    streamMade[fd] = true;
  };
}

function writeLine(fd: 1 | 2, line: string): void {
  const stream = (): NodeJS.WriteStream => (fd === 1 ? process.stdout : process.stderr);
  if (!direct || streamMade[fd]) {
    stream().write(`${line}\n`);
    return;
  }
  const bytes = Buffer.from(`${line}\n`);
  let done = 0;
  try {
    while (done < bytes.length) done += writeSync(fd, bytes, done);
  } catch {
    // A descriptor that is non-blocking and full (EAGAIN), a reader gone (EPIPE), or any other
    // failure: the stream takes the rest and does what it always did (waits; or the EPIPE exit).
    stream().write(bytes.subarray(done));
  }
}

export const processIo: Io = {
  out: (line) => writeLine(1, line),
  err: (line) => writeLine(2, line),
  get stdout() {
    return process.stdout;
  },
  get stderr() {
    return process.stderr;
  },
  // As process.stderr.isTTY, without making the stream.
  get isTTY() {
    return process.getBuiltinModule('node:tty').isatty(2);
  },
};
