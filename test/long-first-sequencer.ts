import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Seconds the files of 15 s or more took in a whole run on the 2-core VM (2026-12-02, 4 workers), hooks
 * included. Vitest orders files longest first only from its results cache; without one (a fresh
 * clone, CI) it orders them by size, and the .suite.ts wrappers, a few lines each, started last:
 * lifecycle-restarts (67 s) at 542 s of a 700 s run, the tail of the run waiting on them.
 */
const KNOWN_SECONDS: Record<string, number> = {
  'test/integration/package.test.ts': 256,
  'test/integration/agent-rollback.test.ts': 90,
  'test/integration/cri-pull-gc.test.ts': 73,
  'test/integration/lifecycle-restarts.test.ts': 72,
  'test/integration/agent-dir.test.ts': 65,
  'test/integration/agent-freshness.test.ts': 64,
  'test/integration/lifecycle-restarts.cri.test.ts': 63,
  'test/integration/registry.test.ts': 62,
  'test/integration/hostile-containers.test.ts': 61,
  'test/integration/agent-stuck.test.ts': 54,
  'test/integration/lifecycle-probes.cri.test.ts': 54,
  'test/integration/exec-kill.cri.test.ts': 54,
  'test/integration/agent-signed.test.ts': 54,
  'test/integration/agent-url.test.ts': 51,
  'test/integration/prometheus.test.ts': 50,
  'test/integration/applied-by-name.test.ts': 50,
  'test/integration/newcomer.test.ts': 47,
  'test/integration/exec-kill.test.ts': 47,
  'test/integration/pod-boundary.cri.test.ts': 46,
  'test/integration/pod-boundary.test.ts': 45,
  'test/agent/pod-state.test.ts': 42,
  'test/integration/agent-apply.test.ts': 41,
  'test/integration/lifecycle-probes.test.ts': 40,
  'test/integration/parity-lifecycle.test.ts': 39,
  'test/integration/parity-container.test.ts': 37,
  'test/integration/agent-recovery.test.ts': 37,
  'test/integration/agent-kill9.test.ts': 36,
  'test/integration/kubectl-habits.test.ts': 36,
  'test/integration/hostile-inputs.test.ts': 35,
  'test/integration/agent-kill9.cri.test.ts': 34,
  'test/integration/upgrade.test.ts': 33,
  'test/integration/isolation.test.ts': 32,
  'test/integration/apply.test.ts': 31,
  'test/integration/parity-security-qos.test.ts': 30,
  'test/integration/agent-faults.test.ts': 29,
  // Measured beside upgrade.test.ts alone (2026-12-07), not in a whole run.
  'test/integration/upgrade.cri.test.ts': 29,
  'test/integration/lifecycle-termination.test.ts': 27,
  'test/integration/cri-exec.test.ts': 25,
  'test/integration/readme-tour.test.ts': 25,
  'test/integration/agent-engine.test.ts': 23,
  'test/integration/cri-restart.test.ts': 22,
  'test/integration/agent-lock.test.ts': 22,
  'test/integration/cri-pod-limits.test.ts': 22,
  'test/integration/lifecycle-termination.cri.test.ts': 21,
  'test/integration/cri-logs.test.ts': 21,
  'test/integration/podman.test.ts': 21,
  'test/integration/agent-security.test.ts': 21,
  'test/integration/gc.test.ts': 19,
  'test/integration/subpath-race.test.ts': 16,
  'test/integration/engine-timeout.test.ts': 15,
  // The engine suites on Podman and containerd 2 (issue 43): the 13 files run together, 6
  // workers, CI=true, 2026-12-07; Podman's slow down most beside one another (one store).
  'test/integration/lifecycle-restarts.podman.test.ts': 90,
  'test/integration/exec-kill.podman.test.ts': 90,
  'test/integration/lifecycle-restarts.cri2.test.ts': 84,
  'test/integration/agent-kill9.cri2.test.ts': 77,
  'test/integration/exec-kill.cri2.test.ts': 74,
  'test/integration/pod-boundary.podman.test.ts': 71,
  'test/integration/agent-logs.podman.test.ts': 61,
  'test/integration/lifecycle-probes.podman.test.ts': 51,
  // Measured alone (CI=true, 2026-12-07): beside the others, Podman's files take longer.
  'test/integration/agent-kill9.podman.test.ts': 46,
  'test/integration/pod-boundary.cri2.test.ts': 41,
  'test/integration/lifecycle-probes.cri2.test.ts': 38,
  'test/integration/lifecycle-termination.podman.test.ts': 33,
  'test/integration/lifecycle-termination.cri2.test.ts': 21,
  'test/integration/agent-logs.cri2.test.ts': 18,
};

/**
 * Longest first, so that no long file starts near the end while the other workers sit idle: a
 * failed file first (as Vitest does), then by the last run's time where the cache has it, else by
 * KNOWN_SECONDS, else as Vitest would order it.
 */
export default class LongFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const base = await super.sort(files);
    const cache = this.ctx.cache;
    const facts = new Map(
      base.map((f, i) => {
        const path = relative(this.ctx.config.root, f.moduleId);
        const last = cache.getFileTestResults(`${f.project.name}:${path}`);
        return [f, { i, failed: last?.failed ?? false, ms: last?.duration ?? (KNOWN_SECONDS[path] ?? 0) * 1000 }];
      }),
    );
    const of = (f: TestSpecification): { i: number; failed: boolean; ms: number } => facts.get(f)!;
    return [...base].sort((a, b) => Number(of(b).failed) - Number(of(a).failed) || of(b).ms - of(a).ms || of(a).i - of(b).i);
  }
}
