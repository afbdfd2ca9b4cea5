import type { EngineRecord } from '../observed.js';
import type { CriRuntimeService } from './runtime-service.js';
import { isCriNotFound } from './engine-errors.js';
import { recordFromSandbox, recordFromStatus } from './records.js';

// The CRI engine's lookups of sandboxes, made with what it already knows, so that a pod's start
// and the look after it each cost one round trip to the runtime and not two in a row.

/**
 * A container or sandbox by id as a record, or undefined when the runtime has neither. The CRI
 * asks for each kind by its own call: an id known to be a sandbox (podrun made or listed it) is
 * asked as one first, so the look after a start asks the sandbox and its containers at once.
 */
export async function lookUpRecord(client: CriRuntimeService, id: string, sandboxFirst: boolean, pauseImage: string): Promise<EngineRecord | undefined> {
  const missing = (err: unknown): Promise<undefined> => (isCriNotFound(err) ? Promise.resolve(undefined) : Promise.reject(err));
  const asSandbox = async (): Promise<EngineRecord | undefined> => {
    const sb = await client.podSandboxStatus(id).catch(missing);
    return sb ? recordFromSandbox(sb, pauseImage, sb.network?.ip) : undefined;
  };
  const asContainer = async (): Promise<EngineRecord | undefined> => {
    const s = await client.containerStatus(id).catch(missing);
    return s ? recordFromStatus(s) : undefined;
  };
  return sandboxFirst ? ((await asSandbox()) ?? asContainer()) : ((await asContainer()) ?? asSandbox());
}
