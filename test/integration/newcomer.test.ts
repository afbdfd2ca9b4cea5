import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AgentSuite, pastRelist } from './agent-helpers.js';
import { dockerTrace } from './docker-trace.js';
import { podContainers, TEST_IMAGE, unique, until } from './helpers.js';

// The first ten minutes of a newcomer (issue 29): what apply, logs -p, get -w and delete answer
// when a pod crash-loops, when nothing changes, and when the agent declares the pod.
const suite = new AgentSuite('newcomer');
const { world, ns } = suite;

const pod = (name: string, command: string, extra = ''): string => `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
${extra}  containers:
  - {name: app, image: ${TEST_IMAGE}, command: [sh, -c, '${command}']}
`;

/** Each run of the container counts itself in an emptyDir that outlives the instances. */
const COUNTING = 'n=$(cat /data/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > /data/n; echo run $n; exit 3';
const COUNTING_POD = (name: string): string => `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  volumes: [{name: data, emptyDir: {}}]
  containers:
  - {name: app, image: ${TEST_IMAGE}, command: [sh, -c, '${COUNTING}'], volumeMounts: [{name: data, mountPath: /data}]}
`;

describe('apply of a pod that cannot become ready', () => {
  /**
   * Applies a pod whose container prints "dying" and exits 3: apply must fail on the crash,
   * saying so, not wait out its timeout (which would say "not ready after 120s").
   */
  async function appliedCrashLoop(prefix: string, command: string): Promise<void> {
    const name = unique(prefix);
    const file = world.write(`${name}.yaml`, pod(name, command));
    const r = await world.cli('apply', file, '--timeout', '120s');
    expect(r.out).not.toContain('ready');
    expect(r.code, r.err).toBe(1);
    expect(r.err).toContain(`pod/${ns}/${name}: CrashLoopBackOff: container app exited with code 3 (Error)`);
    expect(r.err).not.toContain('not ready after');
    expect(r.err).toMatch(/\n {4}(\[2J\]0;owned)?dying(\n|$)/);
    expect(r.err).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f]/);
  }

  it('without an agent: a container that exits right after it starts fails apply at once, with its exit code and log', async () => {
    // Its log also tries to drive the terminal (clear it, retitle it): the report quotes none of that.
    await appliedCrashLoop('dying', 'printf "\\033[2J\\033]0;owned\\007dying\\n"; exit 3');
  });

  it('with the agent: a crash loop fails apply at once, with the exit code and the last log line', async () => {
    const agent = suite.run([]);
    await agent.started();
    await appliedCrashLoop('looping', 'echo dying; sleep 0.3; exit 3');
  });

  it('without an agent: a failed init container (restartPolicy Never) fails apply with its exit code and log', async () => {
    const name = unique('initfail');
    const file = world.write(
      `${name}.yaml`,
      pod(
        name,
        'exec sleep 3600',
        `  restartPolicy: Never
  initContainers:
  - {name: setup, image: ${TEST_IMAGE}, command: [sh, -c, 'echo cannot reach the database; exit 2']}
`,
      ),
    );
    const r = await world.cli('apply', file);
    expect(r.code, r.err).toBe(1);
    expect(r.err).toContain(`pod/${ns}/${name}: failed: phase Failed`);
    expect(r.err).toContain('init container setup terminated: Error, exit code 2');
    expect(r.err).toContain('; the last lines of the log of init container setup:\n    cannot reach the database');
  });

  it('with the agent: a container the engine will not start fails apply at once, and the fixed manifest applied again is ready', async () => {
    const agent = suite.run([]);
    await agent.started();
    const name = unique('nobinary');
    const file = world.write(`${name}.yaml`, pod(name, 'x').replace("command: [sh, -c, 'x']", 'command: [/no/such/binary]'));
    const r = await world.cli('apply', file, '--timeout', '120s');
    expect(r.code, r.err).toBe(1);
    expect(r.err).toContain(`pod/${ns}/${name}: RunContainerError: container app: `);
    expect(r.err).not.toContain('not ready after');
    // The agent's word about the broken version is not taken for the fixed one.
    world.write(`${name}.yaml`, pod(name, 'exec sleep 3600'));
    const fixed = await world.cli('apply', file, '--timeout', '60s');
    expect(fixed.code, fixed.err).toBe(0);
    expect(fixed.out).toContain('1 pod ready');
  });

  it('with the agent: an image that cannot be had fails apply at once', async () => {
    const agent = suite.run([]);
    await agent.started();
    const name = unique('noimage');
    const file = world.write(
      `${name}.yaml`,
      pod(name, 'true').replace(TEST_IMAGE, 'podrun-test/absent:1').replace('{name: app,', '{name: app, imagePullPolicy: Never,'),
    );
    const r = await world.cli('apply', file, '--timeout', '120s');
    expect(r.code, r.err).toBe(1);
    expect(r.err).toMatch(new RegExp(`pod/${ns}/${name}: ErrImageNeverPull|pod/${ns}/${name}: (ErrImagePull|ImagePullBackOff)`));
    expect(r.err).not.toContain('not ready after');
  });
});

