import { timerDelay } from '../base/duration.js';
import { GarbageCollector, type ContainerGcResult } from '../gc/collector.js';
import type { Logger } from '../log/logger.js';
import { allContainers } from '../manifest/types.js';
import type { PodCache } from '../pleg/cache.js';
import type { PodTurns } from '../reconcile/pod-turns.js';
import type { PodEngine } from '../runtime/roles.js';
import type { DesiredSet } from './desired-set.js';
import type { AgentOptions } from './options.js';

/** The agent's garbage collector: its policies from the options; the images its declared pods need are never candidates. */
export function collectorFor(rt: PodEngine, o: AgentOptions, log: Logger, set: () => Pick<DesiredSet, 'pods'>): GarbageCollector {
  return new GarbageCollector(rt, {
    stateDir: o.runtime.stateDir,
    pauseImage: o.runtime.pauseImage,
    ...(o.gc?.containers ? { containers: o.gc.containers } : {}),
    ...(o.gc?.images ? { images: o.gc.images } : {}),
    log,
    neededImages: () =>
      set()
        .pods()
        .flatMap((d) => allContainers(d.pod).map((c) => c.image)),
  });
}

/**
 * One container GC sweep from the cache. Whole pods go only when every source has loaded (else
 * "not desired" may just mean "not read yet").
 */
export async function sweepContainers(
  x: { gc: GarbageCollector; set: Pick<DesiredSet, 'loaded' | 'uids' | 'mayDelete'>; cache: Pick<PodCache, 'pods'>; workers: Pick<PodTurns, 'working'> },
  dryRun: boolean,
): Promise<ContainerGcResult> {
  const ready = x.set.loaded;
  const pods = x.cache.pods();
  // Protected pods (their source cannot say they are unwanted) count as desired here too, and so
  // do pods whose worker is at work: a pod being created or deleted is its worker's, whose
  // creates would otherwise lose their directory (bind source path does not exist).
  const desired = ready ? new Set([...x.set.uids(), ...pods.filter((o) => !x.set.mayDelete(o)).map((o) => o.uid), ...x.workers.working()]) : undefined;
  return x.gc.collectContainers(pods, desired, dryRun);
}

/** The periodic sweeps: containers every `gc.periodMs`, images every `gc.imagePeriodMs` unless image GC is off. Their timers, to clear. */
export function startSweeps(o: AgentOptions, log: Logger, containers: () => Promise<unknown>, images: () => Promise<unknown>): NodeJS.Timeout[] {
  const timers: NodeJS.Timeout[] = [];
  const every = (ms: number, fn: () => Promise<unknown>): void => {
    const t = setInterval(() => void fn().catch((err: unknown) => log.warn(`gc: ${(err as Error).message}`)), timerDelay(ms));
    t.unref();
    timers.push(t);
  };
  every(o.gc?.periodMs ?? 60_000, containers);
  if (o.gc?.imageGc !== false) every(o.gc?.imagePeriodMs ?? 300_000, images);
  return timers;
}
