import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { CriEngine } from '../../src/runtime/cri/engine.js';
import { BIN, PAUSE_IMAGE, TEST_IMAGE, unique, until } from './helpers.js';
import { AgentProcess } from './agent-helpers.js';
import { CRI_PAUSE_IMAGE, criTestBed } from './cri-engine.js';

// Containers' logs on CRI: podrun rotates them as the kubelet's container log manager does
// (log-rotation.ts), and `podrun logs` reads across a rotation (--tail, -f). A private containerd,
// the built binary for the verbs, a CriEngine in the test for the rotation with a short period.
const { ctrd, world, podLogs, criArgs, noDocker: NO_DOCKER, cri } = criTestBed();

/** The `line-N` numbers of a log's text, in order. */
function numbers(text: string): number[] {
  return [...text.matchAll(/^line-(\d+) /gm)].map((m) => Number(m[1]));
}

/** Every number once, each the last plus one: nothing lost or doubled. */
function consecutive(ns: number[]): boolean {
  return ns.every((n, i) => i === 0 || n === (ns[i - 1] as number) + 1);
}

/** The oldest line number the rotated files (or the current one) of `dir` hold now. */
function oldestHeld(dir: string): number {
  const names = readdirSync(dir)
    .filter((n) => /^0\.log(?:\.\d{8}-\d{6}(?:\.gz)?)?$/.test(n))
    .sort();
  let oldest = Infinity;
  for (const n of names) {
    try {
      const data = readFileSync(join(dir, n));
      const text = (n.endsWith('.gz') ? gunzipSync(data) : data).toString();
      oldest = Math.min(oldest, ...numbers(text.replace(/^\S+ stdout F /gm, '')));
    } catch {
      // Removed by a rotation meanwhile.
    }
  }
  return oldest;
}

