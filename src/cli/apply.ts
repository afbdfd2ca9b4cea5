import { createHash } from 'node:crypto';
import { totalmem } from 'node:os';
import { oomProtectionLost } from '../manifest/qos.js';
import { agentLooker, pruneAfterApply, waitForPods } from '../reconcile/converge.js';
import { groupObserved, type EngineRecord, type ObservedPod } from '../runtime/observed.js';
import { ApplyDriver } from '../agent/apply-driver.js';
import { planApply, type PodPlan } from '../reconcile/plan.js';
import type { DesiredPod } from '../manifest/types.js';
import type { PodEngine } from '../runtime/roles.js';
import { becomeActor, type Actor } from './actor.js';
import { agentRunning, lockHolder } from '../agent/lock.js';
import { agentPost, type AgentAnswer, type ApplyAnswer, type ApplyAsk } from '../server/client.js';
import { appliedDir, appliedElsewhere, stageAppliedSet } from '../sources/applied-sets.js';
import { canonicalSource } from '../sources/read.js';
import { EXIT, type GlobalOptions, type Io } from './context.js';
import { prefetchEngine, type EnginePrefetch } from './engine-prefetch.js';
import { printPlan } from './print.js';
import { anyPullFailures, recordPullFailures } from './pull-failures.js';
import { loadManifestArgs } from './validate.js';
import { openManifestCache } from './manifest-cache.js';
import { buildStamp } from '../base/package-file.js';

export interface ApplyOptions {
  dryRun: boolean;
  prune: boolean;
  wait: boolean;
  timeoutMs: number;
}

/** Names the set of paths one `apply` was given, order-insensitively. */
export function applySetId(paths: string[]): string {
  const canonical = [...new Set(paths.map(canonicalSource))].sort();
  return createHash('sha256').update(canonical.join('\n')).digest('hex').slice(0, 16);
}

/** `ahead`: the engine already asked (engine-prefetch.ts), before this module was loaded. */
export async function applyCommand(paths: string[], o: ApplyOptions, g: GlobalOptions, io: Io, ahead?: EnginePrefetch): Promise<number> {
  const engine = ahead ?? prefetchEngine(g, io);
  await engine.sent;
  // Everything is read and validated before the engine is changed: one bad file changes nothing.
  const known = openManifestCache(g.stateDir, buildStamp(), g.policy);
  const loaded = await loadManifestArgs(paths, io, g.policy, known).catch((err: unknown) => {
    engine.drop();
    throw err;
  });
  if (!loaded) {
    engine.drop();
    io.err('podrun: nothing was applied');
    return EXIT.failed;
  }

  const rt = await engine.rt;
  const memory = totalmem();
  for (const p of loaded.pods) {
    const lost = oomProtectionLost(p.pod, rt.oomScoreFloor, memory);
    if (lost) io.err(`warning: pod/${p.key}: ${lost}`);
  }
  const applySet = applySetId(paths);
  // One actor per state directory: with an agent, it records the set and acts, and this apply
  // asks it (a dry run too: its plan is the agent's); without, this apply holds the lock until it
  // ends, so an agent or another command started meanwhile is told instead of racing. A dry run
  // changes nothing and takes no lock.
  let actor: Actor | undefined;
  if (o.dryRun) actor = (await lockHolder(g.stateDir))?.kind === 'agent' ? { kind: 'agent' } : undefined;
  else {
    actor = await becomeActor(g.stateDir, 'apply', io);
    if (!actor) {
      engine.drop();
      io.err('podrun: nothing was applied');
      return EXIT.failed;
    }
  }
  try {
    if (actor?.kind === 'agent') return await askAgent(rt, applySet, loaded.pods, o, g, io);
    return await applyHere(rt, engine, applySet, loaded.pods, actor, o, g, io);
  } finally {
    if (actor?.kind === 'cli') actor.release();
    // Last, off the engine's path: a dry run writes nothing.
    if (!o.dryRun) known.save();
  }
}

