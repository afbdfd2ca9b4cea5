import type { EngineRecord } from '../observed.js';
import type { EngineEvent } from '../runtime-types.js';

// Lifecycle events from a runtime that sends none: containerd before 1.7 answers GetContainerEvents
// with Unimplemented, so the kubelet's generic PLEG (pkg/kubelet/pleg/generic.go) relists every
// second and turns each change of state into an event. This does the same, for the pod cache.

/**
 * The events that take a container from `before` (undefined: unseen) to `now`. One first seen is
 * told in its present state only: a `created` for a container that already runs would, folded
 * into the cache, show it not started for a moment (and the sandbox not running) to a worker
 * that looks then, which replaced both in a loop. A sandbox is told by its state, when it is
 * first seen and when it changes.
 */
export function transitions(before: EngineRecord | undefined, now: EngineRecord, timeMs: number): EngineEvent[] {
  if (now.kind === 'sandbox') {
    if (before?.state === now.state) return [];
    return [{ kind: 'sandbox', state: now.state, id: now.id, labels: now.labels, name: now.name, image: now.image, timeMs }];
  }
  const base = { id: now.id, labels: now.labels, name: now.name, image: now.image, timeMs };
  const exited = (): EngineEvent => ({ ...base, kind: 'exited', ...(now.exitCode !== undefined ? { exitCode: now.exitCode } : {}) });
  if (!before)
    return [
      now.state === 'running' ? { ...base, kind: 'started' } : now.state === 'exited' || now.state === 'unknown' ? exited() : { ...base, kind: 'created' },
    ];
  const out: EngineEvent[] = [];
  const was = before.state;
  if (was === now.state) return out;
  if (now.state === 'running') out.push({ ...base, kind: 'started' });
  else if (now.state === 'exited' || now.state === 'unknown') {
    // Seen only once it ended: it ran in between (a crash between two relists).
    if (was === 'created') out.push({ ...base, kind: 'started' });
    out.push(exited());
  }
  return out;
}

/**
 * How far along its one life a container or sandbox is: neither goes back a stage (a restart is
 * a new one, and a NOTREADY sandbox is never READY again).
 */
function lifeStage(state: EngineRecord['state']): number {
  return state === 'created' ? 0 : state === 'exited' || state === 'unknown' || state === 'notready' ? 2 : 1;
}

/** A relist running beside something else that tells changes (the runtime's event stream). */
export interface RelistWatch {
  stop(): void;
  /**
   * A record as another source saw it now (undefined with `removedId`: gone), told as the relist
   * would tell it and kept, so the next relist does not tell the same change again.
   */
  observe(now: EngineRecord | undefined, removedId?: string): void;
  /** Relists every `ms` from the next tick on (the event stream served: seldom; else the generic PLEG's 1 s). */
  setPeriod(ms: number): void;
}

/**
 * Relists every `periodMs` and reports what changed. The first list is the baseline (a watch
 * reports what happens after it starts, as Docker's event stream does). A failed list ends the
 * watch with the error, so the caller reconnects as it does when an event stream breaks.
 */
export async function relistWatch(
  list: () => Promise<EngineRecord[]>,
  onEvent: (e: EngineEvent) => void,
  onEnd: (err?: Error) => void,
  periodMs = 1000,
): Promise<RelistWatch> {
  let known = new Map((await list()).map((c) => [c.id, c]));
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let period = periodMs;
  const end = (err: unknown): void => {
    if (stopped) return;
    stopped = true;
    clearTimeout(timer);
    onEnd(err instanceof Error ? err : new Error(String(err)));
  };
  const tell = (events: EngineEvent[]): void => {
    for (const e of events) onEvent(e);
  };
  const removed = (c: EngineRecord, t: number): EngineEvent =>
    c.kind === 'sandbox'
      ? { kind: 'sandbox', state: 'removed', id: c.id, labels: c.labels, name: c.name, image: c.image, timeMs: t }
      : { kind: 'removed', id: c.id, labels: c.labels, name: c.name, image: c.image, timeMs: t };
  const tick = async (): Promise<void> => {
    let now: EngineRecord[];
    try {
      now = await list();
    } catch (err) {
      end(err);
      return;
    }
    if (stopped) return;
    const t = Date.now();
    const next = new Map<string, EngineRecord>();
    for (const c of now) {
      next.set(c.id, c);
      tell(transitions(known.get(c.id), c, t));
    }
    for (const [id, c] of known) if (!next.has(id)) tell([removed(c, t)]);
    known = next;
    schedule();
  };
  const schedule = (): void => {
    if (stopped) return;
    // Nobody awaits a tick: what throws in it (onEvent is the caller's) ends the watch as a failed
    // list does, so the caller reconnects, instead of rejecting unheard (the agent's exit).
    timer = setTimeout(() => {
      tick().catch(end);
    }, period);
    timer.unref();
  };
  schedule();
  return {
    stop: () => {
      stopped = true;
      clearTimeout(timer);
    },
    observe: (now, removedId) => {
      if (stopped) return;
      const t = Date.now();
      try {
        if (now) {
          const was = known.get(now.id)?.state;
          // A runtime's event can arrive after a relist saw what came later: a container (or sandbox)
          // only goes forward, created → running → ended (a restart is a new one), so an older word
          // is dropped. Kept, a late `created` after a seen start made its `started` told twice.
          if (was !== undefined && lifeStage(now.state) < lifeStage(was)) return;
          tell(transitions(known.get(now.id), now, t));
          known.set(now.id, now);
        } else if (removedId !== undefined) {
          const was = known.get(removedId);
          if (was) tell([removed(was, t)]);
          known.delete(removedId);
        }
      } catch (err) {
        end(err);
      }
    },
    setPeriod: (ms) => {
      period = ms;
    },
  };
}

/** relistWatch without the other source: the stop function alone. */
export async function watchByRelist(
  list: () => Promise<EngineRecord[]>,
  onEvent: (e: EngineEvent) => void,
  onEnd: (err?: Error) => void,
  periodMs = 1000,
): Promise<() => void> {
  return (await relistWatch(list, onEvent, onEnd, periodMs)).stop;
}
