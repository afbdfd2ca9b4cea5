import type { Pod } from '../../manifest/types.js';
import type { EngineContainer } from '../observed.js';
import type { CriClient } from './client.js';
import { isCriNotFound } from './engine-errors.js';
import { recordFromSandbox, recordFromStatus } from './records.js';

// The CRI engine's lookups of sandboxes, made with what it already knows, so that a pod's start
// and the look after it each cost one round trip to the runtime and not two in a row.

/**
 * Whether a new sandbox's IP must be known before its containers start: a container's env names
 * `status.podIP(s)`, or a postStart hook reaches the pod over the network (an httpGet or
 * tcpSocket with no host goes to the pod IP). The kubelet asks PodSandboxStatus after every
 * RunPodSandbox (kuberuntime_manager.go SyncPod); for any other pod podrun asks when the IP is
 * first wanted (probes, status), which spares a start one round trip.
 */
export function podIPNeededAtStart(pod: Pod): boolean {
  if (pod.spec.hostNetwork) return false;
  return [...(pod.spec.initContainers ?? []), ...pod.spec.containers].some((c) => {
    if (c.env?.some((e) => /^status\.podIPs?$/.test(e.valueFrom?.fieldRef?.fieldPath ?? ''))) return true;
    const hook = c.lifecycle?.postStart;
    return hook !== undefined && !hook.exec && !hook.sleep;
  });
}

/**
 * A container or sandbox by id as a record, or undefined when the runtime has neither. The CRI
 * asks for each kind by its own call: an id known to be a sandbox (podrun made or listed it) is
 * asked as one first, so the look after a start asks the sandbox and its containers at once.
 */
export async function lookUpRecord(client: CriClient, id: string, sandboxFirst: boolean, pauseImage: string): Promise<EngineContainer | undefined> {
  const missing = (err: unknown): Promise<undefined> => (isCriNotFound(err) ? Promise.resolve(undefined) : Promise.reject(err));
  const asSandbox = async (): Promise<EngineContainer | undefined> => {
    const sb = await client.podSandboxStatus(id).catch(missing);
    return sb ? recordFromSandbox(sb, pauseImage, sb.network?.ip) : undefined;
  };
  const asContainer = async (): Promise<EngineContainer | undefined> => {
    const s = await client.containerStatus(id).catch(missing);
    return s ? recordFromStatus(s) : undefined;
  };
  return sandboxFirst ? ((await asSandbox()) ?? asContainer()) : ((await asContainer()) ?? asSandbox());
}