/** No agent: this apply, holding the lock (a dry run: none), plans with the agent's pod worker and carries its plan out. */
async function applyHere(
  rt: PodEngine,
  engine: EnginePrefetch,
  applySet: string,
  pods: DesiredPod[],
  actor: Actor | undefined,
  o: ApplyOptions,
  g: GlobalOptions,
  io: Io,
): Promise<number> {
  // The set's record written aside while the engine's list comes, its fsync off the engine's path;
  // put in place below, at the same point as ever (a dry run writes nothing).
  const staged = o.dryRun ? undefined : stageAppliedSet(g.stateDir, applySet, pods, o.prune);
  let durable: Promise<void> = Promise.resolve();
  let driver: ApplyDriver | undefined;
  try {
    const listed = await engine.listed;
    const prune = o.prune ? { applySet, keep: appliedElsewhere(g.stateDir, applySet) } : undefined;
    // The agent's pod worker, run here; its decision is the plan printed and then carried out as it is.
    if (actor?.kind === 'cli') driver = new ApplyDriver(rt, applySet, undefined, { lookAfter: o.wait });
    const plans = driver ? await driver.plan(pods, listed, prune) : planApply(pods, groupObserved(listed), prune);
    printPlan(io, plans, o.dryRun);
    if (!staged || !driver) return EXIT.ok;

    // Recorded first, so an agent (now or later) supervises exactly what was applied. A state dir
    // that cannot take it (full, read-only) stops the apply before the engine is touched.
    try {
      ({ durable } = await staged.commit());
    } catch (err) {
      io.err(`podrun: cannot record the applied set in ${appliedDir(g.stateDir)}: ${(err as Error).message}`);
      io.err('podrun: nothing was applied');
      return EXIT.failed;
    }
    // An engine that restarts nothing by itself leaves the pods unsupervised once apply exits: said
    // once, whatever the number of pods, rather than a restart policy claimed and dropped.
    if (!rt.capabilities.restartPolicy && pods.length > 0) io.err(noRestartsNote(rt));
    return await applyAlone(rt, driver, plans, listed, pods, o, g, io);
  } finally {
    driver?.stop();
    staged?.discard();
    // The record's directory fsync ran beside the engine's calls: the apply ends once it is durable.
    await durable;
  }
}

/** How long the agent may take to record and merge a set: a moment, unless its disk or its one thread is very slow. */
const AGENT_ANSWER_MS = 60_000;

/** How long an agent that holds the lock may take to open its socket: it does once its sources have first loaded. */
const AGENT_SOCKET_WAIT_MS = 30_000;

