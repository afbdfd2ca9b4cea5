import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
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

const NETNS_DIR = '/run/netns';

/**
 * /run/netns made a shared mount point before any runtime of the tests makes a namespace there.
 * containerd's netns code (CNI's, as podman's) makes it one on first use, check then act: it
 * bind-mounts the directory onto itself, recursively, when it is not a mount point yet. When two
 * private containerds start their first sandboxes together, a namespace one of them mounted a
 * moment before is copied into the bind and its original stays hidden below, where no unmount
 * reaches it: its file is busy for good, and StopPodSandbox fails on it ("remove netns: ...
 * device or resource busy"; cri-pod-limits in a fresh-clone run). Made once, as iproute2 would.
 */
function sharedNetnsDir(): void {
  const mountPoints = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[4]);
  if (mountPoints.includes(NETNS_DIR)) return;
  mkdirSync(NETNS_DIR, { recursive: true });
  for (const args of [
    ['--bind', NETNS_DIR, NETNS_DIR],
    ['--make-shared', NETNS_DIR],
  ]) {
    const r = spawnSync('mount', args, { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`mount ${args.join(' ')}: ${r.stderr.trim()}`);
  }
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
  sharedNetnsDir();
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
