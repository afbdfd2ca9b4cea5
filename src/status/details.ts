import { isActive, type ObservedPod } from '../runtime/observed.js';
import type { PodEngine } from '../runtime/roles.js';
import type { ContainerDetails } from './pod-status.js';

/**
 * Inspect details for what status shows: the two newest instances of each container (current and
 * last state). An exited container's details never change, so a cache may keep them.
 */
export async function containerDetails(
  rt: PodEngine,
  o: ObservedPod,
  cache: Map<string, ContainerDetails> = new Map(),
): Promise<Map<string, ContainerDetails>> {
  const perName = new Map<string, number>();
  const wanted = o.containers.filter((c) => {
    const n = perName.get(c.name) ?? 0;
    if (n >= 2) return false;
    perName.set(c.name, n + 1);
    const have = cache.get(c.id);
    return !(have && (have.finishedAt || isActive(c)));
  });
  // The engine answers inspects in parallel; one after another they add up for a pod with many containers.
  await Promise.all(
    wanted.map(async (c) => {
      const st = await rt.containerState(c.id);
      if (!st) return;
      const startedAt = st.startedAt;
      const finishedAt = isActive(c) ? undefined : st.finishedAt;
      const message = finishedAt ? await rt.terminationMessage({ ...c, exitCode: st.exitCode }, o.uid) : undefined;
      cache.set(c.id, {
        ...(startedAt ? { startedAt } : {}),
        ...(finishedAt ? { finishedAt } : {}),
        ...(message ? { message } : {}),
        ...(st.engineRestarts > 0 ? { engineRestarts: st.engineRestarts } : {}),
        ...(st.restarting ? { restarting: true } : {}),
        exitCode: st.exitCode,
        oomKilled: st.oomKilled,
        ...(st.error ? { error: st.error } : {}),
      });
    }),
  );
  return cache;
}
