import type { Command } from 'commander';
import { EXIT, type Io } from './context.js';

/** Commands whose arguments are pod names: completed from `podrun get pods -o name`. */
const TAKES_PODS = new Set(['get pods', 'describe pod', 'logs', 'exec', 'delete', 'wait']);

interface Entry {
  /** As typed (aliases included). */
  path: string;
  words: string[];
  pods: boolean;
}

function walk(cmd: Command, path: string[], canonical: string[], out: Entry[]): void {
  // Hidden commands (exec-guard, which podrun starts itself) are not offered.
  const subs = cmd.createHelp().visibleCommands(cmd).filter((c) => c.name() !== 'help');
  const flags = cmd.options.flatMap((o) => [o.long, o.short].filter((f): f is string => !!f));
  const names = subs.flatMap((c) => [c.name(), ...c.aliases()]);
  out.push({ path: path.join(' '), words: [...names, ...flags, '--help'], pods: TAKES_PODS.has(canonical.join(' ')) });
  for (const c of subs) for (const n of [c.name(), ...c.aliases()]) walk(c, [...path, n], [...canonical, c.name()], out);
}

/** A bash completion function generated from the command tree; zsh runs it through bashcompinit. */
export function completionScript(program: Command, shell: 'bash' | 'zsh'): string {
  const entries: Entry[] = [];
  walk(program, [], [], entries);
  // Most specific first: `get pods` before `get`.
  entries.sort((a, b) => b.path.split(' ').length - a.path.split(' ').length || b.path.length - a.path.length);
  const cases = entries
    .map((e) => {
      const pattern = e.path ? `"${e.path}"|"${e.path} "*` : '""';
      return `    ${pattern})\n      words="${e.words.join(' ')}"${e.pods ? '\n      pods=1' : ''}\n      ;;`;
    })
    .join('\n');
  const bash = `# podrun completion for ${shell}: source <(podrun completion ${shell})
_podrun() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" path="" w i words="" pods=0
  for ((i = 1; i < COMP_CWORD; i++)); do
    w="\${COMP_WORDS[i]}"
    case "$w" in -*) ;; *) path="\${path:+$path }$w" ;; esac
  done
  case "$path" in
${cases}
  esac
  if [[ $pods == 1 && $cur != -* ]]; then
    words="$words $(podrun get pods -o name 2>/dev/null | sed 's,^pod/,,')"
  fi
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -F _podrun podrun
`;
  return shell === 'zsh' ? `#compdef podrun\nautoload -U +X bashcompinit && bashcompinit\n${bash}` : bash;
}

export function completionCommand(program: Command, shell: string, io: Io): number {
  if (shell !== 'bash' && shell !== 'zsh') {
    io.err(`podrun: no completion for "${shell}" (bash or zsh)`);
    return EXIT.usage;
  }
  io.out(completionScript(program, shell).trimEnd());
  return EXIT.ok;
}
