import { renderJsonPath } from './jsonpath.js';
import { EXIT, makeRuntime, type GlobalOptions, type Io } from './context.js';
import { podNotFound, POD_TYPES, selectorFrom } from './pod-args.js';
import { loadPodViews, type V1Pod } from './views.js';

export interface WaitOptions {
  for: string;
  namespace: string;
  selector?: string;
  all: boolean;
  timeout: number;
}

type Check = (p: V1Pod | undefined) => boolean;

/** `--for=condition=Ready`, `--for=condition=Ready=false`, `--for=delete`, `--for=jsonpath='{.status.phase}'=Running`. */
export function parseFor(text: string): Check {
  if (text === 'delete') return (p) => p === undefined;
  let m = /^condition=([^=]+)(?:=(.*))?$/.exec(text);
  if (m) {
    const type = m[1]!.toLowerCase();
    const want = (m[2] ?? 'true').toLowerCase();
    return (p) => p?.status.conditions?.some((c) => c.type.toLowerCase() === type && c.status.toLowerCase() === want) ?? false;
  }
  m = /^jsonpath=(\{.*\})=(.*)$/.exec(text);
  if (m) {
    const [template, want] = [m[1]!, m[2]!];
    renderJsonPath(template, {});
    return (p) => p !== undefined && renderJsonPath(template, p) === want;
  }
  throw new Error(`unrecognized condition "${text}" (use condition=Ready, condition=Ready=false, delete, or jsonpath='{.status.phase}'=Running)`);
}

/** Waits until every chosen pod meets the condition, as kubectl wait. */
export async function waitCommand(names: string[], o: WaitOptions, g: GlobalOptions, io: Io): Promise<number> {
  let check: Check;
  try {
    check = parseFor(o.for);
  } catch (err) {
    io.err(`podrun: ${(err as Error).message}`);
    return EXIT.usage;
  }
  const select = selectorFrom(o.selector, io);
  if (!select) return EXIT.usage;
  const wanted = names.filter((n) => !POD_TYPES.includes(n)).map((n) => n.replace(/^(pod|pods|po)\//, ''));
  if (!wanted.length && !o.selector && !o.all) {
    io.err('podrun: name the pods (pod/NAME), or give -l SELECTOR or --all');
    return EXIT.usage;
  }
  const rt = await makeRuntime(g, io);
  const inNs = async (): Promise<V1Pod[]> => (await loadPodViews(rt, g.stateDir)).pods.filter((p) => p.metadata.namespace === o.namespace);
  // With a selector or --all, the pods are the ones there at the start, as kubectl resolves them.
  const first = await inNs();
  const chosen = wanted.length ? wanted : first.filter((p) => o.all || select(p.metadata.labels)).map((p) => p.metadata.name);
  if (!chosen.length) {
    io.err(`error: no matching resources found`);
    return EXIT.failed;
  }
  if (o.for !== 'delete') {
    for (const n of wanted) {
      if (!first.some((p) => p.metadata.name === n)) {
        podNotFound(
          io,
          n,
          o.namespace,
          (await loadPodViews(rt, g.stateDir)).pods.map((p) => p.metadata),
        );
        return EXIT.failed;
      }
    }
  }
  const deadline = Date.now() + o.timeout;
  const pending = new Set(chosen);
  for (;;) {
    const now = await inNs();
    for (const n of [...pending]) {
      if (check(now.find((p) => p.metadata.name === n))) {
        io.out(`pod/${n} condition met`);
        pending.delete(n);
      }
    }
    if (!pending.size) return EXIT.ok;
    if (Date.now() >= deadline) {
      for (const n of pending) io.err(`error: timed out waiting for the condition on pods/${n}`);
      return EXIT.failed;
    }
    await new Promise((r) => setTimeout(r, Math.min(500, Math.max(0, deadline - Date.now()))));
  }
}
