import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, PAUSE_IMAGE, TEST_IMAGE, unique, until, World } from './helpers.js';

// What a kubectl user types, run through the real binary against the real engine.
const world = new World();
const ns = unique('habits');
const a = unique('alpha');
const b = unique('beta');
afterAll(() => world.cleanup());

const pod = (name: string, labels: string, extra = ''): string => `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
  namespace: ${ns}
  labels: {${labels}}
${extra}spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: main, image: ${TEST_IMAGE}, command: [sh, -c, 'echo main says hi; echo main complains >&2; echo main > /tmp/who; exec sleep 3600']}
  - {name: side, image: ${TEST_IMAGE}, command: [sh, -c, 'echo side says hi; echo side > /tmp/who; exec sleep 3600']}
`;

beforeAll(async () => {
  // apply -f - : the manifests on standard input, as kubectl reads them.
  const r = await world.bin(['apply', '-f', '-'], {
    input: `${pod(a, 'app: a, tier: front')}---\n${pod(b, 'app: b', '  annotations: {kubectl.kubernetes.io/default-container: side}\n')}`,
  });
  expect(r.err).toBe('');
  expect(r.code).toBe(0);
}, 60_000);

describe('kubectl habits: get', () => {
  it('gets pods by name, by selector, as names, with labels, without headers, or through JSONPath', async () => {
    const one = await world.bin(['get', 'pods', '-n', ns, a]);
    expect(one.out).toMatch(new RegExp(`^NAME\\s+READY\\s+STATUS\\s+RESTARTS\\s+AGE\\n${a}\\s+2/2\\s+Running\\s+0\\s+\\d+s\\n$`));
    const missing = await world.bin(['get', 'pods', '-n', ns, 'nope']);
    expect(missing).toMatchObject({ code: 1, out: '', err: `Error: pod "nope" not found in namespace "${ns}"\n` });
    const names = async (...args: string[]): Promise<string> => (await world.bin(['get', 'pods', '-n', ns, '-o', 'name', ...args])).out;
    expect((await names()).split('\n').filter(Boolean).sort()).toEqual([`pod/${a}`, `pod/${b}`].sort());
    expect(await names('-l', 'app=a')).toBe(`pod/${a}\n`);
    expect(await names('-l', 'app in (a,b),tier!=front')).toBe(`pod/${b}\n`);
    expect(await names('-l', '!tier')).toBe(`pod/${b}\n`);
    expect(await names('-l', 'tier')).toBe(`pod/${a}\n`);
    const bad = await world.bin(['get', 'pods', '-l', 'app=(']);
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('invalid label selector "app=("');
    const labels = await world.bin(['get', 'pods', '-n', ns, a, '--show-labels', '--no-headers']);
    expect(labels.out).toMatch(new RegExp(`^${a}\\s+2/2\\s+Running\\s+0\\s+\\d+s\\s+app=a,tier=front\\n$`));
    const jp = await world.bin(['get', 'pods', '-n', ns, '-l', 'app', '-o', 'jsonpath={range .items[*]}{.metadata.name}{"\\t"}{.status.phase}{"\\n"}{end}']);
    expect(jp.out.split('\n').filter(Boolean).sort()).toEqual([`${a}\tRunning`, `${b}\tRunning`].sort());
    const single = await world.bin(['get', 'pods', '-n', ns, a, '-o', 'jsonpath={.spec.containers[*].name} {.metadata.labels.tier}']);
    expect(single.out).toBe('main side front');
    const filtered = await world.bin([
      'get',
      'pods',
      '-n',
      ns,
      '-o',
      `jsonpath={.items[?(@.metadata.name=="${b}")].metadata.annotations['kubectl.kubernetes.io/default-container']}`,
    ]);
    expect(filtered.out).toBe('side');
  });
});

