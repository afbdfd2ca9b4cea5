import { join } from 'node:path';
import { writeFileAtomic } from '../base/atomic-file.js';
import type { Logger } from '../log/logger.js';
import { formatIssue } from '../manifest/errors.js';
import type { DesiredPod } from '../manifest/types.js';
import type { ObservedPod } from '../runtime/observed.js';
import { APPLY_PREFIX } from '../sources/applied-sets.js';
import { mergeOrigins, podDigest, type Conflict, type OriginPods } from '../sources/merge.js';
import { shownSource } from '../sources/origin-names.js';
import type { PodSource, SetExpiry } from '../sources/source.js';
import type { EventRecorder } from '../status/events.js';
import { keptMessage, refusalMessage, refusals, type Refusal } from '../status/refusal.js';

/**
 * The origin that declares a pod on the engine, as the sources name it: a pod `podrun apply` made
 * (without an agent) carries its file as source and its set as apply-set, and the agent reads
 * that set from the applied directory.
 */
export function originOf(o: ObservedPod): string {
  return o.applySet ? `${APPLY_PREFIX}${o.applySet}` : o.source;
}

/** An origin as people named it: the path or URL (an applied pod's own file), not `apply:<hash>`. */
function shownOrigin(snapshot: OriginPods[], origin: string, key: string): string {
  const d = snapshot.find((o) => o.origin === origin)?.pods.find((p) => p.key === key);
  const shown = shownSource(d?.origin.shown ?? origin);
  return origin.startsWith(APPLY_PREFIX) ? `${shown} (applied)` : shown;
}

/** A conflict as told once: the name, and who declares it. */
function conflictId(c: Conflict): string {
  return `${c.key}|${c.origins.join('|')}`;
}

/** What a merge changed: pods to sync again, and pods no longer declared. */
export interface DesiredChange {
  changed: string[];
  gone: string[];
}

/**
 * The desired pod set: every source merged into one set (a contested name keeps its holder),
 * conflicts and invalid files told once each and as pod events, and the whole written to
 * `<state-dir>/agent-status.json`. Between the declared pods and what runs stands the health gate
 * (`run`): a rolled-back update runs its last Ready version.
 */
export class DesiredSet {
  /** What runs, by namespace/name and by uid. */
  private byKey = new Map<string, DesiredPod>();
  private byUid = new Map<string, DesiredPod>();
  /** What the sources declare, by uid. */
  private declaredByUid = new Map<string, DesiredPod>();
  private holders = new Map<string, string>();
  /** origin\0key → the digest of what that origin declared at the last merge (none before the first). */
  private declarations: Map<string, string> | undefined;
  private conflicts: Conflict[] = [];
  /** Pods refused (invalid, or against the policy) that are not running a last good version, by key; `running`: the engine has one. */
  private refused = new Map<string, Refusal & { running: boolean }>();
  private readonly reported = new Set<string>();
  /** The status file as last written. */
  private lastStatus = '';
  /** Sources that were ready when a merge read them (the kubelet's seen sources). */
  private readonly seen = new Set<PodSource>();
  /** A source told of a change the set has not merged yet (the merge is paced). */
  private unmerged = true;

  constructor(
    readonly sources: PodSource[],
    private readonly o: { stateDir: string; log: Logger; events: EventRecorder; run: (d: DesiredPod) => DesiredPod },
  ) {}

  get(uid: string): DesiredPod | undefined {
    return this.byUid.get(uid);
  }

  declared(uid: string): DesiredPod | undefined {
    return this.declaredByUid.get(uid);
  }

  uids(): IterableIterator<string> {
    return this.byUid.keys();
  }

  declaredUids(): Set<string> {
    return new Set(this.declaredByUid.keys());
  }

  pods(): DesiredPod[] {
    return [...this.byKey.values()];
  }

  get size(): number {
    return this.byUid.size;
  }

  /** The pod runs `next` from now on (a health-gate verdict). */
  replace(next: DesiredPod): void {
    this.byUid.set(next.uid, next);
    this.byKey.set(next.key, next);
  }

