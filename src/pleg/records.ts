import { LABEL } from '../runtime/labels.js';
import { groupObserved, type EngineRecord, type ObservedPod } from '../runtime/observed.js';

/**
 * The cache's records (sandboxes and containers) by id, indexed by pod, with each pod's grouped
 * view kept until one of its records changes: a pod is looked at on every sync and every probe result, and grouping
 * parses the specs its containers carry in their labels (JSON), so a scan and a parse each time
 * made those looks the idle agent's largest cost after the probes themselves. The views are
 * shared: nobody may change one.
 */
export class ContainerRecords {
  private readonly byId = new Map<string, EngineRecord>();
  private readonly byPod = new Map<string, Map<string, EngineRecord>>();
  private readonly views = new Map<string, ObservedPod>();

  get size(): number {
    return this.byId.size;
  }

  get(id: string): EngineRecord | undefined {
    return this.byId.get(id);
  }

  set(id: string, rec: EngineRecord): void {
    this.delete(id);
    this.byId.set(id, rec);
    const uid = rec.labels[LABEL.podUid] ?? '';
    this.views.delete(uid);
    let pod = this.byPod.get(uid);
    if (!pod) this.byPod.set(uid, (pod = new Map()));
    pod.set(id, rec);
  }

  delete(id: string): void {
    const rec = this.byId.get(id);
    if (!rec) return;
    this.byId.delete(id);
    const uid = rec.labels[LABEL.podUid] ?? '';
    this.views.delete(uid);
    const pod = this.byPod.get(uid);
    pod?.delete(id);
    if (pod?.size === 0) this.byPod.delete(uid);
  }

  clear(): void {
    this.byId.clear();
    this.byPod.clear();
    this.views.clear();
  }

  /** A record was changed in place (an event's new state). */
  changed(id: string): void {
    const rec = this.byId.get(id);
    if (rec) this.views.delete(rec.labels[LABEL.podUid] ?? '');
  }

  /**
   * The pod's grouped view (undefined: no container of podrun's is recorded for it). Only a pod
   * with records has a view kept: anyone may ask after any UID (a deleted pod, a typo on the
   * socket), and remembering each "none" would keep every UID ever asked after.
   */
  pod(uid: string): ObservedPod | undefined {
    const kept = this.views.get(uid);
    if (kept) return kept;
    if (!this.byPod.has(uid)) return undefined;
    const view = groupObserved(this.ofPod(uid))[0];
    if (view) this.views.set(uid, view);
    return view;
  }

  /** Entries of the index by pod: each pod, and each record under it (a leak of either shows). */
  get podIndexSize(): number {
    let n = this.byPod.size;
    for (const pod of this.byPod.values()) n += pod.size;
    return n;
  }

  /** Grouped views kept (at most one per pod with records). */
  get viewCount(): number {
    return this.views.size;
  }

  pods(): ObservedPod[] {
    const out: ObservedPod[] = [];
    for (const uid of this.byPod.keys()) {
      const p = this.pod(uid);
      if (p) out.push(p);
    }
    return out;
  }

  ofPod(uid: string): EngineRecord[] {
    const pod = this.byPod.get(uid);
    return pod ? [...pod.values()] : [];
  }

  /** The pods that have any record. */
  uids(): string[] {
    return [...this.byPod.keys()];
  }
}
