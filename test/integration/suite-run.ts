import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, renameSync, rmdirSync, rmSync, statSync } from 'node:fs';
import { connect, createServer, type Server } from 'node:net';
import { randomBytes } from 'node:crypto';
import { basename, dirname, join } from 'node:path';
import Docker from 'dockerode';
import { instanceId, LABEL } from '../../src/runtime/labels.js';

// One suite run, and the sweep of runs that were killed before they could clean up.
//
// A run owns one directory, <tmp>/podrun-suite-<id>. Global setup points TMPDIR at it, so every
// temp dir a test makes lands there: its state dirs (whose hash is the podrun.io/instance label on
// every container they make), private containerds, engines and registries. Containers a test
// makes without podrun carry TEST_RUN_LABEL. A run is alive while its process listens on
// alive.sock in that directory: a killed run's socket refuses, whatever its pid became.

export const RUN_PREFIX = 'podrun-suite-';
/** On containers a test makes itself (not through podrun): the suite run that made them. */
export const TEST_RUN_LABEL = 'io.podrun.test-run';
const ALIVE = 'alive.sock';
/** Deep enough for <run>/<world>/state and <run>/<world>/<clone>/state. */
const STATE_DIR_DEPTH = 4;

/** The run the current process belongs to (set by global setup), for TEST_RUN_LABEL. */
export function currentRunId(): string {
  return process.env['PODRUN_TEST_RUN'] ?? 'none';
}

/** Labels for a container a test makes without podrun. */
export function testRunLabels(): Record<string, string> {
  return { [TEST_RUN_LABEL]: currentRunId() };
}

export interface SuiteRun {
  id: string;
  root: string;
  close(): Promise<void>;
}

/**
 * Makes this run's directory and starts answering on its socket. The directory is made under a
 * dot name and renamed once the socket listens, so no sweep ever sees it without a listener.
 */
export async function startRun(base: string): Promise<SuiteRun> {
  const id = randomBytes(6).toString('hex');
  const staging = join(base, `.${RUN_PREFIX}${id}`);
  const root = join(base, `${RUN_PREFIX}${id}`);
  mkdirSync(staging, { recursive: true, mode: 0o755 });
  const server: Server = createServer((s) => s.end());
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(join(staging, ALIVE), resolve);
  });
  server.unref();
  renameSync(staging, root);
  return { id, root, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** Whether the run owning `root` still listens. Only a refused or missing socket counts as dead. */
export function isAlive(root: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(join(root, ALIVE));
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', (e: NodeJS.ErrnoException) => resolve(!(e.code === 'ECONNREFUSED' || e.code === 'ENOENT')));
  });
}

/** What a sweep removed, for the log and for the test that checks it. */
export interface SweepReport {
  runs: string[];
  processes: number;
  containers: string[];
  links: string[];
  netns: string[];
  cgroups: string[];
}

function emptyReport(): SweepReport {
  return { runs: [], processes: 0, containers: [], links: [], netns: [], cgroups: [] };
}

/** Removes what every dead run under `base` left; a live run (this one included) is not touched. */
export async function sweepDeadRuns(base: string, docker = new Docker()): Promise<SweepReport> {
  const report = emptyReport();
  let names: string[] = [];
  try {
    names = readdirSync(base);
  } catch {
    return report;
  }
  for (const name of names) {
    if (!name.startsWith(RUN_PREFIX)) continue;
    const root = join(base, name);
    if (await isAlive(root)) continue;
    await reapRun(root, name.slice(RUN_PREFIX.length), docker, report);
  }
  return report;
}

interface Proc {
  pid: number;
  ppid: number;
  argv: string[];
  cwd: string;
  exe: string;
  /** The environment it was started with (later changes are not in /proc). */
  environ: string;
}

