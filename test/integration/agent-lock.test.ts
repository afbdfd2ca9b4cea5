import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { agentRunning } from '../../src/agent/lock.js';
import { AgentProcess } from './agent-helpers.js';
import { freePort, PAUSE_IMAGE, TEST_IMAGE, unique, until, World } from './helpers.js';

const BIN = fileURLToPath(new URL('../../bin/podrun', import.meta.url));

const world = new World();
const agents: AgentProcess[] = [];
afterAll(async () => {
  await Promise.all(agents.map((a) => a.kill9()));
  await world.cleanup();
});

function agent(stateDir: string): AgentProcess {
  const a = new AgentProcess(stateDir, []);
  agents.push(a);
  return a;
}

/** Resolves with 'started' or the exit code, whichever the agent reaches first. */
async function outcome(a: AgentProcess): Promise<'started' | number | null> {
  return until(
    'the agent to start or exit',
    async () => (a.logs().includes('agent started') ? 'started' : a.proc.exitCode !== null ? a.proc.exitCode : undefined),
    30_000,
  );
}

describe('one agent per state directory', () => {
  it('ignores a stale pid file that names a live, unrelated process', async () => {
    const stateDir = join(world.dir, 'stale');
    mkdirSync(stateDir, { recursive: true });
    // pid reuse after a reboot: the old agent's pid now belongs to someone else.
    const other = spawn('sleep', ['1000'], { stdio: 'ignore' });
    try {
      writeFileSync(join(stateDir, 'agent.pid'), `${other.pid}\n`);
      expect(await agentRunning(stateDir)).toBe(false);
      // apply does the work itself at once instead of waiting for an agent that does not exist.
      const name = unique('nolock');
      const file = world.write(
        `${name}.yaml`,
        `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: lock-test}
spec:
  terminationGracePeriodSeconds: 1
  containers: [{name: c, image: ${TEST_IMAGE}, command: [sleep, '3600']}]
`,
      );
      // Within its timeout: an apply that waited on an agent would fail at it.
      const r = await world.cli('--state-dir', stateDir, 'apply', '--timeout', '15s', file);
      expect(r.code, r.err).toBe(0);
      expect(r.err).not.toContain('agent supervising');
      const a = agent(stateDir);
      expect(await outcome(a)).toBe('started');
      expect(await agentRunning(stateDir)).toBe(true);
      await a.stop();
      expect(await agentRunning(stateDir)).toBe(false);
      expect((await world.cli('--state-dir', stateDir, 'delete', '-n', 'lock-test', name)).code).toBe(0);
    } finally {
      other.kill('SIGKILL');
    }
  });

  it('lets exactly one of two agents started at the same moment run, every time', async () => {
    for (let trial = 0; trial < 10; trial++) {
      const stateDir = join(world.dir, `race-${trial}`);
      const pair = [agent(stateDir), agent(stateDir)];
      const results = await Promise.all(pair.map(outcome));
      expect(
        results.filter((r) => r === 'started'),
        `trial ${trial}: ${results.join(', ')}`,
      ).toHaveLength(1);
      const loser = pair[results.indexOf(1)];
      expect(loser, `trial ${trial}: the other agent must exit 1, got ${results.join(', ')}`).toBeDefined();
      expect(loser!.logs()).toContain(`another podrun agent is running with state directory ${stateDir}`);
      await Promise.all(pair.map((a) => a.stop()));
    }
  });

  it('a second agent refused by the lock says so, and not that it stopped leaving pods running (it never ran any)', async () => {
    const stateDir = join(world.dir, 'second');
    const first = agent(stateDir);
    await first.started();
    const second = agent(stateDir);
    const closed = new Promise((r) => second.proc.once('close', r));
    expect(await until('the second agent to exit', async () => (second.proc.exitCode !== null ? second.proc.exitCode : undefined), 20_000)).toBe(1);
    await closed;
    expect(second.logs()).toContain(`another podrun agent is running with state directory ${stateDir}`);
    expect(second.logs()).not.toContain('agent stopped');
    await first.stop();
    expect(first.logs()).toContain('agent stopped; pods left running');
  });

  it('is free again the moment a kill -9ed agent dies, even while it is a zombie', async () => {
    const stateDir = join(world.dir, 'killed');
    const log = join(world.dir, 'killed.log');
    // The agent's parent is a sleep that never reaps it, as a slow PID 1 would: killed, it stays a zombie.
    const parent = spawn('sh', ['-c', `"$0" --state-dir "$1" --pause-image ${PAUSE_IMAGE} run >"$2" 2>&1 & echo $!; exec sleep 600`, BIN, stateDir, log], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    try {
      const pid = Number(await new Promise<string>((r) => parent.stdout.once('data', (c: Buffer) => r(c.toString()))));
      await until('the first agent to start', async () => (readFileSync(log, 'utf8').includes('agent started') ? true : undefined));
      process.kill(pid, 'SIGKILL');
      const zombie = (): boolean => /^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
      // The lock goes with the last of the dying process's threads, within moments.
      await until('the lock to be released', async () => (zombie() && !(await agentRunning(stateDir)) ? true : undefined), 5000);
      const second = agent(stateDir);
      expect(zombie()).toBe(true);
      expect(await outcome(second)).toBe('started');
      await second.stop();
    } finally {
      parent.kill('SIGKILL');
    }
  });

  it('ends the process with a non-zero code when start-up fails half way, never lingering half alive', async () => {
    // The HTTP port is taken: the cache, the watchers and the timers have started by then.
    const port = await freePort();
    const holder = createServer(() => undefined);
    await new Promise<void>((r) => holder.listen(port, '127.0.0.1', r));
    try {
      const dir = join(world.dir, 'half');
      mkdirSync(dir, { recursive: true });
      const a = new AgentProcess(join(world.dir, 'half-state'), ['--manifest-dir', dir, '--http-port', String(port)]);
      agents.push(a);
      const code = await until('the agent to exit', async () => (a.proc.exitCode !== null ? a.proc.exitCode : undefined), 10_000);
      expect(code).toBe(1);
      expect(a.logs()).toContain('EADDRINUSE');
    } finally {
      holder.close();
    }
  });
});
