import type { Logger } from '../log/logger.js';
import type { Pod } from '../manifest/types.js';
import { specOf } from '../reconcile/lifecycle.js';
import { isActive, type ObservedContainer, type ObservedPod, type ObservedSandbox } from '../runtime/observed.js';
import type { EngineLifecycle } from '../runtime/roles.js';
import type { PodRecord } from './pod-record.js';

/** How long podrun leaves a dead container to an engine policy it could not take over. */
const ENGINE_RESTART_WAIT_MS = 5000;

/**
 * Taking over supervision from the engine's restart policy, without restarting anything. An
 * engine that cannot change a policy in place (Podman 4.x has no container update) keeps
 * restarting that container on a crash; podrun lets it, and takes over when the engine does not
 * (a container stopped or killed through the API), see `engineRestarts`. What was adopted lives
 * in the pod's record.
 */
export class Adoption {
  private warned = false;

  constructor(
    private readonly rt: Pick<EngineLifecycle, 'takeOverRestarts' | 'capabilities'>,
    private readonly cache: { finishedAt(id: string): number | undefined },
    private readonly log: Logger,
  ) {}

  async adopt(r: PodRecord, o: ObservedPod): Promise<void> {
    const fresh = [...o.sandboxes, ...o.containers].filter((c) => isActive(c) && !r.adopted.has(c.id));
    // An engine without restart policies restarts nothing by itself: nothing to take over, no call.
    if (!this.rt.capabilities.restartPolicy) {
      for (const c of fresh) r.adopted.set(c.id, undefined);
      return;
    }
    await Promise.all(
      fresh.map(async (c) => {
        const kept = await this.rt.takeOverRestarts(c.id);
        if (kept && kept !== 'never' && !this.warned) {
          this.warned = true;
          this.log.warn(
            `the engine cannot change a container's restart policy (no container update); containers adopted from it keep their engine policy, and podrun restarts them only when the engine does not`,
          );
        }
        r.adopted.set(c.id, kept && kept !== 'never' ? kept : undefined);
      }),
    );
  }

  /**
   * With no agent (`apply` runs the worker), the engine keeps the restart policy `apply` gave each
   * container, and nothing is taken from it: what it restarts on is read from the spec, no engine
   * call, so that the worker leaves those restarts to the engine as it does an adopted one's.
   */
  assume(r: PodRecord, o: ObservedPod, pod: Pod): void {
    // A sandbox's engine policy is always (docker/translate.ts engineRestartPolicy).
    for (const s of o.sandboxes) if (isActive(s) && !r.adopted.has(s.id)) r.adopted.set(s.id, 'always');
    for (const c of o.containers) if (isActive(c) && !r.adopted.has(c.id)) r.adopted.set(c.id, engineRestartOn(pod, c));
  }

  /** A dead adopted container (or sandbox) whose engine policy restarts it, within the engine's time to do so. */
  engineRestarts(r: PodRecord, c: ObservedContainer | ObservedSandbox): boolean {
    const policy = r.adopted.get(c.id);
    if (!policy) return false;
    // Dead: an exited container, by its code; a sandbox not ready (its pause process ended), whose
    // policy is always, so its code never counts.
    const failed = c.state === 'exited' ? c.exitCode !== 0 : c.state === 'notready' ? true : undefined;
    if (failed === undefined) return false;
    if (policy !== 'always' && !(policy === 'failure' && failed)) return false;
    const finished = this.cache.finishedAt(c.id) ?? Date.now();
    if (Date.now() - finished < ENGINE_RESTART_WAIT_MS) return true;
    // The engine let it be (a stop or kill through its API): podrun's from now on.
    r.adopted.set(c.id, undefined);
    return false;
  }
}

/** What the engine restarts a container on when `apply` made it with no agent (as its runtime's restart policy). */
export function engineRestartOn(pod: Pod, c: ObservedContainer): 'always' | 'failure' | undefined {
  if (c.type === 'init') return specOf(pod, c.name)?.restartPolicy === 'Always' ? 'always' : undefined;
  const policy = pod.spec.restartPolicy ?? 'Always';
  return policy === 'Always' ? 'always' : policy === 'OnFailure' ? 'failure' : undefined;
}
