import type { DesiredPod } from '../manifest/types.js';
import { specOf } from '../reconcile/lifecycle.js';
import type { HeldStart } from '../reconcile/start-backoff.js';
import type { PodRecord } from './pod-record.js';

/**
 * What the kubelet says of a container the back-off holds: `ImagePullBackOff` ("Back-off pulling
 * image", a Normal BackOff event) or `CrashLoopBackOff` ("Back-off restarting failed container", a
 * Warning), each event once per stretch of back-off, the waiting reason on the pod's record.
 */
export function noteHeld(
  d: DesiredPod,
  r: PodRecord,
  held: readonly HeldStart[],
  backOff: (type: 'Normal' | 'Warning', message: string, container: string) => void,
): void {
  for (const h of held) {
    const before = r.waiting.get(h.name);
    if (h.reason === 'ImagePullBackOff') {
      const image = specOf(d.pod, h.name)?.image ?? '';
      // A later turn in the same stretch (another event, a refresh) keeps the message it has: it
      // alone still holds the failed attempt's own answer, which only the first turn saw.
      if (before?.reason === 'ImagePullBackOff') continue;
      backOff('Normal', `Back-off pulling image "${image}"`, h.name);
      // The failed attempt's own message (the registry's answer) stays readable behind it.
      const why = before ? `: ${before.message}` : '';
      r.waiting.set(h.name, { reason: 'ImagePullBackOff', message: `Back-off pulling image "${image}"${why}` });
      continue;
    }
    if (h.reason !== 'CrashLoopBackOff') continue;
    if (before?.reason !== 'CrashLoopBackOff') backOff('Warning', 'Back-off restarting failed container', h.name);
    r.waiting.set(h.name, {
      reason: 'CrashLoopBackOff',
      message: `back-off ${Math.round(h.waitMs / 1000)}s restarting failed container=${h.name} pod=${d.pod.metadata.name}_${d.pod.metadata.namespace ?? 'default'}(${d.uid})`,
    });
  }
}