  /** Merges the sources again, with the engine's pods to say who held a contested name. */
  merge(observed: ObservedPod[]): DesiredChange {
    // After a restart the engine says who held a contested name: the running pod keeps it.
    const holders = new Map(this.holders);
    for (const o of observed) {
      const key = `${o.namespace}/${o.name}`;
      if (!holders.has(key) && o.source) holders.set(key, originOf(o));
    }
    for (const s of this.sources) if (s.ready) this.seen.add(s);
    this.unmerged = false;
    const snapshot = this.sources.flatMap((s) => s.snapshot());
    // What each origin declared at the last merge: where an apply is involved, a declaration that
    // changed since is the latest word on its pod (an apply updates a pod by name; so does editing
    // the watched file an apply overrode). At the first merge nothing is "latest": the engine's
    // holder keeps its pod.
    const first = this.declarations === undefined;
    const seen = this.declarations ?? new Map<string, string>();
    const applied = (origin: string | undefined): boolean => origin?.startsWith(APPLY_PREFIX) === true;
    const merged = mergeOrigins(
      snapshot,
      holders,
      (origin, d, holder) => !first && (applied(origin) || applied(holder)) && seen.get(`${origin}\0${d.key}`) !== podDigest(d),
    );
    this.declarations = new Map(snapshot.flatMap((o) => o.pods.map((d) => [`${o.origin}\0${d.key}`, podDigest(d)] as const)));
    for (const c of merged.conflicts) {
      const id = conflictId(c);
      if (this.reported.has(id)) continue;
      this.reported.add(id);
      // Named as people gave them (paths, URLs), not by podrun's names for applied sets.
      const name = (origin: string): string => shownOrigin(snapshot, origin, c.key);
      const others = c.origins.filter((o) => o !== c.kept).map(name);
      const message = `pod ${c.key} is also declared, differently, by ${others.join(' and ')}; running the one from ${name(c.kept)} (remove the others, or make them alike, to end this)`;
      this.o.log.warn(`conflict: ${message}`, { pod: c.key, source: name(c.kept) });
      const d = merged.pods.get(c.key);
      if (d) this.o.events.record({ uid: d.uid, name: d.pod.metadata.name, namespace: d.pod.metadata.namespace ?? 'default' }, 'Warning', 'Conflict', message);
    }
    // A conflict is told once while it lasts; one that ended is forgotten (it is told again if it
    // comes back), so names fought over once are not kept for the agent's life.
    const current = new Set(merged.conflicts.map(conflictId));
    for (const id of this.reported) if (!current.has(id)) this.reported.delete(id);
    this.conflicts = merged.conflicts;
    this.recordValidationEvents();
    this.recordRefusals(merged.pods, observed);
    const before = this.byUid;
    this.declaredByUid = new Map([...merged.pods.values()].map((d) => [d.uid, d]));
    this.byKey = new Map([...merged.pods].map(([key, d]) => [key, this.o.run(d)]));
    this.byUid = new Map([...this.byKey.values()].map((d) => [d.uid, d]));
    this.holders = new Map([...merged.pods.values()].map((d) => [d.key, d.origin.source]));
    const changed = [...this.byUid].filter(([uid, d]) => {
      const prev = before.get(uid);
      return !prev || podDigest(prev) !== podDigest(d);
    });
    const change = { changed: changed.map(([uid]) => uid), gone: [...before.keys()].filter((uid) => !this.byUid.has(uid)) };
    this.writeStatus();
    return change;
  }

  /** A source told of a change: until it is merged, the set is not the sources' last word. */
  sourcesChanged(): void {
    this.unmerged = true;
  }

  /** Every source has loaded and a merge has read it (the kubelet's sourcesReady.AllReady()). */
  get sourcesReady(): boolean {
    return this.sources.every((s) => this.seen.has(s));
  }

  /**
   * A pod not declared anywhere is deleted only once whoever made it has loaded and could read
   * what it made it from (a corrupt or unreadable file protects its pods, as a URL that never
   * answered does), and only from a set that has merged what its sources said: a source ready but
   * not merged yet (at start, or while the merge is paced) may be about to declare the pod.
   */
  mayDelete(o: ObservedPod): boolean {
    if (this.unmerged) return false;
    const origin = originOf(o);
    const owner = this.sources.find((s) => s.owns(origin));
    return owner ? this.seen.has(owner) && owner.canForget(origin) : this.sourcesReady;
  }

