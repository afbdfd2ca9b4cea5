import { silentLogger } from '../log/silent.js';
import type { DesiredPod } from '../manifest/types.js';
import { PodCache } from '../pleg/cache.js';
import { DEFAULT_BACKOFF, type BackoffPolicy } from '../reconcile/backoff.js';
import { describeNotReady, type PodLook, type PodLooker, type Verdict } from '../reconcile/converge.js';
import { specOf } from '../reconcile/lifecycle.js';
import { hasActions, planApply, type PodPlan } from '../reconcile/plan.js';
import { heldSinceListed, waitsStuck } from '../reconcile/stuck.js';
import { ContainerImageError, executeRemoval } from '../reconcile/sync.js';
import { groupObserved, isActive, latestByName, type EngineRecord } from '../runtime/observed.js';
import type { PodEngine } from '../runtime/roles.js';
import { toV1Status, type V1Pod } from '../status/v1.js';
import { PodSyncer } from './pod-syncer.js';

export interface PodOutcome {
  key: string;
  error?: string;
  /** The container whose image could not be had, when that is why. */
  image?: { container: string; image: string; reason: string; message: string };
}

/**
 * `apply` with no agent runs the agent's own pod worker (`PodSyncer.turn`: the plan, the
 * back-off gate, the executor, the prober) while it waits, one turn per pod at a time, so that
 * every behaviour of a sync exists once. An engine with a restart policy keeps the pods alive after
 * `apply` exits: the worker runs in its `engineRestarts` mode (see WorkerMode). One without (a CRI
 * runtime) is never asked for one: the worker restarts and probes as the agent's does while
 * `apply` waits, and the pods' status claims no restart by the engine. No event stream, apply being brief:
 * each look lists the engine, as the agent's relist does, then gives each pod a turn and judges it.
 */
export class ApplyDriver implements PodLooker {
  readonly drives = true;
  private readonly cache: PodCache;
  private readonly worker: PodSyncer;
  /** The cache is as fresh as a list: `apply` just listed and changed nothing. The first look takes it as it is. */
  private listedNow = false;
  /** The plans given to `apply` came from `plan`: each turn carries out its pod's as it is. */
  private planned = false;

  constructor(
    private readonly rt: PodEngine,
    applySet: string,
    backoff: BackoffPolicy = DEFAULT_BACKOFF,
    o: { lookAfter?: boolean } = {},
  ) {
    this.cache = new PodCache(rt, () => undefined);
    // Its wake-ups (a probe's result, a back-off's end) need no timer: apply looks every poll.
    this.worker = new PodSyncer(
      rt,
      this.cache,
      backoff,
      () => undefined,
      silentLogger,
      1,
      undefined,
      {},
      {
        engineRestarts: rt.capabilities.restartPolicy,
        applySet,
        // `apply --no-wait`: what a turn made is read by nobody after it.
        ...(o.lookAfter === false ? { noLookAfter: true } : {}),
      },
    );
  }

  /**
   * The plan, decided by each pod's worker from `listed` as its turn decides (with the engine's
   * restarts it takes for its own): what `apply` prints and then hands to `apply` unchanged.
   */
  async plan(desired: DesiredPod[], listed: readonly EngineRecord[], prune?: { applySet: string; keep?: ReadonlySet<string> }): Promise<PodPlan[]> {
    await this.cache.relist(listed);
    const decided = new Map(await Promise.all(desired.map(async (d) => [d.uid, await this.worker.decide(d)] as const)));
    this.planned = true;
    return planApply(desired, groupObserved(listed), prune, decided);
  }