function processes(): Proc[] {
  const out: Proc[] = [];
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      const status = readFileSync(`/proc/${p}/status`, 'utf8');
      if (/^State:\s+Z/m.test(status)) continue;
      out.push({
        pid: Number(p),
        ppid: Number(/^PPid:\s+(\d+)$/m.exec(status)?.[1]),
        argv: readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0'),
        cwd: safeReadlink(`/proc/${p}/cwd`),
        exe: safeReadlink(`/proc/${p}/exe`),
        environ: safeRead(`/proc/${p}/environ`),
      });
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

function safeRead(path: string): string {
  try {
    return readFileSync(path, 'latin1');
  } catch {
    return '';
  }
}

function safeReadlink(path: string): string {
  try {
    return readlinkSync(path);
  } catch {
    return '';
  }
}

const under = (path: string, root: string): boolean => path === root || path.startsWith(`${root}/`);

/**
 * The processes a run left: those that name its directory (agents by --state-dir, containerd by
 * its config, shims by containerd's socket, engines by their roots) or work in it, and every
 * descendant of those (a shim's sandboxes and containers). With `runIds`, also those started with
 * one of them as PODRUN_TEST_RUN (a run's workers, and all they started): only for a dead run,
 * since a live run's workers carry it too.
 */
function leftProcesses(root: string, runIds?: Set<string>): { all: Proc[]; shimChildren: Proc[] } {
  const procs = processes();
  const self = new Set<number>();
  for (let p = process.pid; p > 1;) {
    self.add(p);
    p = procs.find((x) => x.pid === p)?.ppid ?? 0;
  }
  const marks = [...(runIds ?? [])].map((id) => `\0PODRUN_TEST_RUN=${id}\0`);
  const names = (p: Proc): boolean =>
    p.argv.some((a) => a.includes(`${root}/`)) || under(p.cwd, root) || under(p.exe, root) || marks.some((m) => `\0${p.environ}`.includes(m));
  const named = new Set(procs.filter((p) => !self.has(p.pid) && names(p)).map((p) => p.pid));
  let grew = true;
  while (grew) {
    grew = false;
    for (const p of procs) {
      if (!named.has(p.pid) && named.has(p.ppid) && !self.has(p.pid)) {
        named.add(p.pid);
        grew = true;
      }
    }
  }
  const all = procs.filter((p) => named.has(p.pid));
  const shims = new Set(all.filter((p) => /containerd-shim/.test(p.exe)).map((p) => p.pid));
  return { all, shimChildren: all.filter((p) => shims.has(p.ppid)) };
}

/** Every directory below `root` (a few levels): the state dirs whose instances a run's podrun made. */
function dirsBelow(root: string, depth: number, out: string[] = []): string[] {
  out.push(root);
  if (depth === 0) return out;
  let entries: import('node:fs').Dirent[] = [];
  try {
    entries = readdirSync(root, { withFileTypes: true });
  } catch {
    return out;
  }
  for (const e of entries) if (e.isDirectory()) dirsBelow(join(root, e.name), depth - 1, out);
  return out;
}

/** Files named `name` in `dirs`. */
function filesNamed(dirs: string[], name: RegExp): string[] {
  const out: string[] = [];
  for (const d of dirs) {
    try {
      for (const f of readdirSync(d)) if (name.test(f)) out.push(join(d, f));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** A container's own cgroup under containerd's default parent or a pod cgroup of podrun's (pod-cgroup.ts). */
export const CONTAINER_CGROUP = /\/(k8s\.io|podrun\/[0-9a-f]+\/pod[A-Za-z0-9-]+)\/[0-9a-f]{64}$/;

/** The cgroup directories a process is in, on every hierarchy (v1 per controller, v2 unified). */
export function cgroupDirs(pid: number): string[] {
  const out: string[] = [];
  try {
    for (const line of readFileSync(`/proc/${pid}/cgroup`, 'utf8').split('\n')) {
      const m = /^\d+:([^:]*):(\/.+)$/.exec(line);
      if (!m?.[2]) continue;
      const hierarchy = m[1] ? m[1].replace(/^name=/, '') : existsSync('/sys/fs/cgroup/unified/cgroup.procs') ? 'unified' : '';
      out.push(join('/sys/fs/cgroup', hierarchy, m[2]));
    }
  } catch {
    // gone meanwhile
  }
  return out;
}

/** Removes a cgroup directory once its killed tasks are reaped; whether it was there to remove. */
export async function rmdirRetrying(dir: string): Promise<boolean> {
  for (let i = 0; i < 40; i++) {
    try {
      rmdirSync(dir);
      return true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
      // Killed tasks leave the cgroup as they are reaped.
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return false;
}

/** The pod cgroups podrun made for these instances (`<hierarchy>/podrun/<instance>/pod<uid>`). */
function podrunCgroups(instances: Set<string>): string[] {
  const bases = existsSync('/sys/fs/cgroup/cgroup.controllers') ? ['/sys/fs/cgroup'] : readdirSync('/sys/fs/cgroup').map((h) => join('/sys/fs/cgroup', h));
  const out: string[] = [];
  for (const base of bases) {
    for (const inst of instances) {
      const mine = join(base, 'podrun', inst);
      try {
        for (const d of readdirSync(mine, { withFileTypes: true })) if (d.isDirectory()) out.push(join(mine, d.name));
        out.push(mine);
      } catch {
        // none on this hierarchy
      }
    }
  }
  return out;
}

/**
 * The run's containers in Podman's store, removed in rounds until none lists (a few at most).
 * One round is not enough: the processes killed above include the run's conmons (they carry its
 * mark), so Podman never gets a container's exit file, and `podman rm -f` of a running one fails
 * after waiting for it ("timed out waiting for file /run/libpod/exits/<id>": more often under
 * load), leaving it Exited (-1), and then its sandbox is refused ("has dependent containers").
 * The next round's `rm -f` removes both at once. A `ps` that fails lists nothing, so is tried again.
 */
function reapPodman(instances: Set<string>, runIds: Set<string>, report: SweepReport): void {
  const format = `{{.ID}} {{index .Labels "${LABEL.instance}"}} {{index .Labels "${TEST_RUN_LABEL}"}} {{index .Labels "${LABEL.containerType}"}}`;
  for (let round = 0; round < 5; round++) {
    const ps = spawnSync('podman', ['ps', '-a', '--format', format], { encoding: 'utf8' });
    const ours = (ps.stdout?.split('\n') ?? [])
      .map((line) => line.split(' '))
      .filter(([id, inst, run]) => id && (instances.has(inst ?? '') || runIds.has(run ?? '')));
    if (ps.status === 0 && ours.length === 0) return;
    for (const [id] of [...ours.filter((f) => f[3] !== 'sandbox'), ...ours.filter((f) => f[3] === 'sandbox')]) {
      // Gone meanwhile (removed by a round before, or by its own agent) is as good as removed.
      const rm = spawnSync('podman', ['rm', '-f', '--ignore', id!], { encoding: 'utf8' });
      if (rm.status === 0 && !report.containers.includes(`podman:${id}`)) report.containers.push(`podman:${id}`);
    }
  }
}

/**
 * Removes all a dead run left, in the order that keeps anything from coming back: its processes
 * (an agent would recreate a removed container), then containers, network, cgroups, mounts and
 * the directory.
 */
export async function reapRun(
  root: string,
  runId: string,
  docker: Docker,
  report: SweepReport = emptyReport(),
  o: { dead: boolean } = { dead: true },
): Promise<SweepReport> {
  report.runs.push(root);
  // What a shim's children hold is read before they die: their network namespaces and cgroups.
  // The run, and the runs started inside it (a test of the sweep runs a suite of its own there).
  const dirs = dirsBelow(root, STATE_DIR_DEPTH);
  const runIds = new Set([runId, ...dirs.flatMap((d) => (basename(d).startsWith(RUN_PREFIX) ? [basename(d).slice(RUN_PREFIX.length)] : []))]);
  // A live run's own workers carry its id until its pool closes: only the runs inside it are known so.
  const left = leftProcesses(root, o.dead ? runIds : new Set([...runIds].filter((id) => id !== runId)));
  const netnsInodes = new Set<number>();
  const cgroups = new Set<string>();
  for (const p of left.shimChildren) {
    try {
      netnsInodes.add(statSync(`/proc/${p.pid}/ns/net`).ino);
    } catch {
      // gone meanwhile
    }
    for (const c of cgroupDirs(p.pid)) if (CONTAINER_CGROUP.test(c)) cgroups.add(c);
  }
  for (const p of left.all) {
    try {
      process.kill(p.pid, 'SIGKILL');
      report.processes++;
    } catch {
      // exited meanwhile
    }
  }

  // Containers on the shared engine: those of the run's podrun instances, and those its tests made.
  const instances = new Set(dirs.map((d) => instanceId(d)));
  const list = await docker.listContainers({ all: true, filters: JSON.stringify({ label: [LABEL.instance] }) }).catch(() => []);
  const made = (await docker.listContainers({ all: true, filters: JSON.stringify({ label: [TEST_RUN_LABEL] }) }).catch(() => [])).filter((c) =>
    runIds.has(c.Labels[TEST_RUN_LABEL] ?? ''),
  );
  for (const c of [...list.filter((c) => instances.has(c.Labels[LABEL.instance] ?? '')), ...made]) {
    await docker
      .getContainer(c.Id)
      .remove({ force: true, v: true })
      .then(() => report.containers.push(c.Names[0] ?? c.Id))
      .catch(() => undefined);
  }
  const volumes = (await docker.listVolumes({ filters: JSON.stringify({ label: [LABEL.instance] }) }).catch(() => ({ Volumes: [] }))).Volumes ?? [];
  for (const v of volumes.filter((v) => instances.has(v.Labels?.[LABEL.instance] ?? '')))
    await docker
      .getVolume(v.Name)
      .remove()
      .catch(() => undefined);
  // Podman keeps its own store: the run's instances there too. Sandboxes last: Podman refuses to
  // remove one that others joined, and its conmon would watch it on.
  if (spawnSync('sh', ['-c', 'command -v podman'], { stdio: 'ignore' }).status === 0) reapPodman(instances, runIds, report);

  // Network: the bridges its engines made (named in the directory), their CNI results and netns.
  const networks: string[] = [];
  for (const f of filesNamed(dirs, /\.conflist$/)) {
    try {
      const conf = JSON.parse(readFileSync(f, 'utf8')) as { name?: string; plugins?: { bridge?: string }[] };
      if (conf.name) networks.push(conf.name);
      for (const p of conf.plugins ?? []) if (p.bridge) deleteLink(p.bridge, report);
    } catch {
      // not one of ours
    }
  }
  for (const f of filesNamed(dirs, /^bridge-name$/)) deleteLink(readFileSync(f, 'utf8').trim(), report);
  for (const f of safeList('/run/netns')) {
    const path = join('/run/netns', f);
    try {
      if (!f.startsWith('cni-') || !netnsInodes.has(statSync(path).ino)) continue;
      spawnSync('umount', [path]);
      rmSync(path, { force: true });
      report.netns.push(path);
    } catch {
      // gone meanwhile
    }
  }
  for (const f of safeList('/var/lib/cni/results')) if (networks.some((n) => f.startsWith(`${n}-`))) rmSync(join('/var/lib/cni/results', f), { force: true });

  // cgroups: the containers' under a private containerd, then podrun's pod cgroups and their parents.
  for (const c of [...cgroups, ...podrunCgroups(instances)]) if (await rmdirRetrying(c)) report.cgroups.push(c);
  for (const c of cgroups) removeEmptyPodrunParents(c);

  unmountUnder(root);
  rmSync(root, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  return report;
}

/** The podrun directories above a pod's cgroup (`podrun/<instance>/pod<uid>`), those now empty. */
export function removeEmptyPodrunParents(cgroup: string): void {
  for (let up = dirname(cgroup); /\/podrun(\/|$)/.test(up); up = dirname(up)) {
    try {
      rmdirSync(up);
    } catch {
      break;
    }
  }
}

/** Lazily unmounts every mount at or below `dir`, deepest first (a stopped engine's overlays linger). */
export function unmountUnder(dir: string): void {
  const mounts = readFileSync('/proc/mounts', 'utf8')
    .split('\n')
    .map((l) => (l.split(' ')[1] ?? '').replace(/\\040/g, ' '))
    .filter((m) => under(m, dir));
  for (const m of mounts.reverse()) spawnSync('umount', ['-l', m]);
}

function safeList(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

function deleteLink(name: string, report: SweepReport): void {
  if (!/^[A-Za-z0-9_-]{1,15}$/.test(name)) return;
  if (spawnSync('ip', ['link', 'del', name], { stdio: 'ignore' }).status === 0) report.links.push(name);
}
