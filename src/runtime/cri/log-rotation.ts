import { createReadStream, createWriteStream } from 'node:fs';
import { readdir, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import type { CriRuntimeService } from './runtime-service.js';
import { ContainerState } from './messages.js';

// A CRI runtime writes each container's log forever: rotating it is the kubelet's job (its
// container log manager, pkg/kubelet/logs/container_log_manager.go), and so podrun's on CRI. Each
// period, every running container whose log reached maxBytes has its log renamed to
// `<log>.<YYYYMMDD-hhmmss>` and the runtime asked to reopen it (ReopenContainerLog); the rotated
// files but the newest are gzipped, and the oldest removed so that the current file, the newest
// rotated one and the compressed ones are at most maxFiles.

export interface LogRotationPolicy {
  maxBytes: number;
  /** Files kept per container, the current one included (at least 2, as the kubelet's). */
  maxFiles: number;
}

const TMP = '.tmp';
const GZ = '.gz';

/** The kubelet's rotated-file stamp (Go's "20060102-150405"), in UTC so names sort by time whatever the zone. */
export function rotationStamp(d: Date): string {
  const p = (n: number, w = 2): string => String(n).padStart(w, '0');
  return `${p(d.getUTCFullYear(), 4)}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}-${p(d.getUTCHours())}${p(d.getUTCMinutes())}${p(d.getUTCSeconds())}`;
}

/** The rotated files of `log` (`<log>.<stamp>[.gz]`), oldest first; a file of another name is never touched. */
export async function rotatedLogs(log: string): Promise<string[]> {
  const dir = dirname(log);
  const base = `${basename(log)}.`;
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return [];
  }
  return names
    .filter((n) => n.startsWith(base) && /^\d{8}-\d{6}(?:\.gz|\.tmp|\.gz\.tmp)?$/.test(n.slice(base.length)))
    .sort()
    .map((n) => join(dir, n));
}

/**
 * A removed container's log: the current file and its rotated ones, as the kubelet's
 * containerLogManager.Clean (every `<log>*`), here only the names podrun's rotation makes.
 */
export async function removeContainerLog(log: string): Promise<void> {
  for (const f of [...(await rotatedLogs(log)), log]) await rm(f, { force: true });
}

/**
 * What the kubelet's filterUnusedLogs leaves: temporaries of a compression that did not finish
 * are removed, and so is an uncompressed file whose `.gz` exists (compressed, not yet removed).
 */
function splitUnused(logs: string[]): { inUse: string[]; unused: string[] } {
  const all = new Set(logs);
  const inUse: string[] = [];
  const unused: string[] = [];
  for (const l of logs) {
    if (l.endsWith(TMP) || (!l.endsWith(GZ) && all.has(l + GZ))) unused.push(l);
    else inUse.push(l);
  }
  return { inUse, unused };
}

async function compress(log: string): Promise<void> {
  const tmp = log + TMP;
  try {
    await pipeline(createReadStream(log), createGzip(), createWriteStream(tmp, { mode: 0o640 }));
    await rename(tmp, log + GZ);
  } finally {
    await rm(tmp, { force: true });
  }
  await rm(log, { force: true });
}

/**
 * Rotates one container's log, as the kubelet's rotateLog: clean up, remove the excess oldest
 * first (a reader of them keeps its open file), compress, then rename the current file and have
 * the runtime reopen it. A refused reopen renames it back, so nothing is lost and the next round
 * tries again.
 */
export async function rotateLog(
  client: Pick<CriRuntimeService, 'reopenContainerLog'>,
  id: string,
  log: string,
  policy: LogRotationPolicy,
  now = new Date(),
): Promise<void> {
  const { inUse, unused } = splitUnused(await rotatedLogs(log));
  for (const l of unused) await rm(l, { force: true });
  const keep = Math.max(0, policy.maxFiles - 2);
  const excess = inUse.slice(0, Math.max(0, inUse.length - keep));
  for (const l of excess) await rm(l, { force: true });
  for (const l of inUse.slice(excess.length)) if (!l.endsWith(GZ)) await compress(l);
  const rotated = `${log}.${rotationStamp(now)}`;
  // Two rotations within one second would share a name: the second waits for the next round.
  if (
    await stat(rotated).then(
      () => true,
      () => false,
    )
  )
    return;
  if (
    await stat(`${rotated}${GZ}`).then(
      () => true,
      () => false,
    )
  )
    return;
  await rename(log, rotated);
  try {
    await client.reopenContainerLog(id);
  } catch (err) {
    await rename(rotated, log).catch(() => undefined);
    throw err;
  }
}

export type RotationClient = Pick<CriRuntimeService, 'listContainers' | 'containerStatus' | 'reopenContainerLog'>;

/**
 * One round over the running containers the selector picks (podrun's own: another client's
 * containers on a shared runtime are that client's to rotate). A failure with one container is
 * reported and the others still rotate.
 */
export async function rotateRound(
  client: RotationClient,
  labelSelector: Record<string, string>,
  policy: LogRotationPolicy,
  onError: (id: string, err: Error) => void,
): Promise<void> {
  const containers = await client.listContainers({ labelSelector });
  for (const c of containers) {
    if (c.state !== ContainerState.RUNNING) continue;
    try {
      const s = await client.containerStatus(c.id);
      if (!s.logPath) continue;
      let size = await stat(s.logPath).then(
        (st) => st.size,
        (e: NodeJS.ErrnoException) => (e.code === 'ENOENT' ? undefined : Promise.reject(e)),
      );
      if (size === undefined) {
        // Gone (a rotation the runtime never reopened after, or removed by hand): reopen makes it anew.
        await client.reopenContainerLog(c.id);
        size = (await stat(s.logPath)).size;
      }
      if (size < policy.maxBytes) continue;
      await rotateLog(client, c.id, s.logPath, policy);
    } catch (err) {
      onError(c.id, err as Error);
    }
  }
}

/** Rounds every `periodMs` (the kubelet's containerLogMonitorInterval, 10 s) until the returned stop. */
export function startLogRotation(
  client: RotationClient,
  labelSelector: Record<string, string>,
  policy: LogRotationPolicy,
  onError: (id: string, err: Error) => void,
  periodMs = 10_000,
): () => void {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const tick = async (): Promise<void> => {
    await rotateRound(client, labelSelector, policy, onError).catch((err: unknown) => onError('', err as Error));
    if (!stopped) schedule();
  };
  const schedule = (): void => {
    timer = setTimeout(() => void tick(), periodMs);
    timer.unref();
  };
  schedule();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
