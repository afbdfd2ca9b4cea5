import { describe, expect, it } from 'vitest';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AgentSuite, pastRelist, type AgentProcess } from './agent-helpers.js';
import { makeKeyPair, runningWith as runningWithIn, SignedServer, type SigningKey } from './signing-helpers.js';
import { agentGetText, containerIds, podContainers, TEST_IMAGE, unique, until } from './helpers.js';

// Signed manifest sets: what a polled URL or a watched directory serves runs only when a pinned
// key signed it (ssh-keygen -Y sign -n podrun), and nothing else ever touches the running pods.
const suite = new AgentSuite('signed');
const { world, ns } = suite;
let agent: AgentProcess | undefined;

/** An ssh-keygen key pair in the test's directory; `sign` writes FILE.sig beside a file. */
function keyPair(name: string): SigningKey {
  return makeKeyPair(world.dir, name);
}

function pod(name: string, env: string): string {
  return `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: a, image: ${TEST_IMAGE}, command: [sleep, '3600'], env: [{name: V, value: ${env}}]}
`;
}

function runningWith(name: string, env: string): Promise<string> {
  return runningWithIn(ns, name, env);
}

function status(): { sources: { name: string; errors: string[]; signedBy?: string[] }[] } {
  return JSON.parse(readFileSync(join(world.stateDir, 'agent-status.json'), 'utf8')) as { sources: { name: string; errors: string[]; signedBy?: string[] }[] };
}

function sourceErrors(): string[] {
  return status().sources.flatMap((x) => x.errors);
}