describe('apply of a pod that fails once, then runs', () => {
  // The kubelet's first restart is at once: one death is no crash loop (a dependency not up yet).
  const ONCE = 'if [ -f /data/once ]; then echo up; exec sleep 3600; fi; touch /data/once; echo not yet; exit 1';
  const oncePod = (name: string): string => COUNTING_POD(name).replace(COUNTING, ONCE);

  it('is ready, without an agent (the engine restarts it in place)', async () => {
    const name = unique('once');
    const r = await world.cli('apply', world.write(`${name}.yaml`, oncePod(name)), '--timeout', '30s');
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain('1 pod ready');
  });

  it('is ready, with the agent', async () => {
    const agent = suite.run([]);
    await agent.started();
    const name = unique('once-agent');
    const r = await world.cli('apply', world.write(`${name}.yaml`, oncePod(name)), '--timeout', '30s');
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain('1 pod ready');
  });
});

describe('logs --previous', () => {
  it('prints the instance that just died while the next one waits out its back-off, also after a GC sweep', async () => {
    const agent = suite.run(['--crash-backoff-initial', '20s']);
    await agent.started();
    const name = unique('prev');
    const file = world.write(`${name}.yaml`, COUNTING_POD(name));
    expect((await world.cli('apply', file, '--no-wait')).code).toBe(0);
    // The first restart is at once, the second waits 20 s: run 2 is the instance that just died.
    await until(
      'the crash loop back-off after run 2',
      async () => {
        const g = await world.cli('get', 'pods', '-n', ns, name, '--no-headers');
        return /CrashLoopBackOff\s+1\s/.test(g.out) ? true : undefined;
      },
      30_000,
    );
    const p = await world.bin(['logs', '-p', '-n', ns, name]);
    expect(p).toMatchObject({ code: 0, out: 'run 2\n' });
    // The current state is the dead instance too (kubectl logs shows it while the next one waits).
    expect((await world.bin(['logs', '-n', ns, name])).out).toBe('run 2\n');
    // A GC sweep keeps the instance that just died.
    expect((await world.cli('gc', '--no-images')).code).toBe(0);
    expect((await world.bin(['logs', '-p', '-n', ns, name])).out).toBe('run 2\n');
  });

  it('without an agent, where the engine restarts the container in place: the runs before the current one', async () => {
    const name = unique('inplace');
    const file = world.write(`${name}.yaml`, COUNTING_POD(name).replace('exit 3', 'sleep 2; exit 3'));
    expect((await world.cli('apply', file, '--no-wait')).code).toBe(0);
    // One engine container, restarted in place: its current run is only what came since it started.
    const current = await until(
      'a restart by the engine',
      async () => {
        const out = (await world.bin(['logs', '-n', ns, name])).out;
        return /^run [2-9]\n$/.test(out) ? out : undefined;
      },
      20_000,
    );
    expect(current).toMatch(/^run \d\n$/);
    const p = await world.bin(['logs', '-p', '-n', ns, name]);
    expect(p.code, p.err).toBe(0);
    expect(p.out).toMatch(/^(run \d\n)+$/);
  });
});

