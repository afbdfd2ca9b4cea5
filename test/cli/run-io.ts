import { PassThrough } from 'node:stream';
import type { Io } from '../../src/cli/context.js';

const quiet = new PassThrough();

/** Runs a command's entry (the program's main, or a start of its own) on `podrun WORDS`, keeping what it printed and its exit code. */
export async function runWords(how: (argv: string[], io: Io) => Promise<number>, words: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const io: Io = { out: (l) => (out += `${l}\n`), err: (l) => (err += `${l}\n`), stdout: quiet, stderr: quiet, isTTY: false };
  const code = await how(['node', 'podrun', ...words], io);
  return { code, out, err };
}
