import type { Command } from 'commander';
import { EXIT, type GlobalOptions, type Io } from './context.js';

/** Registers images and pull on the program (program.ts holds the global options, globals.ts reads them). */
export function addImageCommands(program: Command, io: Io, setCode: (code: number) => void, globals: (cmd: Command) => GlobalOptions): void {
  const paths = (args: string[], o: { filename?: string[] }): string[] | undefined => {
    const all = [...args, ...(o.filename ?? [])];
    if (all.length) return all;
    io.err('podrun: give the manifests: -f PATH (a file, a directory, a URL, or - for stdin)');
    setCode(EXIT.usage);
    return undefined;
  };
  program
    .command('images')
    .description('list the images a set of manifests needs (the sandbox image included) and whether the engine has them')
    .argument('[path...]', 'manifest files, directories or URLs')
    .option('-f, --filename <path...>', 'the same, as kubectl spells it')
    .option('-o, --output <format>', 'name: one image reference per line (for docker save)')
    .action(async (args: string[], o: { filename?: string[]; output?: string }, cmd: Command) => {
      const p = paths(args, o);
      if (p) setCode(await (await import('./images.js')).imagesCommand(p, o, globals(cmd), io));
    });
  program
    .command('pull')
    .description("pull every image a set of manifests needs, with its credentials (an appliance's bake step)")
    .argument('[path...]', 'manifest files, directories or URLs')
    .option('-f, --filename <path...>', 'the same, as kubectl spells it')
    .action(async (args: string[], o: { filename?: string[] }, cmd: Command) => {
      const p = paths(args, o);
      if (p) setCode(await (await import('./images.js')).pullCommand(p, globals(cmd), io));
    });
}