  /** Pods refused and not declared: shown Failed, or, when one runs, with a condition. */
  refusals(): (Refusal & { running: boolean })[] {
    return [...this.refused.values()];
  }

  /** Conflicts told and still standing. */
  stateSize(): Record<string, number> {
    return { conflictsReported: this.reported.size };
  }

  /** Every source loaded and merged: what the set leaves out is not wanted (health gate and GC prune by it). */
  get loaded(): boolean {
    return this.sourcesReady;
  }

  /** The expiry of every signed set in force that has one. */
  expiries(): SetExpiry[] {
    return this.sources.flatMap((s) => s.expiries?.() ?? []);
  }

  /** An invalid manifest keeps its last good pods; say so on those pods (reason FailedValidation). */
  private recordValidationEvents(): void {
    for (const source of this.sources) {
      const errors = source.errors().filter((i) => i.severity === 'error');
      if (!errors.length) continue;
      for (const { origin, pods } of source.snapshot()) {
        const mine = errors.filter((e) => origin.endsWith(`:${e.file}`));
        for (const e of mine) {
          for (const d of pods) {
            // A refused signature is not a broken manifest: say which, so no one hunts for a typo.
            const reason = e.refused ? 'FailedVerification' : 'FailedValidation';
            this.o.events.record(
              { uid: d.uid, name: d.pod.metadata.name, namespace: d.pod.metadata.namespace ?? 'default' },
              'Warning',
              reason,
              `${formatIssue(e)} (running the last good version)`,
            );
          }
        }
      }
    }
  }

  /**
   * A pod a source names but refuses (no last good version of it runs from there) is told as a
   * Warning event on it, as the kubelet's rejectPod does. One the engine runs (the policy was
   * tightened after it started) is told so and kept.
   */
  private recordRefusals(declared: Map<string, DesiredPod>, observed: ObservedPod[]): void {
    // The engine's uid where one runs: a manifest may give its own metadata.uid, and describe reads events by it.
    const onEngine = new Map(observed.map((o) => [`${o.namespace}/${o.name}`, o.uid]));
    const next = new Map<string, Refusal & { running: boolean }>();
    for (const source of this.sources) {
      for (const r of refusals(source.errors())) {
        if (declared.has(r.key) || next.has(r.key)) continue;
        const uid = onEngine.get(r.key);
        const running = uid !== undefined;
        next.set(r.key, { ...r, uid: uid ?? r.uid, running });
        const ref = { uid: uid ?? r.uid, name: r.name, namespace: r.namespace };
        this.o.events.record(ref, 'Warning', r.reason, running ? keptMessage(r) : refusalMessage(r), r.issue.field);
      }
    }
    // A refusal that ended, for a pod neither declared nor on the engine: its events go with it.
    for (const [key, r] of this.refused) if (!next.has(key) && !declared.has(key) && !onEngine.has(key)) this.o.events.forget(r.uid);
    this.refused = next;
  }

  private writeStatus(): void {
    const status = {
      pid: process.pid,
      sources: this.sources.map((s) => {
        const signedBy = s.signedBy?.() ?? [];
        const now = Date.now();
        const sets = (s.expiries?.() ?? []).map((e) => ({
          origin: e.origin,
          ...(e.version !== undefined ? { version: e.version } : {}),
          expires: e.expires.toISOString(),
          expired: e.expires.getTime() <= now,
        }));
        return {
          name: s.name,
          ready: s.ready,
          errors: s
            .errors()
            .filter((i) => i.severity === 'error')
            .map(formatIssue),
          ...(signedBy.length ? { signedBy } : {}),
          ...(sets.length ? { sets } : {}),
        };
      }),
      conflicts: this.conflicts,
      refused: [...this.refused.values()].map((r) => ({ pod: r.key, reason: r.reason, running: r.running, message: formatIssue(r.issue) })),
      desired: [...this.byKey.keys()].sort(),
    };
    const text = `${JSON.stringify(status, null, 2)}\n`;
    // Most merges under churn change a pod's spec, not this: the same text is not written again.
    if (text === this.lastStatus) return;
    try {
      writeFileAtomic(join(this.o.stateDir, 'agent-status.json'), text, { durable: false });
      this.lastStatus = text;
    } catch (err) {
      this.o.log.error(`cannot write status: ${(err as Error).message}`);
    }
  }
}
