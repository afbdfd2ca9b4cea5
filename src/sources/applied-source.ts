import { basename } from 'node:path';
import type { DesiredPod } from '../manifest/types.js';
import { DirectorySource, type DirectorySourceOptions } from './dir-source.js';
import { appliedDir, appliedHolders, appliedSources } from './applied-sets.js';
import type { OriginPods } from './merge.js';
import { APPLY_PREFIX, appliedSetOf } from './origin-names.js';
import type { PodSource } from './source.js';

// The applied sets as the agent's source. Apart from applied-sets.ts so that `podrun apply`, which
// only records sets, does not load the directory watcher (chokidar) at every start.
//
// A pod re-applied from elsewhere moves between two set files in two writes, the new set first.
// The directory source reads each file on its own, at its own moment (a change waits to settle, a
// removal does not), so it may hold the new set's old version and the old set's new one: the pod
// would be declared twice (a conflict) or nowhere (deleted, then made again). The disk, read when
// that happens, says which: the set that holds the pod with the highest stamp is its set, and a
// pod gone from the sources' view but held on disk is on its way to a set not read yet: it stays
// as it is until then.

type Holders = Map<string, { setId: string; stamp: number }[]>;

/**
 * The applied sets' pods with every move seen whole: a key in several sets goes to the set that
 * holds it on disk with the highest stamp (a tie, from sets written before stamps, is left to the
 * merge as before); a key that left the view but is held on disk keeps its `previous` declaration.
 * `disk` is read only when one of the two happens. Pure but for `disk`.
 */
export function resolveMoves(view: OriginPods[], previous: ReadonlyMap<string, { origin: string; pod: DesiredPod }>, disk: () => Holders): OriginPods[] {
  const where = new Map<string, string[]>();
  for (const o of view) for (const d of o.pods) where.set(d.key, [...(where.get(d.key) ?? []), o.origin]);
  const twice = [...where].filter(([, origins]) => origins.length > 1);
  const vanished = [...previous].filter(([k]) => !where.has(k));
  if (twice.length === 0 && vanished.length === 0) return view;
  const held = disk();
  const dropped = new Set<string>();
  for (const [key, origins] of twice) {
    const stamps = origins.map((origin) => held.get(key)?.find((h) => h.setId === appliedSetOf(origin))?.stamp ?? -1);
    const top = Math.max(...stamps);
    if (top < 0 || stamps.filter((s) => s === top).length > 1) continue;
    origins.forEach((origin, i) => stamps[i] !== top && dropped.add(`${origin}\0${key}`));
  }
  const out = view.map((o) => ({ origin: o.origin, pods: o.pods.filter((d) => !dropped.has(`${o.origin}\0${d.key}`)) }));
  for (const [key, was] of vanished) {
    if (!held.get(key)?.length) continue;
    const at = out.find((o) => o.origin === was.origin);
    if (at) at.pods.push(was.pod);
    else out.push({ origin: was.origin, pods: [was.pod] });
  }
  return out;
}

/** The directory source of the applied sets, with moves resolved (resolveMoves). */
export class AppliedSource implements PodSource {
  readonly name: string;
  private previous = new Map<string, { origin: string; pod: DesiredPod }>();

  constructor(
    private readonly inner: PodSource,
    private readonly stateDir: string,
  ) {
    this.name = inner.name;
  }

  get ready(): boolean {
    return this.inner.ready;
  }

  snapshot(): OriginPods[] {
    const out = resolveMoves(this.inner.snapshot(), this.previous, () => {
      try {
        return appliedHolders(this.stateDir);
      } catch {
        // Unreadable now: the view as it is, as before moves were resolved.
        return new Map();
      }
    });
    this.previous = new Map(out.flatMap((o) => o.pods.map((d) => [d.key, { origin: o.origin, pod: d }] as const)));
    return out;
  }

  errors(): ReturnType<PodSource['errors']> {
    return this.inner.errors();
  }

  owns(source: string): boolean {
    return this.inner.owns(source);
  }

  canForget(source: string): boolean {
    return this.inner.canForget(source);
  }

  readNow(): void {
    this.inner.readNow?.();
  }

  start(onChange: () => void): Promise<void> {
    return this.inner.start(onChange);
  }

  stop(): Promise<void> {
    return this.inner.stop();
  }
}

/** The set files as read one by one, moves unresolved. */
export function appliedFiles(stateDir: string, o: Omit<DirectorySourceOptions, 'origin'> = {}): DirectorySource {
  return new DirectorySource(appliedDir(stateDir), {
    ...o,
    // Written atomically by podrun itself: no editor dance to wait for.
    removeGraceMs: 0,
    origin: { of: (path) => `${APPLY_PREFIX}${basename(path, '.json')}`, prefix: APPLY_PREFIX, shown: appliedSources },
  });
}

export function appliedSource(stateDir: string, o: Omit<DirectorySourceOptions, 'origin'> = {}): PodSource {
  return new AppliedSource(appliedFiles(stateDir, o), stateDir);
}
