import { eventFromDocker, type DockerEvent } from './records.js';
import type { EngineEvent } from '../runtime-types.js';

// The engine's event stream read apart from the runtime that asks for it: its bytes are the
// engine's (newline-delimited JSON in arbitrary chunks), and a bad line must cost one event, not
// the watch.

/** Reads `stream` into events; `onEnd` is called once when it ends or fails. Returns the stop. */
export function followEventStream(
  stream: NodeJS.ReadableStream & { destroy?: () => void },
  onEvent: (e: EngineEvent) => void,
  onEnd: (err?: Error) => void,
): () => void {
  let buffered = '';
  let ended = false;
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
      if (e) onEvent(e);
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
