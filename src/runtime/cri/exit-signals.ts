// A container's death told by a signal of its own, sooner than the next relist: on a runtime
// without container events (containerd 1.6), the generic PLEG's 1 s relist is what sees a crash,
// so a restart waits half a second on average for nothing. Each running container gets one cheap
// signal (cgroup-exit.ts: its cgroup's `populated` going to 0); when it says the container ended,
// the runtime is asked about that one container (ContainerStatus) and its answer is told as a
// relist would tell it. The relist stays as the safety net: a signal that cannot be set up, or
// fires wrong, or never fires, costs only the time the relist takes anyway.
//
// This file is the bookkeeping alone (plain data, no fs, no runtime), so its bounds are tested:
// one signal per watched container and at most `maxWatched` of them; a signal that fires in a
// flood costs a read of it per change and at most one round of runtime checks per container life
// (the end of a container is final: it never runs again, a restart is a new container).

/** One container's open signal. */
export interface SignalHandle {
  /** Whether the signal says the container has ended (its cgroup empty or gone). Cheap: read on every change. */
  ended(): boolean;
  close(): void;
}

export interface ExitSignalDeps {
  /**
   * Opens the signal of container `id`; `fire` is called on each change of it. Undefined: there is
   * none for this container (it is not local, or already gone): the relist tells its end.
   */
  open(id: string, fire: () => void): Promise<SignalHandle | undefined>;
  /**
   * Asks the runtime about `id` once, and tells what it says as the relist would. True when the
   * end is told (the runtime says exited, or the container is gone); false when the runtime still
   * says it runs (it learns of an exit a few ms after the kernel does) or could not be asked.
   */
  confirm(id: string): Promise<boolean>;
  /** Timers (tests pass their own). */
  sleep?: (ms: number) => Promise<void>;
}

export interface ExitSignalOptions {
  /** At most this many containers are watched at once (each is an inotify watch); past it the relist alone. */
  maxWatched?: number;
  /** The waits before each runtime check once a signal says "ended": the first is 0, the last ends the round. */
  checkDelaysMs?: readonly number[];
}

/** Counts, for tests and metrics: what the signals cost. */
export interface ExitSignalCounts {
  /** Changes of any signal (each one read of a small file). */
  fired: number;
  /** Changes that came while a check round was on, or after the end was told: they cost nothing more. */
  coalesced: number;
  /** Runtime checks (ContainerStatus calls). */
  checks: number;
  /** Ends told ahead of the relist. */
  told: number;
  /** Containers not watched because `maxWatched` were. */
  refused: number;
}

/**
 * 0 ms (a runtime that already knows), then every 20 ms for 200 ms: containerd 1.6 says EXITED 65 to
 * 150 ms after the cgroup empties (measured here, a loaded machine), so a step of 20 ms finds it
 * within 20 ms for about 5 to 8 calls; then doubling from 100 ms, about 3.3 s in all, past which the
 * runtime is slow and the relist tells. At most 16 calls per container life.
 */
export const DEFAULT_CHECK_DELAYS_MS: readonly number[] = [0, ...Array<number>(10).fill(20), 100, 200, 400, 800, 1600];
export const DEFAULT_MAX_WATCHED = 1024;

interface Entry {
  handle?: SignalHandle;
  /** 'idle': waiting for the end; 'checking': a round of runtime checks is on; 'closed': unwatched. */
  phase: 'idle' | 'checking' | 'closed';
}

export class ExitSignals {
  private readonly entries = new Map<string, Entry>();
  readonly counts: ExitSignalCounts = { fired: 0, coalesced: 0, checks: 0, told: 0, refused: 0 };
  private readonly delays: readonly number[];
  private readonly max: number;
  private readonly sleep: (ms: number) => Promise<void>;
  private stopped = false;

  constructor(
    private readonly deps: ExitSignalDeps,
    o: ExitSignalOptions = {},
  ) {
    this.delays = o.checkDelaysMs?.length ? o.checkDelaysMs : DEFAULT_CHECK_DELAYS_MS;
    this.max = o.maxWatched ?? DEFAULT_MAX_WATCHED;
    this.sleep = deps.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms).unref()));
  }

  /** How many containers are watched now. */
  get size(): number {
    return this.entries.size;
  }

  has(id: string): boolean {
    return this.entries.has(id);
  }

  /** Starts watching a running container (again: nothing). Its end before the signal was open is caught by a first look. */
  watch(id: string): void {
    if (this.stopped || this.entries.has(id)) return;
    if (this.entries.size >= this.max) {
      this.counts.refused++;
      return;
    }
    const entry: Entry = { phase: 'idle' };
    this.entries.set(id, entry);
    this.deps
      .open(id, () => this.fire(id, entry))
      .then(
        (handle) => {
          if (!handle || entry.phase === 'closed') {
            handle?.close();
            if (!handle) this.drop(id, entry);
            return;
          }
          entry.handle = handle;
          // It may have ended between its start and now: a change before the watch is never told.
          this.fire(id, entry);
        },
        () => this.drop(id, entry),
      );
  }

  /** Stops watching (the relist told its end or removal, or it is no longer podrun's). */
  unwatch(id: string): void {
    const entry = this.entries.get(id);
    if (entry) this.drop(id, entry);
  }

  /** Watches each of `ids` not yet watched (a relist's running containers: the agent's start of one may not have been seen). */
  watchAll(ids: Iterable<string>): void {
    for (const id of ids) this.watch(id);
  }

  /** Closes every signal; nothing is watched or checked after. */
  stop(): void {
    this.stopped = true;
    for (const [id, entry] of [...this.entries]) this.drop(id, entry);
  }

  private drop(id: string, entry: Entry): void {
    entry.phase = 'closed';
    entry.handle?.close();
    entry.handle = undefined;
    if (this.entries.get(id) === entry) this.entries.delete(id);
  }

  private fire(id: string, entry: Entry): void {
    this.counts.fired++;
    if (entry.phase !== 'idle' || !entry.handle) {
      // A round is on, or it is closed, or not open yet (the first look after opening reads it).
      this.counts.coalesced++;
      return;
    }
    if (!entry.handle.ended()) return;
    entry.phase = 'checking';
    void this.round(id, entry);
  }

  /** The runtime asked until it says the container ended, at most once per delay; then the signal is closed either way. */
  private async round(id: string, entry: Entry): Promise<void> {
    try {
      for (const ms of this.delays) {
        if (ms > 0) await this.sleep(ms);
        if (entry.phase === 'closed') return;
        this.counts.checks++;
        if (await this.deps.confirm(id).catch(() => false)) {
          this.counts.told++;
          return;
        }
      }
    } finally {
      // Ended is final: a container whose cgroup emptied never runs again, so its signal is of no
      // more use; if the runtime never agreed, the relist tells what is true.
      this.drop(id, entry);
    }
  }
}
