import { describe, expect, it } from 'vitest';
import { recordedStartup, startupRegressions } from '../../bench/startup-guard.js';

// The bench's start-up guard reads the ratios recorded in docs/benchmarks.md and fails growth.

const DOC = `## Results

### Agent start-up adopting 50 running pods

| measure | podrun | ratio |
| --- | --- | --- |
| start | 1 s | **9.99 (9–10)** |

### CLI start-up (whole process, each run paired with \`node -e 0\`)

| command | podrun | \`node -e 0\` | ratio | target |
| --- | --- | --- | --- | --- |
| \`podrun version\` | 87 ms (85 ms–90 ms) | 53 ms (52 ms–55 ms) | **1.63 (1.57–1.72)** | ≤ 2.0 (met) |
| \`podrun apply\` of 20 unchanged pods | 139 ms | 52 ms | **2.68 (2.56–3.11)** | ≤ 3.0 (met) |

### Verifying a signed set

| key | verify |
| --- | --- |
| ed25519 | **5.00** |
`;

describe('start-up guard', () => {
  it('reads the median ratio of each command of the CLI start-up table only', () => {
    expect([...recordedStartup(DOC)]).toEqual([
      ['`podrun version`', 1.63],
      ['`podrun apply` of 20 unchanged pods', 2.68],
    ]);
    expect(recordedStartup('# nothing recorded yet').size).toBe(0);
  });

  it('fails a ratio more than 10 % over the recorded one, and nothing at or under it', () => {
    const recorded = recordedStartup(DOC);
    expect(
      startupRegressions(recorded, [
        { name: '`podrun version`', median: 1.79 },
        { name: '`podrun apply` of 20 unchanged pods', median: 2.0 },
      ]),
    ).toEqual([]);
    const grew = startupRegressions(recorded, [
      { name: '`podrun version`', median: 1.8 },
      { name: 'a command never recorded', median: 9 },
    ]);
    expect(grew).toEqual(['`podrun version`: start-up ratio 1.80 is more than 10 % over the recorded 1.63']);
  });
});
