import { isActive, type ObservedPod } from '../runtime/observed.js';
import type { PodEngine } from '../runtime/roles.js';
import type { ContainerDetails } from './pod-status.js';

/**
 * Inspect details for what status shows: the two newest instances of each container (current and
 * last state). An exited container's details never change, so a cache may keep them.
 */
export async function containerDetails(rt: PodEngine, o: ObservedPod, cache: Map<string, ContainerDetails> = new Map()): Promise<Map<string, ContainerDetails>> {
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
      // The engine reports "never" as the zero time.
      const time = (t: string | undefined): string | undefined => (t && !t.startsWith('0001-') ? t : undefined);
      const startedAt = time(st.StartedAt);
      const finishedAt = isActive(c) ? undefined : time(st.FinishedAt);
      const message = finishedAt ? await rt.terminationMessage({ ...c, exitCode: st.ExitCode }, o.uid) : undefined;
      cache.set(c.id, {
        ...(startedAt ? { startedAt } : {}),
        ...(finishedAt ? { finishedAt } : {}),
        ...(message ? { message } : {}),
        ...(st.RestartCount > 0 ? { engineRestarts: st.RestartCount } : {}),
        ...(st.Restarting ? { restarting: true } : {}),
        exitCode: st.ExitCode,
        oomKilled: st.OOMKilled,
        ...(st.Error ? { error: st.Error } : {}),
      });
    }),
  );
  return cache;
}
