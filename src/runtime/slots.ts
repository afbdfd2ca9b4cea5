/** A wait for a slot given up because the work it was for is no longer wanted. */
export class Cancelled extends Error {
  constructor(what = 'cancelled') {
    super(what);
    this.name = 'Cancelled';
  }
}

export interface SlotRequest {
  /**
   * A deletion's call (a removal, its last list): served before any waiting create or start, in
   * a lane of its own (4 × the limit: a wave of deletions must not queue behind itself either), so
   * it never waits for another pod's create to finish, and no other work begins while it runs (for HOLD_BACK_MS at most): the
   * engine's own queues (its network set-up, above all) then hold no new create ahead of it. The kubelet's pod worker terminates a
   * pod without queueing behind others.
   */
  urgent?: boolean;
  /**
   * With `urgent`: a deletion's read (its last list, is anything of the pod left?), not a removal.
   * It never waits for the lane: a wave's removals fill it for seconds on a loaded engine, and a
   * list behind them held each pod's "deleted" back by up to a second (issue 28's churn, measured).
   * It holds new ordinary work back while it runs, as the removals do.
   */
  look?: boolean;
  /** Gives up the wait (not a call already running) once aborted: the caller gets `Cancelled`. */
  signal?: AbortSignal;
}

/**
 * `p`, or `Cancelled` as soon as `signal` is aborted: a wait given up (the work waited for, a pull
 * another pod may share, goes on).
 */
export function unlessAborted<T>(p: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return p;
  if (signal.aborted) return Promise.reject(new Cancelled());
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(new Cancelled());
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** How long an urgent call holds back other work at most (a removal under load takes 0.1–3 s). */
export const HOLD_BACK_MS = 3000;

interface Waiter {
  urgent: boolean;
  grant: () => void;
}

/**
 * A counting semaphore: at most `limit` holders of ordinary work at once and `4 × limit` of urgent
 * work (a lane of its own), the rest wait in order, urgent work first, and nothing else begins
 * while urgent work runs. It bounds what costs the engine (creates, starts, removals, lists), never the time a pod spends waiting (a grace period, a hook, a back-off), so no pod
 * waits behind another's graceful stop.
 */
export class Slots {
  private active = 0;
  private urgentActive = 0;
  /** A deletion wave's removals: many at once (the engine removes in parallel well), never unbounded. */
  private readonly urgentLimit: number;
  /** Urgent holders that began less than HOLD_BACK_MS ago: while there are any, nothing else begins. */
  private urgentFresh = 0;
  private readonly waiting: Waiter[] = [];

  constructor(readonly limit: number) {
    this.urgentLimit = limit * 4;
  }

  /** Holders now, and how many wait (for tests and metrics). */
  get state(): { active: number; waiting: number } {
    return { active: this.active, waiting: this.waiting.length };
  }

  private mayRun(urgent: boolean): boolean {
    if (urgent) return this.urgentActive < this.urgentLimit;
    return this.active - this.urgentActive < this.limit && !this.waiting.some((w) => w.urgent) && this.urgentFresh === 0;
  }

  async run<T>(fn: () => Promise<T>, o: SlotRequest = {}): Promise<T> {
    const urgent = o.urgent === true;
    if (o.signal?.aborted) throw new Cancelled();
    // A deletion's read runs at once, outside every lane.
    const release = urgent && o.look ? this.holdBack() : this.mayRun(urgent) ? this.take(urgent) : await this.wait(urgent, o.signal);
    try {
      return await fn();
    } finally {
      release();
      this.pump();
    }
  }

  /**
   * A slot taken, at once (also when granted to a waiter, before anything else is granted: a lane
   * counted only once its waiter ran would let the queue's next ones through too); its release.
   */
  private take(urgent: boolean): () => void {
    this.active++;
    if (!urgent) return () => void this.active--;
    this.urgentActive++;
    const held = this.holdBack();
    return () => {
      this.active--;
      this.urgentActive--;
      held();
    };
  }

  /**
   * Holds new ordinary work back until the returned release is called, or HOLD_BACK_MS at most: a
   * call the engine is wedged on (Docker 20.10 hangs on a container now and then, until the request
   * times out) must not stop every other pod's creates with it.
   */
  private holdBack(): () => void {
    let fresh = true;
    this.urgentFresh++;
    const stale = setTimeout(() => {
      fresh = false;
      this.urgentFresh--;
      this.pump();
    }, HOLD_BACK_MS);
    stale.unref();
    return () => {
      clearTimeout(stale);
      if (fresh) this.urgentFresh--;
      fresh = false;
    };
  }

  private wait(urgent: boolean, signal: AbortSignal | undefined): Promise<() => void> {
    return new Promise<() => void>((resolve, reject) => {
      const onAbort = (): void => {
        const i = this.waiting.indexOf(w);
        if (i >= 0) this.waiting.splice(i, 1);
        reject(new Cancelled());
      };
      const w: Waiter = {
        urgent,
        grant: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve(this.take(urgent));
        },
      };
      // Urgent waiters go after the urgent ones already waiting, before every other.
      const at = urgent ? this.waiting.findIndex((x) => !x.urgent) : -1;
      if (at >= 0) this.waiting.splice(at, 0, w);
      else this.waiting.push(w);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  private pump(): void {
    for (;;) {
      const next = this.waiting[0];
      if (!next || !this.mayRun(next.urgent)) {
        // An urgent waiter at the head could not run; normal ones behind it wait too.
        return;
      }
      this.waiting.shift();
      next.grant();
    }
  }
}
