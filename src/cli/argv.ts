/**
 * kubectl's ways of naming a resource, brought to the one shape podrun's commands parse:
 * `get pod/web` and `get pods/web` become `get pods web`, `describe po/web` becomes
 * `describe pod web`, and a type given after options (`get -n ns pods`) moves next to its verb.
 * Pure: the caller says which options take a value, so their values are never taken for names.
 */

/** The verbs whose resource type is a subcommand, with the subcommand each type word means. */
const TYPED_VERBS: Record<string, Record<string, string>> = {
  get: { pod: 'pods', pods: 'pods', po: 'pods', node: 'node', nodes: 'node', no: 'node' },
  describe: { pod: 'pod', pods: 'pod', po: 'pod' },
  top: { pod: 'pods', pods: 'pods', po: 'pods' },
};

/** Options of these verbs' subcommands that take a value (`-n ns`, `-o wide`, `-l app=web`). */
const VERB_VALUE_OPTIONS = new Set(['-n', '--namespace', '-o', '--output', '-l', '--selector']);

export interface ArgvShape {
  /** Global options that take a value (their next word is theirs unless written --opt=value). */
  globalValueOptions: ReadonlySet<string>;
}

function takesNext(arg: string, options: ReadonlySet<string>): boolean {
  return options.has(arg) && !arg.includes('=');
}

/** `argv` as process.argv has it (node, script, ...words); returns a new array, never changes this one. */
export function normalizeArgv(argv: readonly string[], shape: ArgvShape): string[] {
  const out = [...argv];
  let i = 2;
  while (i < out.length && out[i]!.startsWith('-')) {
    if (out[i] === '--') return out;
    i += takesNext(out[i]!, shape.globalValueOptions) ? 2 : 1;
  }
  const verb = out[i];
  const types = verb === undefined ? undefined : TYPED_VERBS[verb];
  if (!types) return out;
  const verbAt = i;
  // The first word after the verb that is not an option or an option's value names the type.
  let j = verbAt + 1;
  while (j < out.length && out[j]!.startsWith('-')) {
    if (out[j] === '--') return out;
    j += takesNext(out[j]!, VERB_VALUE_OPTIONS) ? 2 : 1;
  }
  const first = out[j];
  if (first === undefined) return out;
  const slash = /^([a-z]+)\/(.+)$/.exec(first);
  const type = slash ? slash[1]! : first;
  const sub = types[type];
  if (!sub) return out;
  const rest = out.slice(j + 1);
  // Every later NAME may carry the type too (`get pod/a pod/b`); a value of an option never does.
  const names: string[] = [];
  for (let k = 0; k < rest.length; k++) {
    const word = rest[k]!;
    if (takesNext(word, VERB_VALUE_OPTIONS) && k + 1 < rest.length) {
      names.push(word, rest[++k]!);
      continue;
    }
    const m = /^([a-z]+)\/(.+)$/.exec(word);
    names.push(m && types[m[1]!] === sub ? m[2]! : word);
  }
  const between = out.slice(verbAt + 1, j);
  return [...out.slice(0, verbAt + 1), sub, ...between, ...(slash ? [slash[2]!] : []), ...names];
}
