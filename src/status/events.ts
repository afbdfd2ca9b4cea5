export type EventType = 'Normal' | 'Warning';

export interface PodRef {
  uid: string;
  namespace: string;
  name: string;
}

/** An event in the shape of a v1 Event's main fields. */
export interface PodEvent {
  type: EventType;
  reason: string;
  message: string;
  count: number;
  firstTimestamp: string;
  lastTimestamp: string;
  involvedObject: { kind: 'Pod'; namespace: string; name: string; uid: string; fieldPath?: string };
  source: { component: 'podrun' };
}

/**
 * Events with the kubelet's reasons, in a bounded ring per pod, oldest first by their last time. An
 * event identical to one kept (type, reason, message, object), whether or not it is the newest,
 * bumps that one's count and moves it last instead of taking a slot, as client-go's
 * EventCorrelator keys events (tools/record/events_cache.go getEventKey, eventObserve): a hung
 * liveness probe's eight failures are one line, "x8", however readiness failures fall between.
 */
export class EventRecorder {
  private readonly rings = new Map<string, PodEvent[]>();

  constructor(
    private readonly perPod = 100,
    private readonly now: () => Date = () => new Date(),
  ) {}

  record(pod: PodRef, type: EventType, reason: string, message: string, fieldPath?: string): void {
    const ring = this.rings.get(pod.uid) ?? [];
    const ts = this.now().toISOString();
    const i = ring.findIndex((e) => e.type === type && e.reason === reason && e.message === message && e.involvedObject.fieldPath === fieldPath);
    const same = i < 0 ? undefined : ring.splice(i, 1)[0];
    if (same) {
      same.count++;
      same.lastTimestamp = ts;
      ring.push(same);
    } else {
      ring.push({
        type,
        reason,
        message,
        count: 1,
        firstTimestamp: ts,
        lastTimestamp: ts,
        involvedObject: { kind: 'Pod', namespace: pod.namespace, name: pod.name, uid: pod.uid, ...(fieldPath ? { fieldPath } : {}) },
        source: { component: 'podrun' },
      });
      if (ring.length > this.perPod) ring.splice(0, ring.length - this.perPod);
    }
    this.rings.set(pod.uid, ring);
  }

  /** Pods with events kept. */
  podCount(): number {
    return this.rings.size;
  }

  list(uid?: string): PodEvent[] {
    if (uid) return [...(this.rings.get(uid) ?? [])];
    return [...this.rings.values()].flat().sort((a, b) => a.lastTimestamp.localeCompare(b.lastTimestamp));
  }

  forget(uid: string): void {
    this.rings.delete(uid);
  }
}
