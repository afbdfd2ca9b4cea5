import { LABEL } from '../labels.js';
import type { EngineContainer, EngineRecord } from '../observed.js';
import type { EngineEvent, RuntimeObserver } from '../runtime-types.js';
import { observedCall } from './observed-call.js';
import { cgroupEventsPath, openCgroupSignal, unifiedRoot } from './cgroup-exit.js';
import type { CriRuntimeService } from './runtime-service.js';
import { isCriNotFound } from './engine-errors.js';
import { ExitSignals, type ExitSignalOptions } from './exit-signals.js';
import { ContainerState } from './messages.js';
import { placeFromInfo } from './readings.js';
import { recordFromStatus } from './records.js';
import type { RelistWatch } from './relist.js';

// The CRI engine's exit signals (exit-signals.ts) on this host's cgroups (cgroup-exit.ts), told
// into the relist (relist.ts) as the runtime's events are (container-events.ts): through
// `observe`, so the pod cache, the plan and the restart go as after a relist, and the relist that
// follows tells nothing twice. Where the runtime is not on this host or there is no cgroup v2
// tree, there are none: the relist alone, as before.

export interface CriExitSignalOptions extends ExitSignalOptions {
  /** The cgroupfs mount (tests: a directory of their own). */
  cgroupRoot?: string;
  /** Told of each runtime call the signals make, as the engine's own calls are (the runtime operation metrics). */
  observer?: RuntimeObserver;
}

/** Signals for a local runtime's containers, or undefined where there can be none. */
export function criExitSignals(
  client: CriRuntimeService,
  instance: string,
  watch: () => RelistWatch | undefined,
  o: CriExitSignalOptions = {},
): ExitSignals | undefined {
  // A remote endpoint's containers are not in this host's cgroups (the CRI is unix sockets only, but one can be a forwarded socket).
  if (!client.endpoint.startsWith('unix://') && !client.endpoint.startsWith('/')) return undefined;
  const root = unifiedRoot(o.cgroupRoot);
  if (!root) return undefined;
  return new ExitSignals(
    {
      open: async (id, fire) => {
        const { status, info } = await observedCall(o.observer, 'container status', () => client.containerStatusVerbose(id));
        // Ended before its signal could open: a look at once (the runtime is asked by the round).
        if (status.state !== ContainerState.RUNNING) return { ended: () => true, close: () => undefined };
        const place = placeFromInfo(info, 2);
        const path = place ? cgroupEventsPath(root, place.rel, id) : undefined;
        return path ? openCgroupSignal(path, fire) : undefined;
      },
      confirm: async (id) => {
        const w = watch();
        if (!w) return false;
        let record: EngineContainer;
        try {
          record = recordFromStatus(await observedCall(o.observer, 'container status', () => client.containerStatus(id)));
        } catch (err) {
          if (!isCriNotFound(err)) return false;
          w.observe(undefined, id);
          return true;
        }
        if (record.state === 'running' || record.state === 'created') return false;
        if (record.labels[LABEL.instance] === instance) w.observe(record);
        return true;
      },
    },
    o,
  );
}

/**
 * The relist's list and event sink, with the signals kept in step: every running container a list
 * shows is watched (the first list, and a start the agent's own call missed), a start told is
 * watched, an end or removal told unwatches. Sandboxes are left to the relist.
 */
export function exitSignalTaps(
  signals: ExitSignals | undefined,
  list: () => Promise<EngineRecord[]>,
  onEvent: (e: EngineEvent) => void,
): { list: () => Promise<EngineRecord[]>; onEvent: (e: EngineEvent) => void } {
  if (!signals) return { list, onEvent };
  return {
    list: async () => {
      const all = await list();
      signals.watchAll(all.filter((c) => c.kind === 'container' && c.state === 'running').map((c) => c.id));
      return all;
    },
    onEvent: (e) => {
      if (e.kind === 'started') signals.watch(e.id);
      else if (e.kind === 'exited' || e.kind === 'removed') signals.unwatch(e.id);
      onEvent(e);
    },
  };
}
