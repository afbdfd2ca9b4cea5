import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, readdirSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PAUSE_IMAGE, TEST_IMAGE, World, podContainers, unique, until } from './helpers.js';
import { currentRunId, TEST_RUN_LABEL } from './suite-run.js';

// podrun as a user installs it: `npm run package` in a clean clone makes the single executable
// and the Debian package; a second clone makes them again (the same bytes, or the release cannot
// be checked); then, in a container from a minimal Debian (debootstrap's minbase: no Node, no
// engine), the package is installed with apt from the file, offline, and used against this
// machine's engine through its socket; upgraded, removed and purged.
// The clones are of HEAD: what is committed is what is tested.
const REPO = fileURLToPath(new URL('../..', import.meta.url));
const DEBIAN_IMAGE = 'podrun-test/debian:bookworm';
// What only the tests need: `scripts/setup` without --test installs none of it.
const TEST_ONLY = [
  'podman',
  'catatonit',
  'systemd',
  'prometheus',
  'docker-registry',
  'apache2-utils',
  'openssh-client',
  'bsdutils',
  'python3',
  'iproute2',
  'lintian',
  'debootstrap',
];

const world = new World();
const box = unique('podrun-pkg');
const ns = unique('pkg');
const pod = unique('web');
const agentPod = unique('agent');
let deb = '';
let previousDeb = '';
let commit = '';