/** The set asked of the agent; asked again while an agent that holds the lock has not opened its socket yet. */
async function postToAgent(stateDir: string, ask: ApplyAsk): Promise<AgentAnswer<ApplyAnswer>> {
  const end = Date.now() + AGENT_SOCKET_WAIT_MS;
  for (;;) {
    const r = await agentPost<ApplyAnswer>(stateDir, '/pods/apply', ask, AGENT_ANSWER_MS);
    const starting = r.status === 0 && (r.code === 'ENOENT' || r.code === 'ECONNREFUSED');
    if (!starting || Date.now() > end || !(await agentRunning(stateDir))) return r;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Why the agent took no set, as the CLI says it; `unknown`: it was sent and no answer came, so it may yet be applied. */
function notApplied(r: AgentAnswer<ApplyAnswer>, stateDir: string): { lines: string[]; unknown?: boolean } {
  const agent = `the agent supervising ${stateDir}`;
  if (r.status === 422) {
    let refused: string[];
    try {
      refused = (JSON.parse(r.text) as ApplyAnswer).refused ?? [];
    } catch {
      refused = [r.text.trim()];
    }
    return { lines: [`podrun: ${agent} refused the set:`, ...refused] };
  }
  if (r.status === 404) return { lines: [`podrun: ${agent} takes no set over its socket (an earlier podrun?); restart it with this one`] };
  if (r.status === 0 && !r.code)
    return { lines: [`podrun: ${agent} did not answer: ${r.text}; it may still apply the set (podrun get pods shows what runs)`], unknown: true };
  return { lines: [`podrun: ${agent} did not take the set: ${r.text.trim() || `status ${r.status}`}`] };
}

/**
 * With an agent: it is asked (the pods as loaded here, where each came from, --prune), validates
 * them again, records the set and carries out the plan it answers with; this apply prints that
 * plan and waits. It writes no applied set and changes no pod itself.
 */
async function askAgent(rt: PodEngine, applySet: string, pods: DesiredPod[], o: ApplyOptions, g: GlobalOptions, io: Io): Promise<number> {
  const ask: ApplyAsk = { applySet, pods: pods.map((d) => ({ source: d.origin.source, pod: d.pod })), prune: o.prune, dryRun: o.dryRun };
  const r = await postToAgent(g.stateDir, ask);
  const plans = r.status === 200 ? r.body?.plans : undefined;
  if (!plans) {
    const why = notApplied(r, g.stateDir);
    for (const l of why.lines) io.err(l);
    if (!why.unknown) io.err('podrun: nothing was applied');
    return EXIT.failed;
  }
  printPlan(io, plans, o.dryRun);
  if (o.dryRun) return EXIT.ok;
  io.err(`podrun: the agent supervising ${g.stateDir} carries out the plan`);
  if (!o.wait || pods.length === 0) return EXIT.ok;
  const result = await waitForPods(rt, pods, agentLooker(rt, g.stateDir), { timeoutMs: o.timeoutMs });
  for (const p of result.problems) io.err(`podrun: pod/${p.key}: ${p.message}`);
  if (result.ok) io.out(`${pods.length} pod${pods.length === 1 ? '' : 's'} ready`);
  return result.ok ? EXIT.ok : EXIT.failed;
}

/** The one line `apply` says, with no agent, on an engine without restart policies. */
export function noRestartsNote(rt: Pick<PodEngine, 'endpoint'>): string {
  return (
    `podrun: note: the engine at ${rt.endpoint} restarts no container by itself: once apply exits, ` +
    'nothing restarts these pods or runs their probes; `podrun run` (or the podrun service) does'
  );
}

async function applyAlone(
  rt: PodEngine,
  driver: ApplyDriver,
  plans: PodPlan[],
  listed: readonly EngineRecord[],
  pods: DesiredPod[],
  o: ApplyOptions,
  g: GlobalOptions,
  io: Io,
): Promise<number> {
  const outcomes = await driver.apply(plans, listed);
  const failures = outcomes.filter((x) => x.error);
  const at = new Date().toISOString();
  // With no pod's failed pull on record, a pod without one has no record to remove.
  const recorded = anyPullFailures(g.stateDir);
  for (const [i, p] of plans.entries()) {
    if (!p.desired) continue;
    const img = outcomes[i]?.image;
    if (!img && !recorded) continue;
    try {
      recordPullFailures(g.stateDir, p.desired.uid, p.key, img ? [{ ...img, at }] : []);
    } catch (err) {
      io.err(`warning: pod/${p.key}: cannot record its failed pull: ${(err as Error).message}`);
    }
  }
  for (const f of failures) io.err(`podrun: pod/${f.key}: ${f.error}`);
  const ok = pods.filter((p) => !failures.some((f) => f.key === p.key));

  let waitOk = true;
  // The pods as the wait last saw them: the prune after needs no list of its own.
  const looked = new Map<string, ObservedPod | undefined>();
  if (o.wait && ok.length > 0) {
    const result = await waitForPods(rt, ok, driver, { timeoutMs: o.timeoutMs, seen: looked });
    for (const p of result.problems) io.err(`podrun: pod/${p.key}: ${p.message}`);
    waitOk = result.ok;
    if (result.ok) io.out(`${ok.length} pod${ok.length === 1 ? '' : 's'} ready`);
  }
  // Dead instances come from restarts (the wait) or from what the pod held before; a pod made
  // anew and not waited on holds one instance of each: nothing to look for.
  const prunable = pods.filter((p) => o.wait || plans.some((x) => x.desired?.uid === p.uid && x.observed));
  await pruneAfterApply(rt, new Set(prunable.map((p) => p.uid)), looked);
  return failures.length === 0 && waitOk ? EXIT.ok : EXIT.failed;
}
