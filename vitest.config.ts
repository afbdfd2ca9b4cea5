import { defineConfig } from 'vitest/config';
import LongFirstSequencer from './test/long-first-sequencer.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Integration files share one engine; each uses unique pod names, so files may run in parallel.
    // `npm test` runs agent-churn.test.ts alone after the rest: its 200 pods in 20 s take both cores
    // and the engine, which starved other files' timing (a CPU burner's reading) and its own bounds.
    fileParallelism: true,
    // Six, by measurement on the 2-core VM (docs/benchmarks.md, "The suite's time"): most files wait
    // on the engine, probe periods and back-off, not the CPU, so six overlap more of that waiting
    // than four (435 s → 377 s for the main run) and eight gained nothing more.
    maxWorkers: 6,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    sequence: { sequencer: LongFirstSequencer },
    globalSetup: ['test/integration/global-setup.ts'],
    reporters: ['default', './test/summary-reporter.ts'],
  },
});
