import { LABEL } from '../runtime/labels.js';
import type { EngineContainer } from '../runtime/observed.js';

/**
 * The cache's container records by id, indexed by pod: a pod's own containers are asked for on
 * every sync and every probe result, and a scan of all of them (two per pod at least) made each
 * such look cost O(pods).
 */
export class ContainerRecords {
  private readonly byId = new Map<string, EngineContainer>();
  private readonly byPod = new Map<string, Map<string, EngineContainer>>();

  get size(): number {
    return this.byId.size;
  }

  get(id: string): EngineContainer | undefined {
    return this.byId.get(id);
  }

  set(id: string, rec: EngineContainer): void {
    this.delete(id);
    this.byId.set(id, rec);
    const uid = rec.Labels[LABEL.podUid] ?? '';
    let pod = this.byPod.get(uid);
    if (!pod) this.byPod.set(uid, (pod = new Map()));
    pod.set(id, rec);
  }

  delete(id: string): void {
    const rec = this.byId.get(id);
    if (!rec) return;
    this.byId.delete(id);
    const uid = rec.Labels[LABEL.podUid] ?? '';
    const pod = this.byPod.get(uid);
    pod?.delete(id);
    if (pod?.size === 0) this.byPod.delete(uid);
  }

  clear(): void {
    this.byId.clear();
    this.byPod.clear();
  }

  all(): EngineContainer[] {
    return [...this.byId.values()];
  }

  ofPod(uid: string): EngineContainer[] {
    const pod = this.byPod.get(uid);
    return pod ? [...pod.values()] : [];
  }

  /** The pods that have any record. */
  uids(): string[] {
    return [...this.byPod.keys()];
  }
}
