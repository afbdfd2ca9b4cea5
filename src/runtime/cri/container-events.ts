import { LABEL } from '../labels.js';
import type { EngineRecord } from '../observed.js';
import { CriNotSupportedError } from './errors.js';
import { ContainerEventType, type ContainerEvent } from './messages.js';
import { recordFromSandbox, recordFromStatus } from './records.js';
import type { RelistWatch } from './relist.js';

// The runtime's own container events (runtime.v1 GetContainerEvents: containerd 1.7+, CRI-O), as
// the kubelet's evented PLEG (pkg/kubelet/pleg/evented.go) follows them: each event carries the
// sandbox's status and its containers' statuses, so a change is known without a list. They go
// through the relist's record of what it saw (relist.ts), so the relist that stays as a safety
// net tells no change twice. A runtime without the call (containerd 1.6 answers Unimplemented)
// is followed by relisting every second, as the generic PLEG does.

/** What one runtime event says of the container (or sandbox) it names. */
export type FoldedEvent = { record: EngineRecord } | { removedId: string; podUid: string } | undefined;

/**
 * One event as a record: the container's status from the event's statuses, a sandbox's from its
 * sandbox status; DELETED as gone. Events for what is not this podrun instance's are dropped, as
 * one the runtime sent without a sandbox status (the kubelet drops those too: a relist will tell).
 */
export function foldContainerEvent(ev: ContainerEvent, o: { instance: string; pauseImage: string }): FoldedEvent {
  const sb = ev.podSandboxStatus;
  if (!sb || !ev.containerId) return undefined;
  const ours = (labels: Record<string, string>): boolean => labels[LABEL.instance] === o.instance;
  if (!ours({ ...sb.labels, ...sb.annotations })) return undefined;
  if (ev.containerEventType === ContainerEventType.DELETED) return { removedId: ev.containerId, podUid: sb.metadata?.uid ?? '' };
  if (ev.containerId === sb.id) return { record: recordFromSandbox(sb, o.pauseImage, sb.network?.ip) };
  const status = ev.containersStatuses.find((c) => c.id === ev.containerId);
  if (!status) return undefined;
  const record = recordFromStatus(status);
  return ours(record.labels) ? { record } : undefined;
}

export interface EventFollowOptions {
  instance: string;
  pauseImage: string;
  /** The relist's period once the runtime's events are followed (a safety net, as the evented PLEG's 300 s). */
  slowPeriodMs: number;
  /** The generic PLEG's period when they are not. */
  fastPeriodMs: number;
  /** Said once per engine: which way the runtime is followed. */
  notice: (message: string) => void;
  /** Whether the runtime already said it has no events (asked once per engine, not at each reconnect). */
  known: { unsupported: boolean; followed: boolean };
}

/**
 * Follows `events` into `watch` until `signal` aborts. The relist runs at the fast period until
 * the first event shows the stream is served; a stream that breaks puts it back to the fast
 * period (and ends this follow: the next watch, after a reconnect, tries again). Unimplemented is
 * said once and never asked again of this engine.
 */
export async function followContainerEvents(events: AsyncIterable<ContainerEvent>, watch: RelistWatch, o: EventFollowOptions): Promise<void> {
  try {
    for await (const ev of events) {
      if (!o.known.followed) {
        o.known.followed = true;
        o.notice(`following the runtime's container events (GetContainerEvents); relisting every ${Math.round(o.slowPeriodMs / 1000)} s as a safety net`);
      }
      watch.setPeriod(o.slowPeriodMs);
      const f = foldContainerEvent(ev, o);
      if (!f) continue;
      if ('record' in f) watch.observe(f.record);
      else watch.observe(undefined, f.removedId);
    }
  } catch (err) {
    watch.setPeriod(o.fastPeriodMs);
    if (err instanceof CriNotSupportedError) {
      o.known.unsupported = true;
      o.notice(
        `the runtime does not serve GetContainerEvents (Unimplemented: containerd before 1.7): relisting every ${Math.round(o.fastPeriodMs / 1000)} s instead, as the kubelet's generic PLEG`,
      );
    }
    // Any other failure: the relist goes on at the fast period, and its own failure (the runtime
    // gone) is what ends the watch.
  }
  watch.setPeriod(o.fastPeriodMs);
}
