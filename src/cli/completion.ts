import type { Command, Option } from 'commander';
import { EXIT, type Io } from './context.js';

/**
 * Shell completion, as cobra does it for kubectl: the shell scripts are thin and ask
 * `podrun __complete WORDS...` (the words typed so far, the one being completed last), so what
 * is offered is computed by podrun with the whole line in view: its --state-dir, --docker-host
 * and -n decide which pods are offered, -o and -c get their values, and every shell gets the same.
 */

/** Commands whose arguments are pod names. */
const TAKES_PODS = new Set(['get pods', 'describe pod', 'logs', 'exec', 'delete', 'wait', 'top pods']);

/** Values of options that take a fixed set, by the command they belong to. */
const OUTPUTS: Record<string, string[]> = {
  'get pods': ['wide', 'json', 'yaml', 'name', 'jsonpath='],
  'get node': ['wide', 'json', 'yaml'],
};
const WAIT_FOR = ['condition=Ready', 'condition=Ready=false', 'delete', 'jsonpath={.status.phase}=Running'];
const SHELLS = ['bash', 'zsh', 'fish'];

/** Said instead of candidates when the shell should complete a file name. */
export const FILES = ':files';

/** What completion needs to ask the engine: pods (names, namespaces) and a pod's containers, with the line's global options. */
export interface PodLister {
  pods(globalArgs: string[], namespace: string | undefined): Promise<{ name: string; namespace: string; containers: string[] }[]>;
}

function optionFor(cmds: Command[], word: string): Option | undefined {
  const flag = word.includes('=') ? word.slice(0, word.indexOf('=')) : word;
  for (const c of [...cmds].reverse()) {
    const o = c.options.find((x) => x.long === flag || x.short === flag);
    if (o) return o;
  }
  return undefined;
}

const takesValue = (o: Option): boolean => o.required || o.optional;

function visible(cmd: Command): Command[] {
  return cmd.commands.filter((c) => c.name() !== 'help' && !(c as Command & { _hidden?: boolean })._hidden);
}

/** The candidates for the last of `words` (the words after `podrun`; the last may be empty). */
export async function complete(program: Command, words: string[], lister: PodLister): Promise<string[]> {
  const current = words.at(-1) ?? '';
  const before = words.slice(0, -1);
  const chain: Command[] = [program];
  const globalArgs: string[] = [];
  const positional: string[] = [];
  let namespace: string | undefined;
  let allNamespaces = false;
  let pending: Option | undefined;
  let afterDashDash = false;
  for (const w of before) {
    if (pending) {
      const o = pending;
      pending = undefined;
      if (program.options.includes(o)) globalArgs.push(o.long ?? o.short ?? '', w);
      if (o.long === '--namespace') namespace = w;
      continue;
    }
    if (afterDashDash) continue;
    if (w === '--') {
      afterDashDash = true;
      continue;
    }
    if (w.startsWith('-')) {
      const o = optionFor(chain, w);
      if (!o) continue;
      if (o.long === '--all-namespaces') allNamespaces = true;
      if (takesValue(o) && !w.includes('=')) pending = o;
      else if (w.includes('=')) {
        if (program.options.includes(o)) globalArgs.push(w);
        if (o.long === '--namespace') namespace = w.slice(w.indexOf('=') + 1);
      }
      continue;
    }
    const last = chain.at(-1)!;
    const sub = visible(last).find((c) => c.name() === w || c.aliases().includes(w));
    if (sub && positional.length === 0) chain.push(sub);
    else positional.push(w);
  }
  if (afterDashDash) return [FILES];
  const path = chain
    .slice(1)
    .map((c) => c.name())
    .join(' ');
  const cmd = chain.at(-1)!;
  const pods = (): ReturnType<PodLister['pods']> => lister.pods(globalArgs, allNamespaces ? undefined : (namespace ?? 'default'));

  if (pending) {
    switch (pending.long) {
      case '--output':
        return OUTPUTS[path] ?? [];
      case '--namespace':
        return [...new Set((await lister.pods(globalArgs, undefined)).map((p) => p.namespace))].sort();
      case '--container': {
        const name = positional.map((p) => p.replace(/^(pod|pods|po)\//, '')).find((p) => p !== 'pod' && p !== 'pods' && p !== 'po');
        const pod = name ? (await pods()).find((p) => p.name === name) : undefined;
        return pod?.containers ?? [];
      }
      case '--for':
        return WAIT_FOR;
      default:
        return pending.argChoices ?? [FILES];
    }
  }
  if (current.startsWith('-')) {
    const flags = (c: Command): string[] => c.options.flatMap((o) => [o.long, o.short]).filter((f): f is string => f !== undefined);
    // The command's own flags first; podrun's global ones (taken anywhere on the line) when none fits.
    const own = [...flags(cmd), '--help'].filter((f) => f.startsWith(current));
    return own.length || cmd === program ? own : flags(program).filter((f) => f.startsWith(current));
  }
  const subs = visible(cmd);
  if (subs.length && positional.length === 0) return subs.flatMap((c) => [c.name(), ...c.aliases()]);
  if (path === 'completion') return positional.length ? [] : SHELLS;
  if (TAKES_PODS.has(path)) {
    // exec and logs take one pod; after it, nothing more is a pod.
    if ((path === 'exec' || path === 'logs') && positional.length > 0) return [];
    return (await pods()).map((p) => p.name);
  }
  if (path === 'apply' || path === 'validate' || path === 'images' || path === 'pull') return [FILES];
  return [];
}

export function completionScript(shell: 'bash' | 'zsh' | 'fish'): string {
  if (shell === 'fish') {
    return `# podrun completion for fish: podrun completion fish | source
function __podrun_complete
    set -l tokens (commandline -opc) (commandline -ct)
    set -l out (podrun __complete $tokens[2..-1] 2>/dev/null)
    if test "$out" = "${FILES}"
        __fish_complete_path (commandline -ct)
    else
        printf '%s\\n' $out
    end
end
complete -c podrun -f -a '(__podrun_complete)'
`;
  }
  const bash = `# podrun completion for ${shell}: source <(podrun completion ${shell})
_podrun() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" out IFS=$'\\n'
  out=$(podrun __complete "\${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null)
  if [[ $out == "${FILES}" ]]; then
    COMPREPLY=($(compgen -f -- "$cur"))
  else
    COMPREPLY=($(compgen -W "$out" -- "$cur"))
  fi
}
complete -F _podrun podrun
`;
  return shell === 'zsh' ? `#compdef podrun\nautoload -U +X bashcompinit && bashcompinit\n${bash}` : bash;
}

export function completionCommand(shell: string, io: Io): number {
  if (shell !== 'bash' && shell !== 'zsh' && shell !== 'fish') {
    io.err(`podrun: no completion for "${shell}" (bash, zsh or fish)`);
    return EXIT.usage;
  }
  io.out(completionScript(shell).trimEnd());
  return EXIT.ok;
}

/** `podrun __complete WORDS...`: the candidates, one a line; a failure to list pods offers none. */
export async function completeCommand(program: Command, words: string[], lister: PodLister, io: Io): Promise<number> {
  let found: string[];
  try {
    found = await complete(program, words, lister);
  } catch {
    found = [];
  }
  for (const w of found) io.out(w);
  return EXIT.ok;
}
