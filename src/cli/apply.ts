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
  // The set's record written aside while the engine's list comes, its fsync off the engine's path;
  // put in place below, at the same point as ever (a dry run writes nothing).
  const staged = o.dryRun ? undefined : stageAppliedSet(g.stateDir, applySet, loaded.pods, o.prune);
  let durable: Promise<void> = Promise.resolve();
  let actor: Actor | undefined;
  let driver: ApplyDriver | undefined;
  try {
    const listed = await engine.listed;
    // One actor per state directory: with an agent, it acts; without, this apply holds the lock
    // until it ends, so an agent or another command started meanwhile is told instead of racing.
    if (staged) {
      actor = await becomeActor(g.stateDir, 'apply', io);
      if (!actor) {
        io.err('podrun: nothing was applied');
        return EXIT.failed;
      }
    }
    const prune = o.prune ? { applySet, keep: appliedElsewhere(g.stateDir, applySet) } : undefined;
    // No agent: the agent's pod worker, run here; its decision is the plan printed and then carried out as it is.
    if (actor?.kind === 'cli') driver = new ApplyDriver(rt, applySet, undefined, { lookAfter: o.wait });
    const plans = driver ? await driver.plan(loaded.pods, listed, prune) : planApply(loaded.pods, groupObserved(listed), prune);
    printPlan(io, plans, o.dryRun);
    if (!staged) return EXIT.ok;

    // Recorded first, so an agent (now or later) supervises exactly what was applied. A state dir
    // that cannot take it (full, read-only) stops the apply before the engine is touched.
    try {
      ({ durable } = await staged.commit());
    } catch (err) {
      io.err(`podrun: cannot record the applied set in ${appliedDir(g.stateDir)}: ${(err as Error).message}`);
      io.err('podrun: nothing was applied');
      return EXIT.failed;
    }
    if (!driver) return await handedOver(rt, loaded.pods, o, g, io);
    // An engine that restarts nothing by itself leaves the pods unsupervised once apply exits: said
    // once, whatever the number of pods, rather than a restart policy claimed and dropped.
    if (!rt.capabilities.restartPolicy && loaded.pods.length > 0) io.err(noRestartsNote(rt));
    return await applyAlone(rt, driver, plans, listed, loaded.pods, o, g, io);
  } finally {
    driver?.stop();
    if (actor?.kind === 'cli') actor.release();
    staged?.discard();
    // The record's directory fsync ran beside the engine's calls: the apply ends once it is durable.
    await durable;
    // Last, off the engine's path: a dry run writes nothing.
    if (!o.dryRun) known.save();
  }
}

/** The agent supervising the state directory carries the applied set out: apply only waits, and changes nothing. */
async function handedOver(rt: PodEngine, pods: DesiredPod[], o: ApplyOptions, g: GlobalOptions, io: Io): Promise<number> {
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
