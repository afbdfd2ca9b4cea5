import type { Logger } from '../log/logger.js';
import { formatIssue } from '../manifest/errors.js';
import { loadManifestText } from '../manifest/load.js';
import type { PodPolicy } from '../manifest/policy.js';
import type { DesiredPod } from '../manifest/types.js';
import type { PodCache } from '../pleg/cache.js';
import { planApply, type PodActions, type PodPlan } from '../reconcile/plan.js';
import type { ApplyAnswer, ApplyAsk, ShownPlan } from '../server/client.js';
import { appliedDir, appliedElsewhere, stageAppliedSet } from '../sources/applied-sets.js';
import { APPLY_PREFIX, shownSource } from '../sources/origin-names.js';

// `podrun apply` asked over the socket: the agent, the state directory's one actor, takes the set.
// It validates the pods again (the socket is a boundary, and the node's policy is the agent's),
// records the set where its applied source reads it (the record stays what an agent starting
// later supervises), reads it back and merges at once, and answers with the plan its workers
// carry out.

export interface AskedApplyDeps {
  stateDir: string;
  policy: PodPolicy;
  cache: Pick<PodCache, 'pods'>;
  /** What the pod's next turn would decide, with no step of it taken (`PodSyncer.foresee`). */
  foresee: (d: DesiredPod) => PodActions;
  /** The set is recorded: its record read back now and the sources merged, with no wait for a watch. */
  recorded: () => void;
  log: Logger;
}

/** A pod as asked and validated: what runs (origin the set), and what the record keeps (origin where it was applied from). */
interface Checked {
  desired: DesiredPod;
  recorded: DesiredPod;
}

/**
 * The pods of an apply validated again, as the applied source validates the set's record, with the
 * agent's policy; every problem said, each naming where the pod was applied from.
 */
export function checkAsked(ask: ApplyAsk, policy: PodPolicy): { pods: Checked[] } | { refused: string[] } {
  const pods: Checked[] = [];
  const refused: string[] = [];
  const at = new Map<string, number>();
  for (const [i, p] of ask.pods.entries()) {
    const file = `${shownSource(p.source)} (pods[${i}] as sent)`;
    const r = loadManifestText({ file, source: `${APPLY_PREFIX}${ask.applySet}`, text: JSON.stringify(p.pod) }, policy);
    const errors = r.issues.filter((x) => x.severity === 'error');
    refused.push(...errors.map(formatIssue));
    for (const d of errors.length ? [] : r.pods) {
      const first = at.get(d.key);
      if (first !== undefined) refused.push(`pods[${i}]: pod ${d.key} is also pods[${first}]`);
      at.set(d.key, i);
      pods.push({ desired: d, recorded: { ...d, origin: { ...d.origin, source: p.source } } });
    }
  }
  return refused.length ? { refused } : { pods };
}

/** A plan's line as the CLI prints it: none of the pods themselves (their specs, env values) goes back. */
function shown(p: PodPlan): ShownPlan {
  const a = p.actions;
  return {
    key: p.key,
    verdict: p.verdict,
    actions: {
      ...(a.reason ? { reason: a.reason } : {}),
      containersToKill: a.containersToKill.map((k) => ({ name: k.name, reason: k.reason })),
      containersToStart: a.containersToStart.map((s) => ({ name: s.name, reason: s.reason })),
    },
  };
}

/** `2 created, 1 unchanged`. */
function tally(plans: PodPlan[]): string {
  const n = new Map<string, number>();
  for (const p of plans) n.set(p.verdict, (n.get(p.verdict) ?? 0) + 1);
  return [...n].map(([verdict, count]) => `${count} ${verdict}`).join(', ') || 'no pods';
}

/**
 * The set validated, planned, and (unless a dry run) recorded and merged; answered once the record
 * is durable. A set that cannot be recorded throws, having changed nothing.
 */
export async function applyAsked(x: AskedApplyDeps, ask: ApplyAsk): Promise<ApplyAnswer> {
  const checked = checkAsked(ask, x.policy);
  if ('refused' in checked) {
    x.log.warn(`apply refused: set ${ask.applySet}: ${checked.refused.join('; ')}`);
    return { refused: checked.refused };
  }
  const desired = checked.pods.map((p) => p.desired);
  // As `apply` plans without an agent: the pods an earlier apply of this set made and this one
  // leaves out go, but those applied again from elsewhere since (another set holds them).
  const prune = ask.prune ? { applySet: ask.applySet, keep: appliedElsewhere(x.stateDir, ask.applySet) } : undefined;
  const decided = new Map(desired.map((d) => [d.uid, x.foresee(d)] as const));
  const plans = planApply(desired, x.cache.pods(), prune, decided);
  if (ask.dryRun) return { plans: plans.map(shown) };

  let durable: Promise<void>;
  let staged: ReturnType<typeof stageAppliedSet> | undefined;
  try {
    staged = stageAppliedSet(
      x.stateDir,
      ask.applySet,
      checked.pods.map((p) => p.recorded),
      ask.prune,
    );
    ({ durable } = await staged.commit());
  } catch (err) {
    throw new Error(`cannot record the applied set in ${appliedDir(x.stateDir)}: ${(err as Error).message}`);
  } finally {
    staged?.discard();
  }
  x.log.info(`apply asked: set ${ask.applySet} recorded (${tally(plans)})`);
  x.recorded();
  await durable;
  return { plans: plans.map(shown) };
}
