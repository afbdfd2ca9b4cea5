import { eventFromDocker, type DockerEvent } from './records.js';
import type { EngineEvent } from '../runtime-types.js';

// The engine's event stream read apart from the runtime that asks for it: its bytes are the
// engine's (newline-delimited JSON in arbitrary chunks), and a bad line must cost one event, not
// the watch.

/** Events a stream remembers having sent: far more of podrun's than Podman keeps in its file's newer half. */
const REMEMBERED = 1024;

/**
 * What a stream has already told. Podman 4.1 to 4.4 with its file events backend (the default
 * without journald) cuts its events file to the newer half when it outgrows
 * `events_logfile_max_size` (1 MB), and every stream following the file reads that half again
 * from its start (podman#17665, fixed in 4.5): tens of seconds of old events, in the order they
 * happened, for containers that have since died or gone. Taken as news they bring a dead sandbox
 * back to running, and a removed one back to life, until the replay reaches its own end; a turn
 * between two chunks of it saw two running sandboxes and replaced a healthy pod. Neither kind is
 * news: an event stamped before the stream began is in the list the cache makes after
 * subscribing, and an event the stream has sent is known. The engine's clock stamps both sides.
 */
class Told {
  private readonly keys = new Set<string>();
  private readonly ring: { key: string; timeMs: number }[] = [];
  private next = 0;
  /** Events stamped at or before this were forgotten (the ring's oldest): a replay of one is not news either. */
  private forgottenMs = -Infinity;

  constructor(private readonly sinceMs: number | undefined) {}

  /** Whether the event is news, remembering it if so. */
  news(raw: DockerEvent, e: EngineEvent): boolean {
    if (this.sinceMs !== undefined && e.timeMs > 0 && e.timeMs < this.sinceMs) return false;
    if (e.timeMs <= this.forgottenMs) return false;
    // The raw action and the engine's nanoseconds: a start and a restart are both `started`.
    const key = `${raw.Action ?? ''} ${e.id} ${raw.timeNano ?? raw.time ?? ''}`;
    if (this.keys.has(key)) return false;
    this.keys.add(key);
    const old = this.ring[this.next];
    if (old) {
      this.keys.delete(old.key);
      this.forgottenMs = Math.max(this.forgottenMs, old.timeMs);
    }
    this.ring[this.next] = { key, timeMs: e.timeMs };
    this.next = (this.next + 1) % REMEMBERED;
    return true;
  }
}

/**
 * Reads `stream` into events; `onEnd` is called once when it ends or fails. Returns the stop.
 * `sinceMs`: the engine's time once the stream followed it; what it stamped before is no news.
 */
export function followEventStream(
  stream: NodeJS.ReadableStream & { destroy?: () => void },
  onEvent: (e: EngineEvent) => void,
  onEnd: (err?: Error) => void,
  sinceMs?: number,
): () => void {
  let buffered = '';
  let ended = false;
  const told = new Told(sinceMs);
  const end = (err?: Error): void => {
    if (ended) return;
    ended = true;
    onEnd(err);
  };
  // The stream is newline-delimited JSON in arbitrary chunks: buffer and split.
  stream.on('data', (chunk: Buffer) => {
    buffered += chunk.toString('utf8');
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, nl).trim();
      buffered = buffered.slice(nl + 1);
      if (!line) continue;
      let raw: DockerEvent;
      try {
        raw = JSON.parse(line) as DockerEvent;
      } catch {
        // A malformed line is skipped; the periodic relist covers whatever it said.
        continue;
      }
      const e = raw && typeof raw === 'object' ? eventFromDocker(raw) : undefined;
      if (e && told.news(raw, e)) onEvent(e);
    }
  });
  stream.on('end', () => end());
  stream.on('close', () => end());
  stream.on('error', (err: Error) => end(err));
  return () => {
    ended = true;
    stream.destroy?.();
  };
}
