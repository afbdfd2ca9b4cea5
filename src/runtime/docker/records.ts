import type Docker from 'dockerode';
import type { ContainerState } from '../observed.js';
import type { ContainerStatus } from '../runtime-types.js';

// Docker's answers turned into podrun's engine records (runtime-types.ts): the only place that
// knows their field names, the "never" zero time, or the status text. Pure.

/** Docker writes "never" (not started, not finished) as the zero time of Go. */
export function engineTime(t: string | undefined): string | undefined {
  return t && !t.startsWith('0001-') ? t : undefined;
}

/** An inspect's state as podrun's container status. */
export function statusFromInspect(state: Docker.ContainerInspectInfo['State'], restartCount: number | undefined): ContainerStatus {
  const startedAt = engineTime(state.StartedAt);
  const finishedAt = engineTime(state.FinishedAt);
  return {
    state: state.Status as ContainerState,
    exitCode: state.ExitCode,
    ...(startedAt ? { startedAt } : {}),
    ...(finishedAt ? { finishedAt } : {}),
    oomKilled: state.OOMKilled,
    ...(state.Error ? { error: state.Error } : {}),
    engineRestarts: restartCount ?? 0,
    restarting: state.Restarting,
  };
}
