import type { WaitingReason } from '../base/reasons.js';
import type { PodPhase } from './pod-phase.js';
import { containerHash } from '../manifest/hash.js';
import type { DesiredPod, Pod } from '../manifest/types.js';
import { backoffKeys } from '../reconcile/start-backoff.js';
import { specOf } from '../reconcile/lifecycle.js';
import { Backoff, DEFAULT_BACKOFF, type BackoffPolicy } from '../reconcile/backoff.js';
import type { ObservedPod, RecordKind } from '../runtime/observed.js';
import type { EngineRestartOn } from '../runtime/runtime-types.js';
import type { ContainerDetails } from '../status/pod-status.js';

/**
 * Everything the agent keeps about one pod beyond the engine's own state (the kubelet's
 * podSyncStatus): made on the pod's first sync, trimmed to the instances the engine still has
 * after every sync, and dropped whole when the pod is deleted. Nothing per pod lives elsewhere
 * except the events (keyed by pod, forgotten with it), the probe workers (one per running
 * container) and the health gate's record (a file).
 */
export interface PodRecord {
  /** Where the pod's worker is (pod-phase.ts): moved by the worker's turn only (pod-worker.ts). */
  phase: PodPhase;
  /** Waiting reasons the worker imposes (CrashLoopBackOff, image and start errors), by container name. */
  readonly waiting: Map<string, { reason: WaitingReason; message: string }>;
  /** Inspect details of the pod's instances, by container id. */
  readonly details: Map<string, ContainerDetails>;
  /** Containers whose postStart hook runs now. */
  readonly postStarting: Set<string>;
  /**
   * Containers taken over from the engine's restart policy, by id; the value is the engine's
   * policy when it could not be changed (the engine keeps restarting that one).
   */
  readonly adopted: Map<string, Exclude<EngineRestartOn, 'never'> | undefined>;
  /** The current sandbox and the address its hooks and probes use, read once per sandbox. */
  sandbox?: { id: string; ip: string };
  /** The spec the back-off tables and waiting reasons were last pruned for (the next version is another object). */
  keysOf?: Pod;
  /** The signal of the sync carrying out actions now (aborted when the pod is to be deleted). */
  inProgress?: AbortSignal;
  /**
   * The pod's back-off, as the kubelet keeps it per container and spec hash (its image, for pulls),
   * so an update starts afresh: crash loops, failed pulls, and creates or starts the engine
   * refused (the sandbox's by its hash). Pruned to the spec's keys at each new version, and gone
   * with the record.
   */
  readonly backoff: PodBackoff;
  /**
   * Sandboxes and containers podrun made for the pod whose create event the cache may not have
   * had yet, with which each is: the next refresh inspects them by id.
   */
  readonly unseen: Map<string, RecordKind>;
}

export interface PodBackoff {
  crash: Backoff;
  imagePulls: Backoff;
  startFailures: Backoff;
}

export function newPodRecord(policy: BackoffPolicy = DEFAULT_BACKOFF): PodRecord {
  const backoff = { crash: new Backoff(policy), imagePulls: new Backoff(policy), startFailures: new Backoff(policy) };
  return { phase: 'syncing', waiting: new Map(), details: new Map(), postStarting: new Set(), adopted: new Map(), backoff, unseen: new Map() };
}

/**
 * Drops what concerns instances the engine no longer has: a container that crash-loops for a
 * year leaves one dead instance behind at a time, so its record stays that size.
 */
export function trimRecord(r: PodRecord, o: ObservedPod | undefined): void {
  const present = new Set([...(o?.sandboxes ?? []), ...(o?.containers ?? [])].map((c) => c.id));
  for (const id of r.details.keys()) if (!present.has(id)) r.details.delete(id);
  for (const id of r.adopted.keys()) if (!present.has(id)) r.adopted.delete(id);
  for (const id of r.postStarting) if (!present.has(id)) r.postStarting.delete(id);
  if (r.sandbox && !present.has(r.sandbox.id)) delete r.sandbox;
}

/**
 * The pod's spec is now `now` (it was `before`): a waiting reason of a container whose spec changed
 * was about the version before (an image that could not be had is not the new image's), and goes.
 */
export function dropChangedWaiting(r: PodRecord, before: Pod | undefined, now: Pod): void {
  for (const name of [...r.waiting.keys()]) {
    const was = before && specOf(before, name);
    const is = specOf(now, name);
    if (!was || !is || containerHash(before, was) !== containerHash(now, is)) r.waiting.delete(name);
  }
  r.keysOf = now;
}

/**
 * Back-off of what the pod's spec no longer has (an earlier hash or image of a container) goes:
 * the kubelet's back-off restarts with a new hash, and 10,000 updates must not leave 10,000 keys.
 * So does the waiting reason of a container whose spec changed: it was about the version before
 * (an image that could not be pulled is not the new image's). Once per version of the pod.
 */
export function retainKeys(r: PodRecord, d: DesiredPod): void {
  const before = r.keysOf;
  if (before === d.pod) return;
  const keys = backoffKeys(d);
  for (const table of Object.values(r.backoff)) table.retainPod(d.uid, keys);
  dropChangedWaiting(r, before, d.pod);
}

/** How many entries a record holds, for the agent's accounting of its own state (its back-off and unseen creates told apart). */
export function recordSize(r: PodRecord): number {
  return 1 + r.waiting.size + r.details.size + r.postStarting.size + r.adopted.size + (r.sandbox ? 1 : 0) + (r.inProgress ? 1 : 0);
}
