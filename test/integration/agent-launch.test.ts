import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { until } from './helpers.js';

// bin/podrun starts the agent with the memory settings only a command line can give (issue 33's
// idle-agent RSS), and every other command as before. Read from /proc of the process bin/podrun
// became (its first line execs node), while it runs. No engine is needed: the agent starts
// without one, and the CLI waits on an engine socket that never answers.
const BIN = fileURLToPath(new URL('../../bin/podrun', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'podrun-launch-'));
const procs: ChildProcess[] = [];
let silent: Server | undefined;
const connections: Socket[] = [];

afterAll(async () => {
  for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  // A connection the silent engine holds would keep close() waiting.
  for (const c of connections) c.destroy();
  await new Promise((r) => (silent ? silent.close(r) : r(undefined)));
  rmSync(dir, { recursive: true, force: true });
});

function start(args: string[], env: NodeJS.ProcessEnv): { proc: ChildProcess; out: () => string } {
  let out = '';
  const proc = spawn(BIN, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  proc.stdout?.on('data', (c: Buffer) => (out += c.toString()));
  proc.stderr?.on('data', (c: Buffer) => (out += c.toString()));
  procs.push(proc);
  return { proc, out: () => out };
}

const cmdline = (pid: number): string[] => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
const environ = (pid: number): string[] => readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');

async function stop(proc: ChildProcess): Promise<void> {
  const exited = new Promise((r) => proc.once('exit', r));
  proc.kill('SIGTERM');
  await exited;
}

describe('bin/podrun', () => {
  it("starts the agent with two malloc arenas and one V8 worker thread, keeping a MALLOC_ARENA_MAX of the caller's", async () => {
    const manifests = join(dir, 'manifests');
    mkdirSync(manifests, { recursive: true });
    const noEngine = { DOCKER_HOST: `unix://${join(dir, 'no-engine.sock')}` };
    const args = ['--state-dir', join(dir, 'state'), 'run', '--manifest-dir', manifests, '--log-format', 'text'];
    const agent = start(args, noEngine);
    await until('the agent to start', async () => (agent.out().includes('agent started') ? true : undefined), 20_000);
    const argv = cmdline(agent.proc.pid!);
    expect(argv.slice(0, 2)).toEqual(['node', '--v8-pool-size=1']);
    expect(argv.slice(-args.length)).toEqual(args);
    expect(environ(agent.proc.pid!)).toContain('MALLOC_ARENA_MAX=2');
    await stop(agent.proc);

    const own = start(args, { ...noEngine, MALLOC_ARENA_MAX: '4' });
    await until('the agent to start', async () => (own.out().includes('agent started') ? true : undefined), 20_000);
    expect(environ(own.proc.pid!)).toContain('MALLOC_ARENA_MAX=4');
    await stop(own.proc);
  });

  it('starts any other command as before', async () => {
    const sock = join(dir, 'silent.sock');
    silent = createServer((c) => connections.push(c));
    await new Promise<void>((r) => silent!.listen(sock, r));
    const accepted = new Promise((r) => silent!.once('connection', r));
    const env: NodeJS.ProcessEnv = { ...process.env, DOCKER_HOST: `unix://${sock}` };
    delete env.MALLOC_ARENA_MAX;
    const cli = start(['--state-dir', join(dir, 'state-cli'), 'get', 'pods'], env);
    // It asked the engine, so it runs podrun's code, and waits for an answer that never comes.
    await accepted;
    const argv = cmdline(cli.proc.pid!);
    expect(argv[0]).toBe('node');
    expect(argv[1]).toBe(BIN);
    expect(argv.slice(2)).toEqual(['--state-dir', join(dir, 'state-cli'), 'get', 'pods']);
    expect(environ(cli.proc.pid!).some((e) => e.startsWith('MALLOC_ARENA_MAX='))).toBe(false);
    await stop(cli.proc);
  });
});
