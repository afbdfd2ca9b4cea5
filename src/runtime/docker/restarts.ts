import { EngineRequestError, type EngineCalls } from './engine.js';
import type { EngineRestartOn } from '../runtime-types.js';

// Adoption's side of Docker's restart policies: a container made with one (no agent supervised
// its pod, so the engine kept it up) is taken over by the agent that adopts it (agent/adoption.ts).

/**
 * Takes a container's restarts over from the engine: its restart policy becomes `no`, in place
 * (no restart, no new container). Podman 4.x cannot update a container: its policy stays, and
 * the answer says what it still restarts on. Undefined: the container is gone.
 */
export async function takeOverRestarts(calls: EngineCalls, id: string): Promise<EngineRestartOn | undefined> {
  const policy = await restartPolicyOf(calls, id);
  if (policy === undefined) return undefined;
  if (policy === '' || policy === 'no') return 'never';
  try {
    await calls.call('update container', () => calls.docker.getContainer(id).update({ RestartPolicy: { Name: 'no' } }));
    return 'never';
  } catch (err) {
    if (!(err instanceof EngineRequestError) || (err.kind !== 'NotFound' && err.kind !== 'Unimplemented')) throw err;
    // Gone meanwhile, or an engine without container update (its 404 is the endpoint's).
    if ((await restartPolicyOf(calls, id)) === undefined) throw err;
    return restartOnOf(policy);
  }
}

async function restartPolicyOf(calls: EngineCalls, id: string): Promise<string | undefined> {
  const info = await calls.call('inspect container', () => calls.docker.getContainer(id).inspect()).catch(() => undefined);
  return info ? (info.HostConfig.RestartPolicy?.Name ?? '') : undefined;
}

/** What a Docker restart policy restarts on (`unless-stopped` is `always` until a stop through the API). */
function restartOnOf(policy: string): EngineRestartOn {
  if (policy === 'always' || policy === 'unless-stopped') return 'always';
  return policy === 'on-failure' ? 'failure' : 'never';
}
