import type { EngineRecord, RecordKind } from '../observed.js';
import type { CriRuntimeService } from './runtime-service.js';
import { isCriNotFound } from './engine-errors.js';
import { recordFromSandbox, recordFromStatus } from './records.js';

// The CRI engine's look at one sandbox or container by id, as what it is: PodSandboxStatus for a
// sandbox, ContainerStatus for a container, never one tried after the other (the runtime logs
// each NotFound, and a look after a start would cost two round trips in a row).

/** A sandbox or container by id as a record, or undefined when the runtime does not have it. */
export async function lookUpRecord(client: CriRuntimeService, id: string, kind: RecordKind, pauseImage: string): Promise<EngineRecord | undefined> {
  const missing = (err: unknown): Promise<undefined> => (isCriNotFound(err) ? Promise.resolve(undefined) : Promise.reject(err));
  if (kind === 'sandbox') {
    const sb = await client.podSandboxStatus(id).catch(missing);
    return sb ? recordFromSandbox(sb, pauseImage, sb.network?.ip) : undefined;
  }
  const s = await client.containerStatus(id).catch(missing);
  return s ? recordFromStatus(s) : undefined;
}