describe('signed manifest sets', () => {
  it('a key file that cannot be used stops the agent at start, naming the file and line', async () => {
    const missing = await world.bin(['run', '--manifest-url', 'http://127.0.0.1:9/pods.yaml', '--manifest-url-verify-key', join(world.dir, 'nope.pub')]);
    expect([missing.code, missing.err.trim()]).toEqual([2, `podrun: cannot read verify key ${join(world.dir, 'nope.pub')}: ENOENT`]);
    const bad = join(world.dir, 'bad.pub');
    writeFileSync(bad, '# signers\nnot a key\n');
    const invalid = await world.bin(['run', '--manifest-dir', world.dir, '--manifest-dir-verify-key', bad]);
    expect(invalid.code).toBe(2);
    expect(invalid.err).toContain(`podrun: ${bad}:2: not an OpenSSH public key or allowed-signers line`);
  });

  it('a URL: a signed set runs; an altered body, a missing or foreign signature is refused and the pods stay; offline boot uses only a verified cache', async () => {
    const trusted = keyPair(unique('trusted'));
    const foreign = keyPair(unique('foreign'));
    const files = join(world.dir, unique('served'));
    mkdirSync(files);
    const sign = (body: string, k = trusted): string => {
      const f = join(files, `${unique('set')}.yaml`);
      writeFileSync(f, body);
      return k.sign(f);
    };
    const server = new SignedServer();
    await server.start();
    const name = unique('url');
    server.body = pod(name, 'one');
    server.sig = sign(server.body);
    agent = suite.run(['--manifest-url', server.url, '--manifest-url-verify-key', trusted.pub]);
    await agent.started();
    const first = await runningWith(name, 'one');
    await agent.waitForLog(/signature verified \(key SHA256:\S+ \(trusted-\S+@test\)\)/);
    // Who signed what runs, in the status an operator reads.
    await until('the signer in agent-status.json', async () =>
      status().sources.some((x) => x.signedBy?.some((b) => /^url:http:\/\/127\.0\.0\.1:\d+\/pods\.yaml: SHA256:\S+ \(trusted-\S+@test\)$/.test(b)))
        ? true
        : undefined,
    );
    const good = await containerIds(ns, name);

    const refusals: [string, () => void, RegExp][] = [
      ['an altered body', () => (server.body = pod(name, 'evil')), /signature refused: the signature by SHA256:\S+ does not match the content/],
      ['no signature', () => (server.sig = undefined), /signature refused: no signature \(looked for http:\/\/127\.0\.0\.1:\d+\/pods\.yaml\.sig \(HTTP 404\)/],
      ['a foreign key', () => (server.sig = sign(server.body, foreign)), /signature refused: signed by SHA256:\S+, which is not a trusted key/],
      [
        'another namespace',
        () => {
          const f = join(files, `${unique('git')}.yaml`);
          writeFileSync(f, server.body);
          server.sig = trusted.sign(f, 'git');
        },
        /signature refused: signed for namespace "git", not "podrun"/,
      ],
    ];
    for (const [what, change, message] of refusals) {
      change();
      await agent.waitForLog(message);
      const seen = server.requests;
      await until(`polls after ${what}`, async () => (server.requests >= seen + 4 ? true : undefined));
      expect([what, await containerIds(ns, name)]).toEqual([what, good]);
      expect(sourceErrors().join('\n')).toMatch(message);
    }
    // Reported on the pod, in metrics, and the cache still holds the verified set only.
    const described = await world.cli('describe', 'pod', '-n', ns, name);
    expect(described.out).toMatch(/Warning\s+FailedVerification\s+.*signature refused/);
    const metrics = await agentGetText(world.stateDir, '/metrics');
    expect(metrics).toMatch(/podrun_manifest_signature_checks_total\{source="url:http:\/\/127\.0\.0\.1:\d+\/pods\.yaml",result="refused"\} ([5-9]|\d\d+)/);
    expect(metrics).toMatch(/podrun_manifest_signature_checks_total\{source="url:[^"]+",result="verified"\} [1-9]/);
    const cacheDir = join(world.stateDir, 'url-cache');
    const cacheFile = join(cacheDir, readdirSync(cacheDir)[0] ?? '');
    const cached = JSON.parse(readFileSync(cacheFile, 'utf8')) as { body: string; signed: { bytes: string; signature: string } };
    expect(cached.body).toContain('value: one');
    expect(Buffer.from(cached.signed.bytes, 'base64').toString()).toBe(pod(name, 'one'));

    // A properly signed change runs.
    server.body = pod(name, 'two');
    server.sig = sign(server.body);
    const second = await runningWith(name, 'two');
    expect(second).not.toBe(first);

    // Offline boot from the verified cache: the pod is kept as it is.
    await agent.stop();
    await server.close();
    agent = suite.run(['--manifest-url', server.url, '--manifest-url-verify-key', trusted.pub]);
    await agent.waitForLog('using the cached copy until the URL answers');
    await pastRelist(agent);
    expect(await runningWith(name, 'two')).toBe(second);
    await agent.stop();

    // A cache edited on disk is not a verified set: not used, and the pod is left alone.
    const tampered = JSON.parse(readFileSync(cacheFile, 'utf8')) as { body: string; signed: { bytes: string; signature: string } };
    tampered.body = pod(name, 'evil');
    tampered.signed.bytes = Buffer.from(pod(name, 'evil')).toString('base64');
    writeFileSync(cacheFile, JSON.stringify(tampered));
    agent = suite.run(['--manifest-url', server.url, '--manifest-url-verify-key', trusted.pub]);
    await agent.waitForLog(/the cached copy is not used: signature refused: the signature by SHA256:\S+ does not match the content .*\(waiting for the URL\)/);
    await pastRelist(agent);
    expect(await runningWith(name, 'two')).toBe(second);
    expect(agent.logs()).not.toContain('using the cached copy');
  });

  it('a watched directory: only files signed by a pinned key run; an altered file keeps its last good pod; a late signature is picked up', async () => {
    const trusted = keyPair(unique('dirkey'));
    const dir = join(world.dir, unique('dir'));
    mkdirSync(dir);
    const signedName = unique('signed');
    const unsignedName = unique('unsigned');
    const signedFile = join(dir, `${signedName}.yaml`);
    writeFileSync(signedFile, pod(signedName, 'one'));
    trusted.sign(signedFile);
    writeFileSync(join(dir, `${unsignedName}.yaml`), pod(unsignedName, 'one'));
    agent = suite.run(['--manifest-dir', dir, '--manifest-dir-verify-key', trusted.pub]);
    await agent.started();
    const first = await runningWith(signedName, 'one');
    expect(status().sources.find((x) => x.name === `dir:${dir}`)?.signedBy).toEqual([
      expect.stringMatching(new RegExp(`^${signedFile}: SHA256:\\S+ \\(dirkey-\\S+@test\\)$`)),
    ]);
    await agent.waitForLog(new RegExp(`${unsignedName}\\.yaml:1:1 signature refused: no signature \\(looked for ${dir}/${unsignedName}\\.yaml\\.sig`));
    expect(await podContainers(ns, unsignedName)).toEqual([]);

    // Altered in place (the old signature beside it): refused, the pod untouched.
    writeFileSync(signedFile, pod(signedName, 'evil'));
    await agent.waitForLog(/signed-\S+\.yaml:1:1 signature refused: the signature by SHA256:\S+ does not match the content/);
    await pastRelist(agent);
    expect(await runningWith(signedName, 'one')).toBe(first);

    // Signed again (as an OTA image brings the pair): the change runs.
    writeFileSync(signedFile, pod(signedName, 'two'));
    trusted.sign(signedFile);
    await runningWith(signedName, 'two');

    // A signature arriving after its file: the watcher reads the pair then.
    trusted.sign(join(dir, `${unsignedName}.yaml`));
    await runningWith(unsignedName, 'one');
  });
});
