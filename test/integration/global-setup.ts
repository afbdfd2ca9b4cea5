import { tmpdir } from 'node:os';
import Docker from 'dockerode';
import { reapRun, startRun, sweepDeadRuns, type SweepReport } from './suite-run.js';

function said(what: string, r: SweepReport): void {
  if (r.runs.length === 0) return;
  process.stderr.write(
    `${what}: ${r.runs.length} run dir(s), ${r.processes} process(es), ${r.containers.length} container(s), ` +
      `${r.links.length} link(s), ${r.netns.length} netns, ${r.cgroups.length} cgroup(s)\n`,
  );
}

/**
 * Every run needs the real engine and the locally built test images (scripts/setup makes both).
 * A missing engine fails the run, in CI and out of it: integration tests are never skipped.
 *
 * Then it removes what killed runs left (suite-run.ts), and makes this run's directory: TMPDIR
 * for the workers and everything they start, so all this run makes is found again by its path.
 */
export default async function setup(): Promise<() => Promise<void>> {
  const docker = new Docker();
  try {
    await docker.ping();
  } catch (err) {
    throw new Error(`the Docker engine does not answer (${(err as Error).message}); run scripts/setup first`);
  }
  for (const image of ['podrun-test/busybox:1', 'podrun-test/pause:1']) {
    try {
      await docker.getImage(image).inspect();
    } catch {
      throw new Error(`test image ${image} is missing; run scripts/setup first`);
    }
  }
  const base = tmpdir();
  said('removed what killed suite runs left', await sweepDeadRuns(base, docker));
  const run = await startRun(base);
  process.env['TMPDIR'] = run.root;
  process.env['PODRUN_TEST_RUN'] = run.id;
  return async () => {
    // A test that failed before its cleanup leaves its things here: they go with the run.
    await run.close();
    said('removed what this run left', await reapRun(run.root, run.id, docker, undefined, { dead: false }));
    process.env['TMPDIR'] = base;
  };
}
