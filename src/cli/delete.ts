import type { LockHolder } from '../agent/lock.js';
import type { ObservedPod } from '../runtime/observed.js';
import { agentPost, type DeleteAnswer, type DeleteAsk } from '../server/client.js';
import { becomeActor } from './actor.js';
import { ManifestError } from '../manifest/errors.js';
import type { PodEngine } from '../runtime/roles.js';
import { loadManifestSet } from '../manifest/load.js';
import { deletionPlan, graceOverride } from '../reconcile/deletion-plan.js';
import { graceOf, removePod } from '../reconcile/lifecycle.js';
import { forgetApplied } from '../sources/applied-sets.js';
import { recordPullFailures } from './pull-failures.js';
import { readManifestInputs } from '../sources/read.js';
import { EXIT, makeRuntime, type GlobalOptions, type Io } from './context.js';
import { printIssues } from './print.js';
import { noResources, podArg, POD_TYPES, selectorFrom } from './pod-args.js';
import type { Selector } from './selector.js';

export interface DeleteOptions {
  filename?: string[];
  namespace?: string;
  selector?: string;
  all?: boolean;
  allNamespaces?: boolean;
  gracePeriod?: number;
  now?: boolean;
  force?: boolean;
  ignoreNotFound: boolean;
}

/** How long past the longest grace period the agent is given to answer: the engine's calls, a sync it cancels first. */
const AGENT_SLACK_S = 120;

/** kubectl's spellings: `pod NAME...`, `pods NAME`, `pod/NAME`; a bare `NAME` or `namespace/NAME` as before. */
export function podKeys(args: string[], namespace: string): string[] {
  const rest = POD_TYPES.includes(args[0] ?? '') ? args.slice(1) : args;
  return rest.map((a) => {
    const p = podArg(a, namespace);
    return `${p.namespace}/${p.name}`;
  });
}

/**
 * How to remove for good a pod that a watched directory or a polled URL declares (the agent makes
 * it again, as the kubelet does a static pod's mirror deleted through the apiserver); undefined for
 * a pod an apply made, which deleting forgets.
 */
export function comesBack(p: { source: string; applySet?: string }): string | undefined {
  if (p.applySet) return undefined;
  if (p.source.startsWith('file:')) return `delete it from ${p.source.slice('file:'.length)}`;
  if (p.source.startsWith('url:')) return `delete it from what ${p.source.slice('url:'.length)} serves`;
  return undefined;
}

/** Deletes pods gracefully: stop signal, grace period, SIGKILL; then removes them and their emptyDirs. */
export async function deleteCommand(names: string[], o: DeleteOptions, g: GlobalOptions, io: Io): Promise<number> {
  const wanted: { key: string; uid?: string }[] = [];
  if (o.filename?.length) {
    const read = await readManifestInputs(o.filename);
    try {
      const loaded = loadManifestSet(read.texts);
      if (read.issues.some((i) => i.severity === 'error')) {
        printIssues(io, read.issues);
        return EXIT.failed;
      }
      wanted.push(...loaded.pods.map((p) => ({ key: p.key, uid: p.uid })));
    } catch (err) {
      if (!(err instanceof ManifestError)) throw err;
      printIssues(io, [...read.issues, ...err.issues]);
      return EXIT.failed;
    }
  }
  const ns = o.namespace ?? 'default';
  wanted.push(...podKeys(names, ns).map((key) => ({ key })));
  let select: Selector | undefined;
  if (o.selector !== undefined) {
    select = selectorFrom(o.selector, io);
    if (!select) return EXIT.usage;
  }
  if (o.all && select) select = undefined;
  if (wanted.length === 0 && !o.all && !select) {
    io.err('podrun: name the pods to delete, or give -f PATH, -l SELECTOR or --all');
    return EXIT.usage;
  }
  const rt = await makeRuntime(g, io);
  const observed = await rt.listPods();
  if (o.all || select) {
    for (const p of observed) {
      if (!o.allNamespaces && p.namespace !== ns) continue;
      if (select && !select(p.spec?.metadata.labels)) continue;
      wanted.push({ key: `${p.namespace}/${p.name}`, uid: p.uid });
    }
  }
  let code: number = EXIT.ok;
  const found = wanted.flatMap((w) => {
    const p = observed.find((x) => (w.uid ? x.uid === w.uid : `${x.namespace}/${x.name}` === w.key));
    if (!p) {
      if (!o.ignoreNotFound) {
        io.err(`podrun: pod/${w.key} not found`);
        code = EXIT.failed;
      }
      return [];
    }
    return [p];
  });
  const unique = [...new Map(found.map((p) => [p.uid, p])).values()];
  if (unique.length === 0 && (o.all || select) && wanted.length === 0) noResources(io, o.allNamespaces ? undefined : ns);
  for (const p of unique) {
    const back = comesBack(p);
    if (back) io.err(`warning: pod/${p.namespace}/${p.name} is declared by ${p.source}: the agent will recreate it; to remove it for good, ${back}`);
  }
  const override = graceOverride(o);
  // Pods deleted now, by uid, told to whoever asks the lock: `get` shows them Terminating.
  const terminating: NonNullable<LockHolder['terminating']> = {};
  const actor = await becomeActor(g.stateDir, 'delete', io, () => ({ terminating }));
  if (!actor) return EXIT.failed;
  if (actor.kind === 'agent') return Math.max(code, await askAgent(unique, override, g, io));
  try {
    return Math.max(code, await deleteHere(rt, unique, override, terminating, g, io));
  } finally {
    actor.release();
  }
}

