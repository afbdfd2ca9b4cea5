import { containerHash, sandboxHash } from '../manifest/hash.js';
import { allContainers, type DesiredPod } from '../manifest/types.js';
import type { ObservedContainer, ObservedPod } from '../runtime/observed.js';
import { Backoff } from './backoff.js';
import { specOf } from './lifecycle.js';
import type { ContainerToStart, PodActions } from './plan.js';

/** The back-off state applyBackoff reads (the syncer keeps it; applyBackoff never changes it). */
export interface BackoffView {
  /** Crash loops, per pod/container/hash, counted from the previous instance's finish. */
  crash: Pick<Backoff, 'remaining' | 'currentDelay'>;
  /** Image pulls that failed, per pod/container/image. */
  imagePulls: Pick<Backoff, 'remainingSinceLast'>;
  /** Creates and starts the engine refused, per pod/container/hash (and the sandbox). */
  refused: Pick<Backoff, 'remainingSinceLast'>;
  /** Whether the container's last attempt failed on its image (only then does image back-off hold it). */
  waitingOnImage: (container: string) => boolean;
  /** When an exited instance finished (ms), for the crash back-off. */
  finishedAt: (containerId: string) => number | undefined;
}

export interface HeldStart {
  name: string;
  /** The kubelet's waiting reason while held. */
  reason: 'CrashLoopBackOff' | 'ImagePullBackOff' | 'BackOff';
  waitMs: number;
}

export interface BackoffResult {
  /** The plan with only the starts that may go now (and no sandbox if that is held). */
  actions: PodActions;
  held: HeldStart[];
  /**
   * Restarts of the same spec that go now: the caller records them (key, and `after`, the exited
   * instance each restarts from, counted once) and may log the delay they waited.
   */
  restarts: { name: string; key: string; waitedMs: number; after: string }[];
  /** When to look again, if anything is held. */
  waitMs?: number;
}

/** The key of the sandbox's refused creates. */
export function sandboxKey(d: DesiredPod): string {
  return `${d.uid}/POD/${sandboxHash(d.pod)}`;
}

/** The key of a container's failed pulls: its image, so a new image starts afresh. */
export function imageKey(d: DesiredPod, container: string): string {
  return `${d.uid}/${container}/${specOf(d.pod, container)?.image ?? ''}`;
}

/**
 * Every back-off key the pod's spec has now (each container's spec hash and image, the sandbox's
 * hash): what an update leaves outside this set is history, and is dropped (`Backoff.retainPod`).
 */
export function backoffKeys(d: DesiredPod): Set<string> {
  const keys = new Set([sandboxKey(d)]);
  for (const c of allContainers(d.pod)) {
    keys.add(Backoff.key(d.uid, c.name, containerHash(d.pod, c)));
    keys.add(imageKey(d, c.name));
  }
  return keys;
}

/**
 * The newest instance of `name` that has exited, as the kubelet's doBackOff looks for: not
 * necessarily the latest, since a running instance killed in this same turn (a failed liveness or
 * startup probe) is restarted from the exited one before it, and so goes through the back-off too.
 */
export function newestExited(o: ObservedPod, name: string): ObservedContainer | undefined {
  return o.containers.find((c) => c.name === name && c.state === 'exited');
}

/**
 * Applies back-off to a plan's starts, as the kubelet's doBackOff does before each start: a restart
 * of the same spec waits out the crash back-off (10 s doubling to 5 min, from the previous exited
 * instance's finish; a liveness kill included); a container whose image failed waits out the pull
 * back-off; a create or start the engine refused waits out its own. New containers and spec
 * changes start at once. Pure:
 * the back-off state and the clock come in, decisions go out.
 */
export function applyBackoff(d: DesiredPod, o: ObservedPod | undefined, actions: PodActions, view: BackoffView, now: number): BackoffResult {
  const held: HeldStart[] = [];
  const restarts: BackoffResult['restarts'] = [];
  if (actions.createSandbox) {
    const left = view.refused.remainingSinceLast(sandboxKey(d), now);
    if (left > 0)
      return {
        actions: { ...actions, killPod: false, createSandbox: false, containersToStart: [], containersToKill: [] },
        held: [],
        restarts: [],
        waitMs: left,
      };
  }
  const allowed: ContainerToStart[] = [];
  for (const s of actions.containersToStart) {
    const spec = specOf(d.pod, s.name);
    const prev = o ? newestExited(o, s.name) : undefined;
    const hash = spec ? containerHash(d.pod, spec) : '';
    const imageLeft = view.waitingOnImage(s.name) ? view.imagePulls.remainingSinceLast(imageKey(d, s.name), now) : 0;
    if (imageLeft > 0) {
      held.push({ name: s.name, reason: 'ImagePullBackOff', waitMs: imageLeft });
      continue;
    }
    const refusedLeft = spec ? view.refused.remainingSinceLast(Backoff.key(d.uid, s.name, hash), now) : 0;
    if (refusedLeft > 0) {
      held.push({ name: s.name, reason: 'BackOff', waitMs: refusedLeft });
      continue;
    }
    const isRestart = prev !== undefined && spec !== undefined && prev.hash === hash;
    if (!isRestart) {
      allowed.push(s);
      continue;
    }
    const key = Backoff.key(d.uid, s.name, prev.hash);
    const left = view.crash.remaining(key, view.finishedAt(prev.id) ?? now, now);
    if (left > 0) {
      held.push({ name: s.name, reason: 'CrashLoopBackOff', waitMs: left });
      continue;
    }
    restarts.push({ name: s.name, key, waitedMs: view.crash.currentDelay(key, now), after: prev.id });
    allowed.push(s);
  }
  const waits = held.map((h) => h.waitMs);
  const wait = waits.length ? { waitMs: Math.min(...waits) } : {};
  // An update whose new image is in pull back-off waits whole: what it would replace keeps running.
  const first = new Set(actions.imagesFirst ?? []);
  if (held.some((h) => h.reason === 'ImagePullBackOff' && first.has(h.name))) {
    const { imagesFirst: _dropped, ...rest } = actions;
    const kept = actions.killPod
      ? { ...rest, killPod: false, createSandbox: false, containersToKill: [], containersToStart: [] }
      : { ...rest, containersToKill: actions.containersToKill.filter((k) => !first.has(k.name)), containersToStart: allowed.filter((s) => !first.has(s.name)) };
    return { actions: kept, held, restarts: restarts.filter((r) => !first.has(r.name)), ...wait };
  }
  return { actions: { ...actions, containersToStart: allowed }, held, restarts, ...wait };
}
