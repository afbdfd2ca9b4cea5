import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { Command } from 'commander';
import { buildProgram, VERB_WORDS, verbOf } from '../../src/cli/program.js';
import type { Io } from '../../src/cli/context.js';

const quiet = new PassThrough();

/** A program built for these words, and everything its help (the root's and each verb's) prints. */
function helpOf(words: string[], verb: string): string {
  let text = '';
  const io: Io = { out: (l) => (text += `${l}\n`), err: (l) => (text += `${l}\n`), stdout: quiet, stderr: quiet, isTTY: false };
  const program = buildProgram(io, () => undefined, ['node', 'podrun', ...words]);
  const own = program.commands.find((c) => c.name() === verb);
  const all = (c: Command): Command[] => [c, ...c.commands.flatMap(all)];
  for (const c of own ? all(own) : []) text += c.helpInformation();
  return text;
}

const names = (p: Command): string[] => p.commands.map((c) => c.name()).filter((n) => n !== 'help');

describe('the program registers only the verb that runs', () => {
  const io: Io = { out: () => undefined, err: () => undefined, stdout: quiet, stderr: quiet, isTTY: false };

  it('lists every verb, in help order, when no verb is named', () => {
    expect(names(buildProgram(io, () => undefined))).toEqual(VERB_WORDS.flat());
    expect(names(buildProgram(io, () => undefined, ['node', 'podrun', '--help', 'version']))).toEqual(VERB_WORDS.flat());
    expect(names(buildProgram(io, () => undefined, ['node', 'podrun', 'verison']))).toEqual(VERB_WORDS.flat());
  });

  it('registers exactly the words of each verb, and their help is the full program’s', () => {
    for (const words of VERB_WORDS) {
      for (const word of words) {
        expect(names(buildProgram(io, () => undefined, ['node', 'podrun', '--state-dir', '/x', word]))).toEqual(words);
        // The verb's help (its subcommands' too) as the program with every verb has it.
        expect(helpOf([word], word)).toEqual(helpOf([], word));
      }
    }
  });

  it('finds the verb after podrun’s own options and their values', () => {
    const values = new Set(['--state-dir', '--config']);
    expect(verbOf(['n', 'p', '--state-dir', 'get', 'version'], values)).toBe('version');
    expect(verbOf(['n', 'p', '--state-dir=/x', 'get'], values)).toBe('get');
    expect(verbOf(['n', 'p', '-h', 'get'], values)).toBeUndefined();
    expect(verbOf(['n', 'p', '--', 'get'], values)).toBeUndefined();
    expect(verbOf(['n', 'p'], values)).toBeUndefined();
  });
});
