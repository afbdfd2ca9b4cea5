import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { criTestBed } from './cri-engine.js';
import { BIN, PAUSE_IMAGE, TEST_IMAGE, unique, until } from './helpers.js';

// `podrun exec` on containerd through the CRI's Exec and the runtime's streaming server (the
// WebSocket channel protocol kubectl speaks to it), with no Docker engine reachable: stdin, a TTY
// and its size, exit codes, stderr apart, a refusal, and a session whose client dies.
const { ctrd, world, criArgs, noDocker, cri } = criTestBed();
const ns = unique('criexec');
const name = unique('sh');

/** A shell that reaps what is left to it (busybox ash waits for any child), as PID 1. */
const REAPER = `[sh, -c, 'trap "exit 0" TERM; while :; do sleep 1; done']`;

let id = '';

/** The container's live processes' command lines: `ps` through ExecSync. */
async function procs(): Promise<string[]> {
  const r = await ctrd.client.execSync(id, ['ps', '-o', 'stat,args'], 10);
  return Buffer.from(r.stdout)
    .toString()
    .split('\n')
    .slice(1)
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('Z'))
    .map((l) => l.replace(/^\S+\s+/, ''));
}

/** Whether a `podrun exec-guard` of an exec whose command has an argument holding `word` runs on this machine (a zombie's cmdline is empty). */
function guardRuns(word: string): boolean {
  return readdirSync('/proc').some((p) => {
    if (!/^\d+$/.test(p)) return false;
    try {
      const argv = readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0');
      const at = argv.indexOf('exec-guard');
      if (at < 0) return false;
      const command = JSON.parse((JSON.parse(argv[at + 1] ?? '{}') as { execId?: string }).execId ?? '[]') as string[];
      return command.some((a) => a.includes(word));
    } catch {
      return false; // gone meanwhile, or not a guard's argument
    }
  });
}

const podrunArgs = (): string[] => ['--state-dir', world.stateDir, '--pause-image', PAUSE_IMAGE, '--node-ip', '127.0.0.1', ...criArgs()];

/** `podrun exec` as a process of its own, to feed, read and kill. */
function execProc(args: string[]): ChildProcessWithoutNullStreams {
  return spawn(BIN, [...podrunArgs(), 'exec', '-n', ns, name, ...args], { env: { ...process.env, ...noDocker }, stdio: ['pipe', 'pipe', 'pipe'] });
}

/** Runs `podrun exec`, `input` written to its stdin (left open unless `end`), until it exits. */
function runExec(args: string[], input: string | Buffer, end = true): Promise<{ code: number | null; out: string; err: string }> {
  const p = execProc(args);
  let out = '';
  let err = '';
  p.stdout.on('data', (c: Buffer) => (out += c.toString()));
  p.stderr.on('data', (c: Buffer) => (err += c.toString()));
  p.stdin.write(input);
  if (end) p.stdin.end();
  return new Promise((resolve) => p.on('close', (code) => resolve({ code, out, err })));
}

beforeAll(async () => {
  const manifest = world.write(
    `${name}.yaml`,
    `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec: {terminationGracePeriodSeconds: 1, containers: [{name: c, image: ${TEST_IMAGE}, command: ${REAPER}}]}
`,
  );
  const r = await cri(['apply', '-f', manifest, '--timeout', '60s']);
  expect(r.code, `${r.out}\n${r.err}\n${ctrd.recentLog}`).toBe(0);
  id = (await ctrd.client.listContainers({})).find((c) => c.metadata?.name === 'c')?.id ?? '';
  expect(id).not.toBe('');
}, 90_000);

