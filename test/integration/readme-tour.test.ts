import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN, copySampleManifests, freePort, TEST_IMAGE, unique, World } from './helpers.js';

// README.md's "A short tour", run as written, line by line, on a fresh state directory: the
// commands are read from the README's code block, so the test breaks when README and behaviour
// drift. To run beside the demo and other tests, the examples are copied with their own
// namespaces, ports and hostPath, and `podrun` on the PATH is the built binary with this test's
// --state-dir (and the loopback node IP of every test).
const REPO = fileURLToPath(new URL('../..', import.meta.url));
const world = new World();
afterAll(() => world.cleanup());

/**
 * Lines of the tour this test does not run, each with why. Every entry must still be in the
 * tour (checked below), so the list cannot outlive what it excuses.
 */
const SKIPPED: Record<string, string> = {
  'export PATH="$PWD/bin:$PATH"': 'the test puts its own podrun (the same binary, with its state directory) on the PATH',
  'podrun apply https://example.com/pods.yaml --timeout 2m': 'needs the network',
  'podrun run --manifest-dir /etc/podrun/manifests --manifest-url https://cfg.example/node1.yaml':
    'the agent is a service (and the URL needs the network); agent-*.test.ts run it',
  'podrun pull -f ./manifests': 'pulls from registries: needs the network (registry.test.ts pulls from a local one)',
};

/** The commands of the tour: the first sh block after "## A short tour", without comments. */
function tourCommands(): string[] {
  const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
  const at = readme.indexOf('## A short tour');
  expect(at, 'README.md has "## A short tour"').toBeGreaterThan(0);
  const block = /```sh\n([\s\S]*?)```/.exec(readme.slice(at));
  expect(block, 'the tour has an sh code block').not.toBeNull();
  return block![1]!
    .split('\n')
    .map((l) => l.replace(/\s+#\s.*$/, '').trim())
    .filter((l) => l && !l.startsWith('#'));
}

describe("README.md's tour", () => {
  it('runs as written on a fresh state directory', async () => {
    const commands = tourCommands();
    for (const line of Object.keys(SKIPPED)) expect(commands, `SKIPPED names a line the tour no longer has: ${line}`).toContain(line);

    // The examples, made this test's own: namespaces, host ports and the hostPath.
    const demo = unique('tour');
    const system = unique('tour-sys');
    const [web, etcd] = [await freePort(), await freePort()];
    const work = join(world.dir, 'tour');
    const data = join(world.dir, 'podrun-examples');
    mkdirSync(join(work, 'manifests'), { recursive: true });
    for (const text of copySampleManifests(join(work, 'manifests'), { demo, system, web, etcd, data })) {
      expect(text, 'a sample still names what the test replaces').not.toMatch(/18080|18081|\/var\/lib\/podrun-examples|namespace: (demo|kube-system)\b/);
    }
    // The samples keep the default 30 s grace period: their containers end on SIGTERM, so the
    // tour's deletes are quick as a newcomer's are (examples.test.ts checks how they end).
    writeFileSync(
      join(work, 'pod.yaml'),
      `apiVersion: v1\nkind: Pod\nmetadata: {name: ${unique('mine')}, namespace: ${demo}}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers: [{name: main, image: ${TEST_IMAGE}, command: [sleep, '3600']}]\n`,
    );
    const bin = join(world.dir, 'tour-bin');
    mkdirSync(bin);
    writeFileSync(join(bin, 'podrun'), `#!/bin/sh\nexec '${BIN}' --state-dir '${world.stateDir}' --node-ip 127.0.0.1 "$@"\n`);
    chmodSync(join(bin, 'podrun'), 0o755);

    const ran: string[] = [];
    for (const written of commands) {
      if (SKIPPED[written]) continue;
      const line = written.replace(/\bdemo\b/g, demo);
      const r = spawnSync('bash', ['-c', line], {
        cwd: work,
        encoding: 'utf8',
        input: '',
        timeout: 180_000,
        env: { ...process.env, PATH: `${bin}:${process.env.PATH ?? ''}` },
      });
      expect(r.status, `\`${written}\` exited ${String(r.status)}:\n${r.stdout}\n${r.stderr}`).toBe(0);
      ran.push(written);
      if (written.startsWith('podrun logs')) {
        // The sample's httpd logs its requests (the readiness probe's at least) to stdout, so `| tail` shows them.
        expect(r.stdout, `\`${written}\` printed nothing on stdout; stderr:\n${r.stderr}`).toMatch(/response:200/);
      }
      if (written.startsWith('podrun apply -f ./manifests')) {
        // The state directory is root's alone, and so is every pod's directory in it.
        for (const dir of [world.stateDir, join(world.stateDir, 'pods')]) expect((statSync(dir).mode & 0o777).toString(8), dir).toBe('700');
      }
    }
    // Most of the tour ran: a README whose block became prose, or a skip list that grew, shows here.
    expect(ran.length).toBeGreaterThanOrEqual(commands.length - Object.keys(SKIPPED).length);
    expect(ran.length).toBeGreaterThan(15);
  }, 600_000);
});
