import type { PodEngine } from '../runtime/roles.js';
import type { SetExpiry } from '../sources/source.js';
import { podrunVersion } from '../status/version.js';
import { DEFAULT_EVICTION_HARD, parseEvictionThresholds, type NodeCondition, type Signal, type Threshold } from '../stats/node.js';
import { nodeView, type NodeView } from '../stats/node-view.js';
import type { CpuStats } from '../stats/summary.js';

/**
 * The node as the agent reports it (`get node`, the Summary API): the engine's facts, read once
 * per connection, and conditions judged against the eviction thresholds, each condition keeping
 * its transition time from one reading to the next.
 */
export class NodeStatus {
  private readonly thresholds: ReadonlyMap<Signal, Threshold>;
  private facts: Awaited<ReturnType<PodEngine['engineFacts']>> | undefined;
  private last: { conditions: NodeCondition[]; cpu: CpuStats } | undefined;
  private readonly startTime = new Date().toISOString();

  /** Refuses a bad `--eviction-hard` here, so a typo in a threshold is a start-up error. */
  constructor(
    private readonly rt: PodEngine,
    private readonly o: { stateDir: string; evictionHard?: string; engineUp: () => boolean; pods: () => number; setExpiries?: () => SetExpiry[] },
  ) {
    this.thresholds = parseEvictionThresholds(o.evictionHard ?? DEFAULT_EVICTION_HARD);
  }

  /** The engine (re)connected: its facts are read again, off the critical path. */
  connected(): void {
    void this.rt.engineFacts().then(
      (f) => (this.facts = f),
      () => undefined,
    );
  }

  async now(): Promise<NodeView> {
    // Read once per connection; asked for before that (just after start), read now.
    if (!this.facts && this.o.engineUp()) this.facts = await this.rt.engineFacts().catch(() => undefined);
    const v = nodeView({
      rt: this.rt,
      facts: this.facts,
      stateDir: this.o.stateDir,
      engineUp: this.o.engineUp(),
      thresholds: this.thresholds,
      startTime: this.startTime,
      podrunVersion: podrunVersion(),
      pods: this.o.pods(),
      ...(this.last ? { previous: this.last.conditions, previousCpu: this.last.cpu } : {}),
      ...(this.o.setExpiries ? { setExpiries: this.o.setExpiries() } : {}),
    });
    this.last = { conditions: v.conditions, cpu: v.summary.cpu };
    return v;
  }
}
