import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_IMAGE, unique, World } from './helpers.js';

// What a newcomer types in the first minutes (issue 29), through the real binary: kubectl's forms
// of the same words, one-line answers to typos, messages that say what is wrong where there is
// no apiserver, and output a YAML reader takes as it is.
const world = new World();
const ns = unique('newcomer');
const name = unique('first');
afterAll(() => world.cleanup());

const pod = `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: main, image: ${TEST_IMAGE}, command: [sleep, '3600'], resources: {limits: {memory: 64Mi}}}
`;

beforeAll(async () => {
  const r = await world.bin(['apply', '--no-wait', '-f', '-'], { input: pod });
  expect(r.code, r.err).toBe(0);
}, 60_000);

const lines = (text: string): string[] => text.trimEnd().split('\n').filter(Boolean);

describe('argument forms, as kubectl takes them', () => {
  it('get and describe take pod/NAME and pods/NAME, and the type after options', async () => {
    for (const args of [
      ['get', `pod/${name}`, '-n', ns],
      ['get', '-n', ns, `pods/${name}`],
      ['get', '-n', ns, 'pods', name],
      ['get', '-n', ns, 'po'],
    ]) {
      const r = await world.bin(args);
      expect(r.code, `${args.join(' ')}: ${r.err}`).toBe(0);
      expect(r.out, args.join(' ')).toMatch(new RegExp(`^${name}\\s`, 'm'));
    }
    const d = await world.bin(['describe', `pod/${name}`, '-n', ns]);
    expect(d.code, d.err).toBe(0);
    expect(d.out).toMatch(new RegExp(`^Name:\\s+${name}$`, 'm'));
    const names = await world.bin(['get', '-n', ns, `pod/${name}`, `pod/${name}`, '-o', 'name']);
    expect(names.out.trim().split('\n')[0]).toBe(`pod/${name}`);
  });

  it('validate takes -f (and - for standard input), as apply does', async () => {
    const file = world.write('valid.yaml', pod);
    expect(await world.bin(['validate', '-f', file])).toMatchObject({ code: 0, out: 'valid: 1 pod in 1 file\n' });
    expect(await world.bin(['validate', '-f', '-'], { input: pod })).toMatchObject({ code: 0, out: 'valid: 1 pod in 1 file\n' });
    expect(await world.bin(['validate', file])).toMatchObject({ code: 0 });
    const none = await world.bin(['validate']);
    expect(none.code).toBe(2);
    expect(lines(none.err).length).toBeLessThanOrEqual(3);
  });

  it('a typo gets at most three lines: what was wrong, what was meant, where help is', async () => {
    const verb = await world.bin(['aply', '-f', 'x.yaml']);
    expect(verb.code).toBe(2);
    expect(lines(verb.err)).toEqual(["error: unknown command 'aply'", '(Did you mean apply?)', "See 'podrun --help'."]);
    expect(verb.out).toBe('');
    const flag = await world.bin(['apply', '--dry-rn', '-f', 'x.yaml']);
    expect(flag.code).toBe(2);
    expect(lines(flag.err)).toEqual(["error: unknown option '--dry-rn'", '(Did you mean --dry-run?)', "See 'podrun apply --help'."]);
    const deep = await world.bin(['get', 'pods', '--show-label']);
    expect(lines(deep.err).length).toBeLessThanOrEqual(3);
    expect(deep.err).toContain("See 'podrun get pods --help'.");
  });
});

