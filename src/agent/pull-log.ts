import type { Logger } from '../log/logger.js';
import type { PullProgress } from '../runtime/runtime-types.js';

/**
 * The agent's account of its pulls, as log records (JSON under --log-format json): when each
 * starts, how far it is every 10 s (an operator watching a slow link sees it move), how it ended.
 */
export function pullLogger(log: Logger, nowMs: () => number = Date.now): (p: PullProgress) => void {
  const last = new Map<string, number>();
  return (p) => {
    const fields = { image: p.image, layers: p.layers, layersDone: p.layersDone, bytes: p.bytes, totalBytes: p.totalBytes };
    if (p.end) {
      last.delete(p.image);
      if (p.end.ok) log.info(`pulled image ${p.image} in ${p.end.seconds.toFixed(1)}s`, { ...fields, seconds: Number(p.end.seconds.toFixed(3)) });
      else log.warn(`failed to pull image ${p.image}: ${p.end.error ?? ''}`, { ...fields, seconds: Number(p.end.seconds.toFixed(3)) });
      return;
    }
    const now = nowMs();
    const prev = last.get(p.image);
    if (prev !== undefined && now - prev < 10_000) return;
    last.set(p.image, now);
    log.info(
      prev === undefined ? `pulling image ${p.image}` : `pulling image ${p.image}: ${p.layersDone}/${p.layers} layers, ${p.bytes}/${p.totalBytes} bytes`,
      fields,
    );
  };
}
