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

/** A deletion asked over the socket (`podrun delete`): the agent, the one actor, carries it out. */
export interface DeletionRequest {
  /** delete's grace period, replacing every container's. */
  override?: number;
  /** What readers show while it runs: the pod Terminating since then, with this grace. */
  deletionTimestamp: string;
  deletionGracePeriodSeconds: number;
  /** Held past the deletion until the desired set drops the pod too (an applied pod forgotten in its set), so it is not made again meanwhile. */
  untilUndeclared: boolean;
  gone: boolean;
  /** When it was gone (ms since the epoch): the hold for `untilUndeclared` ends UNDECLARE_WAIT_MS later. */
  goneAt?: number;
  waiters: (() => void)[];
}

/** What the health gate keeps of a pod between its decisions (health-gate.ts). */
export interface GateFacts {
  /** Wakes the pod's worker at its update's deadline, or its recheck. */
  timer?: NodeJS.Timeout;
  /** What the pod was last given to run, so an unchanged answer is the same object. */
  running?: DesiredPod;
  /** For an update being tried: its `since`, and the monotonic time that stands for it here. */
  origin?: { since: string; mono: number };
}

/**
 * Everything the agent keeps about one pod beyond the engine's own state (the kubelet's
 * podSyncStatus), in one place so that one `PodRecords.forget` drops it all: made when the gate
 * first decides for the pod, a deletion is asked, or its worker first turns, trimmed to the
 * instances the engine still has after every sync. Nothing per pod lives elsewhere except the
 * events (keyed by pod), the probe workers (one per running container) and their series, and the
 * health gate's rollback record (a file): `forget` tells their owners too.
 */
export interface PodRecord {
  /**
   * Where the pod's worker is (pod-phase.ts): moved by the worker's turn only (pod-worker.ts).
   * None until its first turn: the record then holds only what the gate or a delete put there.
   */
  phase?: PodPhase;
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
  /** It has had a turn with the engine connected since the agent started (`Agent.converged`). */
  synced: boolean;
  /** Its deletion began under this name: "deleted" is said of it once it is gone, by whatever hand finished it. */
  deleting?: string;
  /** A deletion asked of this agent (asked-deletion.ts): the pod is terminated even while declared, and the asker answered once it is gone. */
  awaitedDeletion?: DeletionRequest;
  /** What the health gate keeps of the pod in memory; its rollback record is a file (rollback-store.ts). */
  readonly gate: GateFacts;
}

export interface PodBackoff {
  crash: Backoff;
  imagePulls: Backoff;
  startFailures: Backoff;
}

export function newPodRecord(policy: BackoffPolicy = DEFAULT_BACKOFF): PodRecord {
  const backoff = { crash: new Backoff(policy), imagePulls: new Backoff(policy), startFailures: new Backoff(policy) };
  return {
    phase: 'syncing',
    waiting: new Map(),
    details: new Map(),
    postStarting: new Set(),
    adopted: new Map(),
    backoff,
    unseen: new Map(),
    synced: false,
    gate: {},
  };
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

/** How many entries a record holds, for the agent's accounting of its own state (its back-off, unseen creates, deletion and gate facts told apart). */
export function recordSize(r: PodRecord): number {
  return 1 + r.waiting.size + r.details.size + r.postStarting.size + r.adopted.size + (r.sandbox ? 1 : 0) + (r.inProgress ? 1 : 0);
}

/**
 * The agent's records, one per pod, kept by the syncer and shared with the pod's worker and the
 * health gate. `forget` is the one way a pod's state goes: its record is dropped whole (its
 * gate timer cleared), and the owners of what lives outside it (events, probes, the rollback
 * record) are told through `onForget`.
 */
export class PodRecords {
  private readonly byUid = new Map<string, PodRecord>();
  private readonly forgetters: ((uid: string) => void)[] = [];

  constructor(private readonly policy: BackoffPolicy = DEFAULT_BACKOFF) {}

  get(uid: string): PodRecord | undefined {
    return this.byUid.get(uid);
  }

  /** The record once the pod's worker has turned for it: one made only by the gate or a delete is not the worker's yet. */
  worked(uid: string): PodRecord | undefined {
    const r = this.byUid.get(uid);
    return r?.phase === undefined ? undefined : r;
  }

  /** The pod's record, made (with no phase yet) if it has none. */
  make(uid: string): PodRecord {
    let r = this.byUid.get(uid);
    if (!r) {
      r = newPodRecord(this.policy);
      delete r.phase;
      this.byUid.set(uid, r);
    }
    return r;
  }

  /** The pod's record for its worker's turn: syncing unless its worker moved it already. */
  begin(uid: string): PodRecord {
    const r = this.make(uid);
    r.phase ??= 'syncing';
    return r;
  }

  entries(): IterableIterator<[string, PodRecord]> {
    return this.byUid.entries();
  }

  /**
   * Declared again after it terminated: the pod syncs anew with nothing of its sync before (back-off,
   * waiting reasons, details), as a static pod made again. What is not about that sync stays: the
   * gate's decision for the declared pod, that it synced, a deletion still asked.
   */
  renew(uid: string): void {
    const old = this.byUid.get(uid);
    const r = { ...newPodRecord(this.policy), ...(old ? { gate: old.gate, synced: old.synced } : {}) };
    if (old?.awaitedDeletion) r.awaitedDeletion = old.awaitedDeletion;
    this.byUid.set(uid, r);
  }

  /** Called with the uid of every pod forgotten: for state per pod that cannot live in its record. */
  onForget(f: (uid: string) => void): void {
    this.forgetters.push(f);
  }

  /** The pod is gone (neither declared nor on the engine): everything kept about it goes. */
  forget(uid: string): void {
    const r = this.byUid.get(uid);
    this.byUid.delete(uid);
    if (r?.gate.timer) clearTimeout(r.gate.timer);
    for (const f of this.forgetters) f(uid);
    // A deletion asked while the turn that found the pod gone ran is still owed its answer: the next turn gives it.
    const owed = r?.awaitedDeletion;
    if (owed && !owed.gone) this.make(uid).awaitedDeletion = owed;
  }

  /** Entries kept in the records, by kind: what must return to nothing once a pod is gone. */
  stateSize(): Record<string, number> {
    const all = [...this.byUid.values()];
    const sum = (size: (r: PodRecord) => number): number => all.reduce((n, r) => n + size(r), 0);
    const count = (has: (r: PodRecord) => unknown): number => all.filter(has).length;
    return {
      records: sum(recordSize),
      crashBackoff: sum((r) => r.backoff.crash.size),
      imageBackoff: sum((r) => r.backoff.imagePulls.size),
      startBackoff: sum((r) => r.backoff.startFailures.size),
      createdUnseen: sum((r) => r.unseen.size),
      synced: count((r) => r.synced),
      deleting: count((r) => r.deleting !== undefined),
      deletionRequests: count((r) => r.awaitedDeletion),
      gateTimers: count((r) => r.gate.timer),
      gateRunning: count((r) => r.gate.running),
      gateOrigins: count((r) => r.gate.origin),
    };
  }
}