describe('kubectl habits: exec and logs', () => {
  it('execs in the default or a named container, with stdin, passing the exit code on', async () => {
    const r = await world.bin(['exec', '-n', ns, a, '--', 'sh', '-c', 'echo "in $(hostname)"; echo oops >&2; exit 3']);
    expect(r.code).toBe(3);
    expect(r.out).toBe(`in ${a}\n`);
    expect(r.err).toBe('Defaulted container "main" out of: main, side\noops\n');
    const side = await world.bin(['exec', '-n', ns, `pod/${a}`, '-c', 'side', '--', 'cat', '/tmp/who']);
    expect(side).toMatchObject({ code: 0, out: 'side\n', err: '' });
    const stdin = await world.bin(['exec', '-i', '-n', ns, a, '-c', 'main', '--', 'sh', '-c', 'tr a-z A-Z'], { input: 'piped in\n' });
    expect(stdin).toMatchObject({ code: 0, out: 'PIPED IN\n' });
    // -t without a terminal: said, and the command still runs.
    const tty = await world.bin(['exec', '-t', '-n', ns, a, '-c', 'main', '--', 'true']);
    expect(tty.code).toBe(0);
    expect(tty.err).toContain('Unable to use a TTY');
    const none = await world.bin(['exec', '-n', ns, a]);
    expect(none.code).toBe(2);
  });

  it('logs the default container, by selector, all containers with prefixes, and since a time', async () => {
    const first = await world.bin(['logs', '-n', ns, a]);
    expect(first).toMatchObject({ code: 0, out: 'main says hi\n', err: 'Defaulted container "main" out of: main, side\nmain complains\n' });
    // The default-container annotation wins over the first container.
    expect((await world.bin(['logs', '-n', ns, b])).out).toBe('side says hi\n');
    const sel = await world.bin(['logs', '-n', ns, '-l', 'app in (a,b)', '--prefix']);
    expect(sel.out.split('\n').filter(Boolean).sort()).toEqual([`[pod/${a}/main] main says hi`, `[pod/${b}/side] side says hi`].sort());
    const all = await world.bin(['logs', '-n', ns, a, '--all-containers', '--prefix']);
    expect(all.out).toBe(`[pod/${a}/main] main says hi\n[pod/${a}/side] side says hi\n`);
    expect((await world.bin(['logs', '-n', ns, a, '-c', 'side', '--since', '1h'])).out).toBe('side says hi\n');
    // --since 1s is taken to the whole second: a line over 2 s old (the engine's own timestamp) is out.
    const stamped = (await world.bin(['logs', '-n', ns, a, '-c', 'side', '--timestamps'])).out;
    expect(stamped).toMatch(/^\S+ side says hi\n$/);
    const said = Date.parse(stamped.split(' ')[0]!);
    await until('the line to be over 2 s old', async () => (Date.now() - said > 2000 ? true : undefined));
    expect((await world.bin(['logs', '-n', ns, a, '-c', 'side', '--since', '1s'])).out).toBe('');
    expect((await world.bin(['logs', '-n', ns, a, '-c', 'side', '--since-time', new Date(Date.now() - 3_600_000).toISOString()])).out).toBe('side says hi\n');
  });
});

describe('kubectl habits: describe, wait, delete, watch', () => {
  it('describes several pods, waits for conditions, and times out saying on which', async () => {
    const d = await world.bin(['describe', 'pods', '-n', ns]);
    expect(d.code).toBe(0);
    expect(d.out.match(/^Name:\s+/gm)).toHaveLength(2);
    expect((await world.bin(['describe', 'pods', '-n', ns, '-l', 'tier=front'])).out.match(/^Name:\s+/gm)).toHaveLength(1);
    const ready = await world.bin(['wait', '-n', ns, '--for=condition=Ready', `pod/${a}`, b]);
    expect(ready).toMatchObject({ code: 0, out: `pod/${a} condition met\npod/${b} condition met\n` });
    const phase = await world.bin(['wait', '-n', ns, '--for=jsonpath={.status.phase}=Running', '-l', 'app=b']);
    expect(phase.out).toBe(`pod/${b} condition met\n`);
    const never = await world.bin(['wait', '-n', ns, '--for=condition=Ready=false', `pod/${a}`, '--timeout', '1s']);
    expect(never).toMatchObject({ code: 1, err: `error: timed out waiting for the condition on pods/${a}\n` });
  });

  it('shows a pod in its grace period as Terminating (in get and in get -w), and deletes by every kubectl spelling', async () => {
    const slow = unique('slow');
    const dir = join(world.dir, 'slow');
    mkdirSync(dir);
    writeFileSync(
      join(dir, 'slow.yaml'),
      `apiVersion: v1
kind: Pod
metadata: {name: ${slow}, namespace: ${ns}, labels: {app: slow}}
spec:
  terminationGracePeriodSeconds: 6
  containers: [{name: c, image: ${TEST_IMAGE}, command: [sh, -c, "trap '' TERM; while :; do sleep 1; done"]}]
`,
    );
    expect((await world.bin(['apply', '-f', dir])).code).toBe(0);
    const watch = world.spawnBin(['get', 'pods', '-n', ns, '-w']);
    let watched = '';
    watch.stdout.on('data', (c: Buffer) => (watched += c.toString()));
    await until('the watch to list', async () => (watched.includes(slow) ? true : undefined), 15_000);
    const deleting = world.bin(['delete', 'pod', slow, '-n', ns]);
    const shown = await until(
      'Terminating in get pods',
      async () => {
        const g = await world.bin(['get', 'pods', '-n', ns, slow, '--no-headers']);
        return /\sTerminating\s/.test(g.out) ? g.out : undefined;
      },
      10_000,
    );
    expect(shown).toMatch(new RegExp(`^${slow}\\s+\\d/1\\s+Terminating\\s`));
    await until('a watch line with Terminating', async () => (new RegExp(`^${slow}\\s+\\S+\\s+Terminating\\s`, 'm').test(watched) ? true : undefined), 10_000);
    watch.kill('SIGINT');
    expect(await deleting).toMatchObject({ code: 0, out: `pod/${ns}/${slow} deleted\n` });
    expect((await world.bin(['get', 'pods', '-n', ns, slow])).code).toBe(1);

    expect((await world.bin(['delete', `pod/${a}`, '-n', ns, '--grace-period', '0'])).out).toBe(`pod/${ns}/${a} deleted\n`);
    const rest = await world.bin(['delete', '--all', '-n', ns, '--grace-period', '0']);
    expect(rest.out).toBe(`pod/${ns}/${b} deleted\n`);
    expect((await world.bin(['get', 'pods', '-n', ns])).err).toBe(`No resources found in ${ns} namespace.\n`);
  });
});