describe('messages where there is no server', () => {
  it('a pod not found says which namespace was looked in, and where a pod of that name is', async () => {
    for (const args of [
      ['get', 'pods', name],
      ['describe', 'pod', name],
      ['logs', name],
      ['exec', name, '--', 'true'],
    ]) {
      const r = await world.bin(args);
      expect(r.code, args.join(' ')).toBe(1);
      expect(r.err, args.join(' ')).toBe(`Error: pod "${name}" not found in namespace "default"\n  a pod "${name}" is in namespace "${ns}": add -n ${ns}\n`);
      // Not an empty table under the error.
      expect(r.out, args.join(' ')).toBe('');
    }
    const nowhere = await world.bin(['get', 'pods', '-n', ns, 'nope']);
    expect(nowhere).toMatchObject({ code: 1, out: '', err: `Error: pod "nope" not found in namespace "${ns}"\n` });
    const explain = await world.bin(['explain', 'svc']);
    expect(explain.err).not.toContain('server');
  });

  it('an unreachable engine names where its address came from and how to fix it', async () => {
    const flag = await world.bin(['--docker-host', `unix://${world.dir}/no.sock`, 'get', 'pods']);
    expect(flag.code).toBe(3);
    expect(flag.err).toContain(`cannot reach the Docker engine at unix://${world.dir}/no.sock`);
    expect(flag.err).toContain("the address is --docker-host's; no socket is there: is the Docker engine running");
    const env = await world.bin(['get', 'pods'], { env: { DOCKER_HOST: `unix://${world.dir}/no.sock` } });
    expect(env.code).toBe(3);
    expect(env.err).toContain('the address came from DOCKER_HOST');
    // As the README says: the node is still shown, NotReady (Ready=False), and the exit code is the engine's, 3.
    const node = await world.bin(['--docker-host', `unix://${world.dir}/no.sock`, 'get', 'node']);
    expect(node.code).toBe(3);
    expect(node.out).toMatch(/^\S+\s+NotReady\s/m);
    const yaml = await world.bin(['--docker-host', `unix://${world.dir}/no.sock`, 'get', 'node', '-o', 'yaml']);
    expect(yaml.out).toMatch(/- type: Ready\n\s+status: 'False'/);
  });

  it('manifest errors: a near miss of a field name is named, a missing path has no line, a duplicate points at its name', async () => {
    const typo = world.write('typo.yaml', pod.replace('command:', 'comand:').replace('memory:', 'memroy:'));
    const r = await world.bin(['validate', typo]);
    expect(r.code).toBe(1);
    expect(r.err).toContain('spec.containers[0].comand: unknown field: not part of a Kubernetes v1 Pod (did you mean "command"?)');
    expect(r.err).toContain('spec.containers[0].resources.limits.memroy: unknown field: not part of a Kubernetes v1 Pod (did you mean "memory"?)');
    const far = await world.bin(['validate', world.write('far.yaml', pod.replace('command:', 'zzzzzzzz:'))]);
    expect(far.err).not.toContain('did you mean');

    const missing = await world.bin(['validate', './manifest']);
    expect(missing.err).toBe('./manifest: cannot read: no such file or directory\n');

    const twice = world.write(
      'twice.yaml',
      `${pod}---\napiVersion: v1\nkind: Pod\nmetadata:\n  labels: {a: b}\n  name: ${name}\n  namespace: ${ns}\nspec:\n  containers: [{name: a, image: b}]\n`,
    );
    const dup = await world.bin(['validate', twice]);
    expect(dup.err).toBe(`${twice}:13:3 metadata.name: pod ${ns}/${name} is also declared at line 3 of this file\n`);
    const other = world.write('other.yaml', pod);
    const across = await world.bin(['validate', world.write('one.yaml', pod), other]);
    expect(across.err).toBe(`${other}:3:12 metadata.name: pod ${ns}/${name} is also declared at ${world.dir}/one.yaml:3\n`);
  });
});

describe('output', () => {
  it('no -o yaml has YAML anchors or aliases', async () => {
    for (const args of [
      ['get', 'node', '-o', 'yaml'],
      ['get', 'pods', '-n', ns, '-o', 'yaml'],
      ['get', 'pods', '-n', ns, name, '-o', 'yaml'],
      ['run', '--print-config'],
    ]) {
      const r = await world.bin(args);
      expect(r.code, `${args.join(' ')}: ${r.err}`).toBe(0);
      expect(r.out, args.join(' ')).not.toMatch(/[&*]ref_\d/);
    }
    const node = await world.bin(['get', 'node', '-o', 'yaml']);
    expect(node.out).toMatch(/^ {2}capacity:\n {4}cpu:/m);
    expect(node.out).toMatch(/^ {2}allocatable:\n {4}cpu:/m);
  });

  it('explain prints a type it knows or none, and no schema internals', async () => {
    const field = await world.bin(['explain', 'pod.spec.securityContext.fsGroup']);
    expect(field.code).toBe(0);
    expect(field.out).toContain('FIELD: fsGroup\n');
    expect(field.out).not.toContain('—');
    const top = await world.bin(['explain', 'pods']);
    expect(top.out).not.toContain('$defs');
    expect(top.out).toMatch(/DESCRIPTION:\n\s+Pod is a collection of containers/);
    expect(top.out).not.toContain('<—>');
  });
});