describe('get --watch', () => {
  it('prints nothing while pods only age, and a deleted pod one last time, aligned with the first table', async () => {
    const wns = unique('watch');
    const steady = unique('steady');
    const gone = unique('gone-with-a-longer-name');
    const spec = (name: string): string => pod(name, 'exec sleep 3600').replace(`namespace: ${ns}`, `namespace: ${wns}`);
    expect((await world.cli('apply', world.write(`${steady}.yaml`, spec(steady)), world.write(`${gone}.yaml`, spec(gone)))).code).toBe(0);
    // The watch reaches the engine through a proxy that counts its polls (one container list each).
    const trace = await dockerTrace();
    const polls = (): number => trace.calls().filter((c) => c.call === 'GET /containers/json').length;
    /** Until the watch has begun `n` more polls: the n-1 before the last have looked and printed. */
    const pastPolls = async (n: number): Promise<void> => {
      const since = polls();
      await until(`${n} more polls of the watch`, async () => (polls() >= since + n ? true : undefined), 20_000);
    };
    const w = world.spawnBin(['--docker-host', trace.host, 'get', 'pods', '-n', wns, '-w']);
    let seen = '';
    w.stdout.on('data', (c: Buffer) => (seen += c.toString()));
    try {
      await until('the first table', async () => (seen.split('\n').length >= 4 ? true : undefined), 15_000);
      const first = seen;
      // The pods age: a get of its own shows each one's AGE past the first table's...
      const ages = (table: string): Map<string, string> => new Map(table.split('\n').map((l) => [l.split(/\s+/)[0] ?? '', l.split(/\s+/)[4] ?? '']));
      const firstAges = ages(first);
      await until(
        'the pods to age',
        async () => {
          const now = ages((await world.cli('get', 'pods', '-n', wns)).out);
          return [steady, gone].every((n) => now.get(n) && now.get(n) !== firstAges.get(n)) ? true : undefined;
        },
        15_000,
      );
      // ...and the watch has looked at them, so aged, twice since: it had its chance to print.
      await pastPolls(3);
      expect(seen).toBe(first);
      const header = first.split('\n')[0]!;
      expect((await world.cli('delete', '-n', wns, gone, '--grace-period', '0')).code).toBe(0);
      await until('the deleted pod on the watch', async () => (seen.length > first.length && seen.endsWith('\n') ? true : undefined), 10_000);
      // Two whole polls after the pod's deletion was seen: all the watch prints of its going is in.
      await pastPolls(3);
      const after = seen.slice(first.length).split('\n').filter(Boolean);
      expect(after.length).toBeGreaterThan(0);
      expect(after.every((l) => l.startsWith(gone))).toBe(true);
      // Each column starts where the header's does.
      for (const l of after) {
        for (const col of ['READY', 'STATUS', 'RESTARTS', 'AGE']) {
          const at = header.indexOf(col);
          expect(l[at - 1], `${col} in "${l}"`).toBe(' ');
          expect(l[at], `${col} in "${l}"`).not.toBe(' ');
        }
      }
    } finally {
      w.kill('SIGINT');
      await trace.close();
    }
  }, 40_000);
});

describe('delete of a pod the agent declares', () => {
  it('warns that the agent recreates it, and the agent does: a new sandbox, then its containers, without an error or back-off', async () => {
    const dir = join(world.dir, 'declared');
    mkdirSync(dir, { recursive: true });
    const name = unique('declared');
    const file = join(dir, `${name}.yaml`);
    writeFileSync(file, pod(name, 'exec sleep 3600'));
    const agent = suite.run(['--manifest-dir', dir]);
    await agent.started();
    await agent.waitForLog(`pod ${ns}/${name}: creating`);
    const running = async (): Promise<string | undefined> => {
      const list = await podContainers(ns, name);
      return list.length === 2 && list.every((c) => c.State === 'running')
        ? list
            .map((c) => c.Id)
            .sort()
            .join()
        : undefined;
    };
    const before = await until('the pod to run', running);
    const d = await world.cli('delete', '-n', ns, name);
    expect(d.code, d.err).toBe(0);
    expect(d.err).toBe(`warning: pod/${ns}/${name} is declared by file:${file}: the agent will recreate it; to remove it for good, delete it from ${file}`);
    const after = await until('the pod to come back', async () => {
      const ids = await running();
      return ids && ids.split(',').every((id) => !before.includes(id)) ? ids : undefined;
    });
    expect(after).toBeDefined();
    // Relists that saw it back and a resync of every pod since: what the agent says of it is said.
    await pastRelist(agent);
    // (The earlier tests' applied pods run here too, crash-looping: only this pod's lines count.)
    const mine = agent
      .logs()
      .split('\n')
      .filter((l) => l.includes(`${ns}/${name}`));
    expect(mine.join('\n')).toContain(`pod ${ns}/${name}: creating`);
    expect(mine.join('\n')).not.toMatch(/RunContainerError|cannot join network|retrying in|back-off/);
    const g = await world.cli('get', 'pods', '-n', ns, name, '--no-headers');
    expect(g.out).toMatch(new RegExp(`^${name}\\s+1/1\\s+Running\\s+0\\s`));
  });
});

describe('--help', () => {
  it('names the moment apply holds Ready, what logs -p reads, what get -w prints, and that a declared pod comes back', async () => {
    const help = async (...verb: string[]): Promise<string> => (await world.bin([...verb, '--help'])).out.replace(/\s+/g, ' ');
    expect(await help('apply')).toMatch(
      /passing its readiness probe, for 1 s with no restart[\s\S]*exit 1, with its last exit code and the last lines of its log/,
    );
    expect(await help('logs')).toContain('the one that just died while the next waits out its back-off');
    expect(await help('get', 'pods')).toContain('not for its AGE alone');
    expect(await help('delete')).toContain('delete warns so, and says where to remove it for good');
  });
});