  /**
   * The plan carried out once: a turn of each pod's worker, and the deletions of a prune, all at
   * once. Errors stay per pod. `listed`: the engine's list the plan was made from, taken as the
   * cache's (a list costs the engine O(every container it holds)).
   */
  async apply(plans: PodPlan[], listed?: readonly EngineRecord[]): Promise<PodOutcome[]> {
    // Planned by `plan` from this list: the cache holds it already.
    if (!this.planned) await this.cache.relist(listed);
    const outcomes = await Promise.all(
      plans.map(async (p): Promise<PodOutcome> => {
        try {
          if (p.verdict === 'deleted') {
            if (p.observed) await executeRemoval(this.rt, p.observed, p.actions);
            return { key: p.key };
          }
          if (!p.desired) return { key: p.key };
          const { failed } = await this.worker.turn(p.desired, undefined, this.planned ? p.actions : undefined);
          if (failed) throw failed;
          return { key: p.key };
        } catch (err) {
          if (err instanceof ContainerImageError && p.desired) {
            const image = specOf(p.desired.pod, err.container)?.image ?? '';
            return { key: p.key, error: err.message, image: { container: err.container, image, reason: err.imageError.reason, message: err.message } };
          }
          return { key: p.key, error: (err as Error).message };
        }
      }),
    );
    // Nothing made or removed: the list is a moment old. Else what the engine did since to what was
    // just started (a container that exits at once, restarted in place) is only in a new list.
    this.listedNow = listed !== undefined && plans.every((p) => !hasActions(p.actions)) && outcomes.every((x) => !x.error);
    return outcomes;
  }

  /** A turn of each pod's worker, then its verdict; a turn that throws (the engine, mid-turn) ends its wait. */
  async look(pods: DesiredPod[], holdMs?: number): Promise<Map<string, PodLook>> {
    if (!this.listedNow) await this.cache.relist();
    this.listedNow = false;
    const looks = await Promise.all(
      pods.map(async (d): Promise<PodLook> => {
        try {
          await this.worker.turn(d);
          return { ...(await this.verdict(d, holdMs)), observed: this.cache.pod(d.uid) };
        } catch (err) {
          return { error: (err as Error).message };
        }
      }),
    );
    return new Map(pods.map((d, i) => [d.uid, looks[i] as PodLook]));
  }

  /**
   * The worker's status of the pod, judged for apply. The engine's restarts in place and the exit
   * code of the run that ended are only in an inspect, which no event stream tells of here: read
   * again when the pod looks Ready or stuck. None is read when the list already shows every
   * container running for longer than the hold (`heldSince`): the pod is Ready by its list alone.
   */
  private async verdict(d: DesiredPod, holdMs?: number): Promise<{ verdict: Verdict; heldSince?: number }> {
    const judge = async (fresh: boolean, read = true): Promise<Verdict> => {
      const s = await this.worker.settled(d, fresh, read);
      return {
        done: s.done,
        failed: s.failed,
        message: describeNotReady(s.status),
        status: toV1Status(s.status, { hostIP: this.rt.hostIP }) as V1Pod['status'],
      };
    };
    // Containers with no details yet are read by the first judgement itself: no second read of them.
    const o = this.cache.pod(d.uid);
    const readNow = !o || o.containers.filter(isActive).every((c) => this.worker.startedAt(d.uid, c.id) === undefined);
    const listed = readNow && o && holdMs !== undefined ? heldSinceListed(d, o) : undefined;
    if (listed !== undefined && Date.now() - listed >= holdMs!) {
      const verdict = await judge(false, false);
      if (verdict.done && !verdict.failed && verdict.status?.phase === 'Running') return { verdict, heldSince: listed };
    }
    const first = await judge(false);
    const looksReady = first.done && !first.failed && first.status?.phase === 'Running';
    const looksStuck = !first.done && first.status !== undefined && waitsStuck(first.status);
    if (!looksReady && !looksStuck) return { verdict: first };
    const fresh = readNow ? first : await judge(true);
    return { verdict: this.firstRestartInPlace(d, fresh) ? { ...fresh, unjudged: true } : fresh };
  }

  /**
   * Whether a container waits for the engine's first restart of it in place: the engine counts
   * that restart when it decides on it, so its status says CrashLoopBackOff with one restart
   * already. As the kubelet's, a first restart is at once and no crash loop: not judged stuck.
   */
  private firstRestartInPlace(d: DesiredPod, v: Verdict): boolean {
    const o = this.cache.pod(d.uid);
    const statuses = [...(v.status?.initContainerStatuses ?? []), ...(v.status?.containerStatuses ?? [])];
    return (
      !!o &&
      [...latestByName(o).values()].some(
        (c) => c.engineRestarting === true && c.restartCount === 0 && (statuses.find((s) => s.name === c.name)?.restartCount ?? 0) <= 1,
      )
    );
  }

  stop(): void {
    this.worker.stop();
    this.cache.stop();
  }
}