describe('kubectl habits: completion, explain, help', () => {
  it('prints a bash completion that completes commands, flags, their values, and the pods of the state directory and namespace on the line', async () => {
    const script = await world.bin(['completion', 'bash']);
    expect(script.code).toBe(0);
    const file = join(world.dir, 'completion.bash');
    writeFileSync(file, script.out);
    expect(spawnSync('bash', ['-n', file]).status).toBe(0);
    // The function asks `podrun` on the PATH, as it would in a user's shell.
    const path = `${dirname(BIN)}:${process.env.PATH ?? ''}`;
    const complete = (line: string): string[] => {
      const words = line.split(' ');
      const r = spawnSync(
        'bash',
        [
          '-c',
          `source ${file}; COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _podrun; printf '%s\\n' "\${COMPREPLY[@]}"`,
        ],
        { encoding: 'utf8', env: { ...process.env, PATH: path } },
      );
      return r.stdout.split('\n').filter(Boolean).sort();
    };
    expect(complete('podrun ge')).toEqual(['get']);
    expect(complete('podrun get p')).toEqual(['pod', 'pods', 'po'].sort());
    expect(complete('podrun get pods --sh')).toEqual(['--show-labels']);
    expect(complete('podrun logs --all')).toEqual(['--all-containers']);
    expect(complete('podrun get pods -o ')).toEqual(['json', 'jsonpath=', 'name', 'wide', 'yaml']);
    expect(complete('podrun get node -o y')).toEqual(['yaml']);
    // Pods are those of the --state-dir and -n on the line, not of the default state directory
    // (the namespace's own pods: earlier tests deleted a and b).
    const c = unique('gamma');
    const d = unique('delta');
    expect((await world.bin(['apply', '--no-wait', '-f', '-'], { input: `${pod(c, 'app: c')}---\n${pod(d, 'app: d')}` })).code).toBe(0);
    const on = `podrun --state-dir ${world.stateDir} --pause-image ${PAUSE_IMAGE}`;
    expect(complete(`${on} logs -n ${ns} `)).toEqual([c, d].sort());
    expect(complete(`${on} describe pod -n ${ns} ${c.slice(0, -2)}`)).toEqual([c]);
    expect(complete(`${on} logs `)).not.toContain(c);
    expect(complete(`podrun logs -n ${ns} `)).not.toContain(c);
    expect(complete(`${on} logs -n ${ns} ${c} -c `)).toEqual(['main', 'side']);
    expect(complete(`${on} exec -n ${ns} ${d} -c s`)).toEqual(['side']);
    const zsh = await world.bin(['completion', 'zsh']);
    expect(zsh.out.startsWith('#compdef podrun\n')).toBe(true);
    const fish = await world.bin(['completion', 'fish']);
    expect(fish.code).toBe(0);
    expect(fish.out).toContain("complete -c podrun -f -a '(__podrun_complete)'");
    expect((await world.bin(['completion', 'tcsh'])).code).toBe(2);
  });

  it('explains a field with what podrun does with it', async () => {
    const probe = await world.bin(['explain', 'pod.spec.containers.livenessProbe']);
    expect(probe.code).toBe(0);
    expect(probe.out).toContain('FIELD: livenessProbe <Probe>');
    expect(probe.out).toMatch(/DESCRIPTION:\n\s+Periodic probe of container liveness/);
    expect(probe.out).toMatch(/PODRUN:\n\s+honoured/);
    expect(probe.out).toMatch(/^\s+httpGet\t<HTTPGetAction>/m);
    expect((await world.bin(['explain', 'pods.spec.containers.volumeDevices'])).out).toMatch(/PODRUN:\n\s+refused: podrun cannot honour/);
    expect((await world.bin(['explain', 'pod.spec.nodeSelector'])).out).toMatch(/PODRUN:\n\s+accepted and ignored/);
    expect((await world.bin(['explain', 'pod.spec.containers.envFrom'])).out).toMatch(/refused, as the kubelet refuses it in a static pod/);
    const unknown = await world.bin(['explain', 'pod.spec.nope']);
    expect(unknown.code).toBe(1);
    expect(unknown.err).toMatch(/^error: field "nope" does not exist/);
    expect((await world.bin(['explain', 'deployment'])).code).toBe(1);
  });

  it('says in --help where a command differs from kubectl', async () => {
    expect((await world.bin(['get', 'pods', '--help'])).out).toContain('--watch polls');
    expect((await world.bin(['apply', '--help'])).out).toContain('unlike kubectl it waits until the pods run');
    expect((await world.bin(['logs', '--help'])).out).toContain('kubectl merges it into stdout');
  });
});