describe('podrun exec on containerd, through the runtime streaming server', () => {
  it('-i: stdin reaches the command, its end too (SPDY), and large input and output arrive whole', { timeout: 60_000 }, async () => {
    // sort reads to the end of its input: before SPDY (WebSocket v4, which cannot pass it on) it waited forever.
    const sorted = await runExec(['-i', '--', 'sh', '-c', 'sort -r; echo done >&2; exit 6'], 'first\nsecond\n');
    expect([sorted.code, sorted.out, sorted.err]).toEqual([6, 'second\nfirst\n', 'done\n']);
    // 4 MiB in and out again: many frames each way, past any window a peer might keep.
    const input = Buffer.alloc(4 * 1024 * 1024, 'x');
    const big = await runExec(['-i', '--', 'sh', '-c', 'tee /tmp/in; md5sum </tmp/in >&2; wc -c </tmp/in >&2'], input);
    expect(big.code, big.err).toBe(0);
    expect(big.out.length).toBe(input.length);
    expect(big.err.split(/\s+/).filter(Boolean)).toEqual([createHash('md5').update(input).digest('hex'), '-', String(input.length)]);
  });

  it("exits with the command's exit code (0, 3, 255), its stderr apart from stdout without a TTY", { timeout: 60_000 }, async () => {
    const ok = await cri(['exec', '-n', ns, name, '--', 'sh', '-c', 'echo out; echo err >&2']);
    expect([ok.code, ok.out, ok.err]).toEqual([0, 'out\n', 'err\n']);
    expect((await cri(['exec', '-n', ns, name, '--', 'sh', '-c', 'exit 3'])).code).toBe(3);
    expect((await cri(['exec', '-n', ns, name, '--', 'sh', '-c', 'exit 255'])).code).toBe(255);
  });

  it('a command the runtime cannot start is a clean error, not a hang', { timeout: 60_000 }, async () => {
    const r = await cri(['exec', '-n', ns, name, '--', '/no/such/command']);
    // containerd's status: Failure, reason InternalError, the OCI runtime's words (kubectl: `error: …`, 1).
    expect(r.code, r.err).toBe(1);
    expect(r.err).toMatch(/^podrun: engine error: the runtime could not run the command: .*no\/such\/command.*no such file or directory/);
    expect(r.err.trim().split('\n'), r.err).toHaveLength(1);
  });

  it('-t: the command has a terminal of the caller size, resized with it', { timeout: 60_000 }, async () => {
    // script(1) gives podrun a pseudo-terminal of 33x101; once the command has said so, the
    // terminal becomes 40x120 (the test's flag file), and the command waits to see it.
    const flag = `${world.dir}/${unique('resize')}`;
    // The runtime starts the command, then applies the first size (as for kubectl): the command
    // waits until its terminal has one.
    const cmd = `i=0; until stty size 2>/dev/null | grep -q "^[1-9]" || [ $i -ge 100 ]; do sleep 0.05; i=$((i+1)); done; tty; stty size; i=0; while [ "$(stty size)" = "33 101" ] && [ $i -lt 150 ]; do sleep 0.1; i=$((i+1)); done; stty size; exit 4`;
    const inner = `stty rows 33 cols 101; (while [ ! -e ${flag} ]; do sleep 0.1; done; stty rows 40 cols 120 </dev/tty) & ${BIN} ${podrunArgs().join(' ')} exec -it -n ${ns} ${name} -- sh -c '${cmd}'`;
    const p = spawn('script', ['-qec', inner, '/dev/null'], { env: { ...process.env, ...noDocker }, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      if (out.includes('33 101')) writeFileSync(flag, '');
    });
    const code = await new Promise<number | null>((r) => p.on('close', r));
    const lines = out
      .split(/\r?\n/)
      .map((l) => l.trim())
      .filter(Boolean);
    expect(lines, out).toContain('33 101');
    expect(lines, out).toContain('40 120');
    expect(
      lines.some((l) => /^\/dev\/pts\/\d+$/.test(l)),
      out,
    ).toBe(true);
    expect(code, out).toBe(4);
  });

  it('a podrun exec killed with SIGKILL leaves nothing running; one that ends by itself leaves its background', { timeout: 60_000 }, async () => {
    const killed = execProc(['-i', '--', 'sleep', '1003']);
    await until('the exec to run', async () => ((await procs()).includes('sleep 1003') ? true : undefined), 15_000);
    expect(guardRuns('1003')).toBe(true);
    killed.kill('SIGKILL');
    // Measured before the guard: containerd kept `sleep 1003` running after its client was gone.
    await until('the abandoned exec to be killed', async () => ((await procs()).includes('sleep 1003') ? undefined : true), 15_000);

    const done = await runExec(['--', 'sh', '-c', 'sleep 1005 >/dev/null 2>&1 & echo started'], '');
    expect(done.out).toContain('started');
    // Its guard (started before the session, so already there) has had its say and exited.
    await until('the exec guard to exit', async () => (guardRuns('sleep 1005') ? undefined : true), 15_000);
    expect(await procs()).toContain('sleep 1005');
  });
});