function run(cmd: string, args: string[], cwd = REPO, env: NodeJS.ProcessEnv = {}): string {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', env: { ...process.env, ...env }, maxBuffer: 64 << 20 });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.status}):\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

/** A clean clone of HEAD with the shared dependencies, and `npm run package` in it. */
function packageFromClone(name: string): string {
  const dir = join(world.dir, name);
  run('git', ['clone', '--quiet', '--no-hardlinks', REPO, dir]);
  symlinkSync(realpathSync(join(REPO, 'node_modules')), join(dir, 'node_modules'));
  run('npm', ['run', '--silent', 'package'], dir);
  return dir;
}

/** A shell command in the clean system; its exit code, output and errors. */
function inBox(script: string): { code: number; out: string } {
  const r = spawnSync('docker', ['exec', box, 'sh', '-c', script], { encoding: 'utf8' });
  return { code: r.status ?? -1, out: `${r.stdout}${r.stderr}` };
}

function ok(script: string): string {
  const r = inBox(script);
  expect(r.code, `${script}\n${r.out}`).toBe(0);
  return r.out;
}

beforeAll(() => {
  run('bash', ['scripts/debian-image']);
  const a = packageFromClone('a');
  const b = packageFromClone('b');
  commit = run('git', ['rev-parse', 'HEAD'], a).trim();
  const sums = (dir: string): string => readFileSync(join(dir, 'dist/SHA256SUMS'), 'utf8');
  expect(sums(b), 'two builds of one commit').toBe(sums(a));
  const debs = join(world.dir, 'debs');
  mkdirSync(debs);
  const built = readdirSync(join(a, 'dist')).find((f) => f.endsWith('.deb'))!;
  deb = join(debs, built);
  copyFileSync(join(a, 'dist', built), deb);
  // An earlier build to upgrade from: the same tree under a lower version.
  const version = JSON.parse(readFileSync(join(a, 'package.json'), 'utf8')).version as string;
  run('scripts/package-deb', [], b, { PODRUN_DEB_VERSION: `${version}~earlier` });
  previousDeb = join(debs, 'previous.deb');
  copyFileSync(join(b, 'dist', `podrun_${version}~earlier_amd64.deb`), previousDeb);
  mkdirSync(world.stateDir, { recursive: true });
  writeFileSync(
    join(world.dir, 'pod.yaml'),
    `apiVersion: v1
kind: Pod
metadata: {name: ${pod}, namespace: ${ns}}
spec:
  containers:
  - {name: main, image: ${TEST_IMAGE}, command: [sh, -c, 'sleep 3600']}
`,
  );
  // No network: what apt installs is the file and what the clean system already has. The state
  // directory is at the same path inside and out, so what podrun mounts into pods exists for the engine.
  run('docker', [
    'run',
    '-d',
    '--name',
    box,
    '--network',
    'none',
    '--label',
    `${TEST_RUN_LABEL}=${currentRunId()}`,
    '-v',
    '/var/run/docker.sock:/var/run/docker.sock',
    '-v',
    `${world.dir}:${world.dir}`,
    DEBIAN_IMAGE,
    'sleep',
    'infinity',
  ]);
}, 900_000);

afterAll(async () => {
  spawnSync('docker', ['rm', '-f', box]);
  await world.cleanup();
});

describe('the Debian package and the single executable', () => {
  // lintian alone took 44 s at load 12 on this machine's 2 cores: 60 s was not enough beside the suite.
  it('lintian finds no error and no warning', { timeout: 300_000 }, () => {
    const r = spawnSync('lintian', ['--fail-on', 'error,warning', deb], { encoding: 'utf8' });
    expect(r.status, r.stdout + r.stderr).toBe(0);
  });

  it('installs with apt from the file on a minimal Debian without Node, and runs', () => {
    expect(inBox('command -v node nodejs').code, 'the clean system has no Node').not.toBe(0);
    ok(`apt-get install -y ${previousDeb}`);
    ok('test -x /usr/bin/podrun && test -d /etc/kubernetes/manifests && test -f /usr/share/podrun/schemas/pod.schema.json');
    expect(ok('grep ^ExecStart= /lib/systemd/system/podrun.service')).toContain('ExecStart=/usr/bin/podrun run --config /etc/podrun/config.yaml');
    expect(ok('stat -c %a /var/lib/podrun')).toBe('700\n');
    expect(ok('stat -c %a /etc/podrun/config.yaml')).toBe('600\n');
    expect(ok('grep ^staticPodPath: /etc/podrun/config.yaml')).toContain('/etc/kubernetes/manifests');
    // Enabled for the next boot, not started (there is no systemd running here to start it).
    expect(ok('readlink /etc/systemd/system/multi-user.target.wants/podrun.service')).toContain('/lib/systemd/system/podrun.service');
    expect(ok('podrun version --client')).toContain(`(commit ${commit}, built `);
    ok('podrun run --config /etc/podrun/config.yaml --print-config >/dev/null');
    expect(ok('podrun explain pod.spec.hostNetwork')).toContain('hostNetwork <boolean>');
  });

  it('validates and applies against the engine through its socket', async () => {
    expect(ok(`podrun validate ${world.dir}/pod.yaml`)).toContain('valid: 1 pod in 1 file');
    ok(`podrun --state-dir ${world.stateDir} --pause-image ${PAUSE_IMAGE} --node-ip 127.0.0.1 apply -f ${world.dir}/pod.yaml --timeout 60s`);
    expect((await podContainers(ns, pod, world.instance)).filter((c) => c.State === 'running').length).toBe(2);
  });

  it('runs the agent: a pod from its manifest directory, and a stop that leaves it running', async () => {
    const manifests = join(world.dir, 'manifests');
    mkdirSync(manifests, { mode: 0o755 });
    writeFileSync(join(manifests, 'agent.yaml'), readFileSync(join(world.dir, 'pod.yaml'), 'utf8').replace(`name: ${pod}`, `name: ${agentPod}`));
    const agent = spawn('docker', [
      'exec',
      box,
      'sh',
      '-c',
      `echo $$ >/tmp/agent.pid; exec podrun --state-dir ${world.stateDir} --pause-image ${PAUSE_IMAGE} --node-ip 127.0.0.1 run --manifest-dir ${manifests}`,
    ]);
    let log = '';
    agent.stderr.on('data', (c: Buffer) => (log += c.toString()));
    const ended = new Promise<number | null>((resolve) => agent.on('close', resolve));
    await until(
      'the agent runs the pod',
      async () => ((await podContainers(ns, agentPod, world.instance)).filter((c) => c.State === 'running').length === 2 ? true : undefined),
      60_000,
    );
    ok('kill -TERM "$(cat /tmp/agent.pid)"');
    expect(await ended, log).toBe(0);
    expect(log).toContain('agent stopped; pods left running');
    expect((await podContainers(ns, agentPod, world.instance)).filter((c) => c.State === 'running').length).toBe(2);
  });

  it('keeps an edited configuration file on upgrade', () => {
    ok(`echo '# edited by the administrator' >>/etc/podrun/config.yaml`);
    ok(`apt-get install -y ${deb}`);
    expect(ok("dpkg-query -W -f '${Version}' podrun")).not.toContain('~earlier');
    expect(ok('tail -1 /etc/podrun/config.yaml')).toBe('# edited by the administrator\n');
  });

  it('remove keeps the pods, the state and the configuration; purge removes the configuration only', async () => {
    ok('apt-get remove -y podrun');
    expect(inBox('test -e /usr/bin/podrun').code).not.toBe(0);
    ok('test -f /etc/podrun/config.yaml && test -d /var/lib/podrun');
    expect((await podContainers(ns, pod, world.instance)).filter((c) => c.State === 'running').length).toBe(2);
    ok('apt-get purge -y podrun');
    expect(inBox('test -e /etc/podrun/config.yaml').code).not.toBe(0);
    expect(inBox('test -e /etc/systemd/system/multi-user.target.wants/podrun.service').code).not.toBe(0);
    ok('test -d /var/lib/podrun');
    expect((await podContainers(ns, pod, world.instance)).filter((c) => c.State === 'running').length).toBe(2);
  });

  it('scripts/setup alone would install nothing only the tests need (listed on the clean system)', () => {
    const clone = join(world.dir, 'a');
    const demo = ok(`bash ${clone}/scripts/setup --print-packages`).split('\n').filter(Boolean);
    expect(demo.length, 'the clean system lacks the engine').toBeGreaterThan(0);
    expect(demo.filter((p) => TEST_ONLY.includes(p))).toEqual([]);
    const tests = ok(`bash ${clone}/scripts/setup --test --print-packages`).split('\n').filter(Boolean);
    expect(tests).toEqual(expect.arrayContaining(['podman', 'prometheus', 'docker-registry', 'openssh-client', 'python3']));
  });
});