describe('CRI container logs', () => {
  it('rotates a chatty container at containerLogMaxSize, keeps containerLogMaxFiles, and logs --tail / -f read across rotations', async () => {
    const ns = unique('crilog');
    const name = unique('chatty');
    const pad = 'x'.repeat(80);
    const manifest = world.write(
      `${name}.yaml`,
      `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: talk
    image: ${TEST_IMAGE}
    command: [sh, -c, 'i=0; while true; do i=$((i+1)); echo "line-$i ${pad}"; usleep 10000; done']
`,
    );
    const applied = await cri(['apply', '-f', manifest, '--timeout', '60s']);
    expect(applied.code, `${applied.out}\n${applied.err}\n${ctrd.recentLog}`).toBe(0);

    const maxBytes = 4096;
    const maxFiles = 5;
    const engine = new CriEngine({
      stateDir: world.stateDir,
      pauseImage: CRI_PAUSE_IMAGE,
      runtimeEndpoint: ctrd.endpoint,
      podLogsDir: podLogs,
      containerLog: { maxBytes, maxFiles },
      logRotationPeriodMs: 250,
      relistPeriodMs: 1000,
    });
    const stopWatch = await engine.watchEvents(
      () => undefined,
      () => undefined,
    );
    const dirs = readdirSync(podLogs).filter((d) => d.startsWith(`${ns}_${name}_`));
    expect(dirs).toHaveLength(1);
    const dir = join(podLogs, dirs[0] as string, 'talk');
    try {
      // Rotated often enough that the older files were compressed and the oldest removed.
      await until('several rotations', async () => (readdirSync(dir).filter((f) => f.endsWith('.gz')).length >= 3 ? true : undefined), 60_000);
      const follower = spawn(BIN, ['--state-dir', world.stateDir, '--pause-image', PAUSE_IMAGE, ...criArgs(), 'logs', '-f', '--tail', '0', name, '-n', ns], {
        env: { ...process.env, ...NO_DOCKER },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let followed = '';
      follower.stdout.on('data', (c: Buffer) => (followed += c.toString()));
      let followErr = '';
      follower.stderr.on('data', (c: Buffer) => (followErr += c.toString()));
      const rotatedSeen = new Set<string>();
      for (let round = 0; round < 16; round++) {
        await new Promise((r) => setTimeout(r, 250));
        const files = readdirSync(dir);
        // Bounded: the file being written, the newest rotated one, the compressed ones: maxFiles in all.
        expect(files.filter((f) => !f.endsWith('.tmp')).length, files.join(' ')).toBeLessThanOrEqual(maxFiles);
        expect(
          files.every((f) => /^0\.log(?:\.\d{8}-\d{6}(?:\.gz)?(?:\.tmp)?)?$/.test(f)),
          files.join(' '),
        ).toBe(true);
        for (const f of files) if (f !== '0.log') rotatedSeen.add(f.replace(/\.gz$/, ''));
      }
      // The follower went on across at least one rotation in those 4 s, and lost or doubled nothing.
      follower.kill('SIGTERM');
      expect(rotatedSeen.size).toBeGreaterThanOrEqual(2);
      const f = numbers(followed);
      expect(f.length, `followed: ${followed.slice(-300)} stderr: ${followErr}`).toBeGreaterThan(100);
      expect(consecutive(f), JSON.stringify(f.filter((n, i) => i > 0 && n !== (f[i - 1] as number) + 1).slice(0, 5))).toBe(true);
      // The current file holds far fewer than 200 lines (4 KiB of ~110-byte lines, and what one
      // second adds: a rotation a second at most): --tail 200 reads into the rotated files.
      const currentLines = numbers(readFileSync(join(dir, '0.log'), 'utf8').replace(/^\S+ stdout F /gm, '')).length;
      expect(currentLines).toBeLessThan(200);
      const tail = await cri(['logs', name, '-n', ns, '--tail', '200']);
      expect(tail.code, tail.err).toBe(0);
      const t = numbers(tail.out);
      expect(consecutive(t)).toBe(true);
      // 200 lines when the files hold them: on a loaded machine the container may write fewer than
      // 40 lines a second, and a rotation a second with maxFiles 5 keeps only ~5 s of them. Then the
      // tail must begin at the oldest line the files still hold (nothing skipped).
      if (t.length < 200) expect(t[0], `tail had ${t.length} lines`).toBeLessThanOrEqual(oldestHeld(dir));
      // The follower was still reading when stopped: its last line is among the last 200.
      expect(f[f.length - 1], `followed ${f.length} lines, tail began at ${t[0]}`).toBeGreaterThanOrEqual(t[0] as number);
      const five = numbers((await cri(['logs', name, '-n', ns, '--tail', '5'])).out);
      expect(five).toHaveLength(5);
      expect(consecutive(five)).toBe(true);
      expect(five[4]).toBeGreaterThanOrEqual(t[t.length - 1] as number);
      expect(statSync(join(dir, '0.log')).size).toBeLessThan(1 << 20);
      // --timestamps: each line with the runtime's RFC 3339 time; --since: only the lines after it, across files too.
      const stamped = (await cri(['logs', name, '-n', ns, '--tail', '3', '--timestamps'])).out.trimEnd().split('\n');
      expect(stamped).toHaveLength(3);
      for (const l of stamped) expect(l).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+(?:Z|[+-]\d\d:\d\d) line-\d+ x+$/);
      const all = numbers((await cri(['logs', name, '-n', ns])).out);
      const sinceStart = Date.now();
      const since = await cri(['logs', name, '-n', ns, '--since', '1s', '--timestamps']);
      const lines = since.out.trimEnd().split('\n');
      const s = numbers(lines.map((l) => l.replace(/^\S+ /, '')).join('\n'));
      expect(consecutive(s)).toBe(true);
      expect(s.length).toBeGreaterThan(10);
      // Nothing older than 1 s before the command (a second of room for its start on a loaded machine).
      expect(Date.parse(lines[0]?.split(' ')[0] ?? '')).toBeGreaterThanOrEqual(sinceStart - 1000 - 1000);
      expect(consecutive(all)).toBe(true);
      expect(s[0]).toBeGreaterThan(all[0] as number);
    } finally {
      stopWatch();
      engine.close();
      await cri(['delete', 'pod', name, '-n', ns]);
    }
  }, 180_000);

  it('logs -p shows the previous instance of a container the agent restarted, logs the current one', async () => {
    const ns = unique('criprev');
    const name = unique('again');
    const dir = join(world.dir, `${name}-manifests`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, 'pod.yaml'),
      `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: once
    image: ${TEST_IMAGE}
    # The first run fails, the next keeps running (the emptyDir outlives a container's restart).
    command: [sh, -c, 'echo run-$(cat /proc/sys/kernel/random/uuid); if [ -f /d/ran ]; then exec sleep 3600; fi; touch /d/ran; exit 1']
    volumeMounts: [{name: d, mountPath: /d}]
  volumes: [{name: d, emptyDir: {}}]
`,
    );
    const agent = new AgentProcess(world.stateDir, [...criArgs(), '--manifest-dir', dir], NO_DOCKER);
    try {
      await agent.started();
      await until(
        'running again after a restart',
        async () => (/\s1\/1\s+Running\s+1\s/.test((await cri(['get', 'pods', '-n', ns])).out) ? true : undefined),
        90_000,
      );
      const runOf = async (args: string[]): Promise<string | undefined> => /run-[0-9a-f-]{36}/.exec((await cri(['logs', name, '-n', ns, ...args])).out)?.[0];
      const previous = await until('the previous log', () => runOf(['-p']), 30_000);
      const current = await until('the current log', () => runOf([]), 30_000);
      // Two instances, two lines: -p is not the current one (each run printed a fresh uuid).
      expect(previous).not.toBe(current);
    } catch (err) {
      throw new Error(`${(err as Error).message}\nagent log:\n${agent.logs().slice(-3000)}`);
    } finally {
      await agent.stop();
      await cri(['delete', 'pod', name, '-n', ns]);
    }
  }, 180_000);
});