/** The agent acts: it is asked, and answers once every pod is gone. */
async function askAgent(pods: ObservedPod[], override: number | undefined, g: GlobalOptions, io: Io): Promise<number> {
  if (pods.length === 0) return EXIT.ok;
  const ask: DeleteAsk = {
    pods: pods.map((p) => ({
      uid: p.uid,
      key: `${p.namespace}/${p.name}`,
      ids: [...p.sandboxes, ...p.containers].map((c) => c.id),
      sandboxIds: p.sandboxes.map((s) => s.id),
    })),
    ...(override !== undefined ? { override } : {}),
  };
  // The longest grace period and some slack: the agent answers once the last pod is gone.
  const longest = Math.max(...pods.map((p) => override ?? graceOf(p)));
  const r = await agentPost<DeleteAnswer>(g.stateDir, '/pods/delete', ask, (longest + AGENT_SLACK_S) * 1000);
  if (!r.body) {
    io.err(`podrun: the agent supervising ${g.stateDir} did not delete the pods: ${r.text.trim() || `status ${r.status}`}`);
    return EXIT.failed;
  }
  let code: number = EXIT.ok;
  for (const p of r.body.pods) {
    if (p.error === undefined) io.out(`pod/${p.key} deleted`);
    else {
      io.err(`podrun: pod/${p.key}: ${p.error}`);
      code = EXIT.failed;
    }
  }
  return code;
}

/** No agent: this command, holding the lock, deletes. */
async function deleteHere(
  rt: PodEngine,
  unique: ObservedPod[],
  override: number | undefined,
  terminating: NonNullable<LockHolder['terminating']>,
  g: GlobalOptions,
  io: Io,
): Promise<number> {
  // Forgotten in the applied sets first: all in one pass, one write per set, where one durable
  // rewrite of the set per pod (300-600 ms for 50 on a loaded disk) held the last pods' stop
  // signals back, and every other step with them.
  try {
    forgetApplied(g.stateDir, new Set(unique.map((p) => `${p.namespace}/${p.name}`)));
  } catch (err) {
    io.err(`podrun: cannot forget the pods in their applied sets, nothing deleted: ${(err as Error).message}`);
    return EXIT.failed;
  }
  let code: number = EXIT.ok;
  // Every pod at once: their grace periods overlap (the runtime bounds the engine calls).
  await Promise.all(
    unique.map(async (p) => {
      try {
        recordPullFailures(g.stateDir, p.uid, `${p.namespace}/${p.name}`, []);
        const plan = deletionPlan(p, override);
        terminating[p.uid] = { deletionTimestamp: new Date().toISOString(), deletionGracePeriodSeconds: plan.graceSeconds };
        await removePod(rt, p, plan);
        io.out(`pod/${p.namespace}/${p.name} deleted`);
      } catch (err) {
        io.err(`podrun: pod/${p.namespace}/${p.name}: ${(err as Error).message}`);
        code = EXIT.failed;
      } finally {
        delete terminating[p.uid];
      }
    }),
  );
  return code;
}
