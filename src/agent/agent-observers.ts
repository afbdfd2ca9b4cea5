import type { GarbageCollector } from '../gc/collector.js';
import type { Logger } from '../log/logger.js';
import { AgentMetrics, operationType } from '../metrics/agent-metrics.js';
import type { PodCache } from '../pleg/cache.js';
import type { RuntimeObserver } from '../runtime/runtime-types.js';
import type { DesiredSet } from './desired-set.js';
import type { SyncObserver } from './pod-syncer.js';

/** The parts the agent's metrics read when scraped. */
export interface MeteredParts {
  cache: Pick<PodCache, 'pods' | 'connected'>;
  set: Pick<DesiredSet, 'sources' | 'expiries'>;
  gc: Pick<GarbageCollector, 'counters'>;
}

/** The agent's metrics registry; `parts` is read at each scrape (the parts are made after it). */
export function metricsFor(parts: () => MeteredParts): AgentMetrics {
  return new AgentMetrics({
    pods: () =>
      parts()
        .cache.pods()
        .map((p) => ({
          running: p.sandboxes[0]?.state === 'ready',
          containers: p.containers.map((c) => ({ state: c.state, type: c.type })),
        })),
    engineConnected: () => parts().cache.connected,
    sources: () => parts().set.sources.map((s) => ({ name: s.name, ready: s.ready, errors: s.errors().filter((i) => i.severity === 'error').length })),
    setExpiries: () => parts().set.expiries(),
    gc: () => parts().gc.counters,
  });
}

/** What the engine tells the metrics (every call, every pull) and the log (its notices). */
export function engineObserver(m: AgentMetrics, log: Logger): RuntimeObserver {
  return {
    call: (what, seconds, failed) => m.engineCall(operationType(what), seconds, failed),
    pull: (seconds, ok) => m.imagePulled(seconds, ok),
    notice: (message) => log.info(message),
  };
}

/** What the syncer tells the metrics: starts, failed starts, restarts and every probe run. */
export function syncObserver(m: AgentMetrics): SyncObserver {
  return {
    started: (type) => m.containerStarted(type),
    startFailed: (type, reason) => m.containerStartFailed(type, reason),
    restarted: (ns, pod, c) => m.containerRestarted(ns, pod, c),
    probed: (where, kind, result, seconds) => m.probes.observe(where, kind, result, seconds),
    probesGone: (uid) => m.probes.forgetPod(uid),
  };
}
