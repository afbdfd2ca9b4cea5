import { copyFileSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AgentSuite, pastRelist, type AgentProcess } from './agent-helpers.js';
import { agentGetText, containerIds, TEST_IMAGE, unique, until } from './helpers.js';
import { makeKeyPair, runningWith as runningWithIn, SignedServer } from './signing-helpers.js';

// Signed sets that cannot be replayed, frozen or moved (issue 19): whoever serves the files (a
// mirror, a USB stick, the cache on disk) can hold back news, but never bring an old set back.
const suite = new AgentSuite('fresh');
const { world, ns } = suite;
let agent: AgentProcess | undefined;

function pod(name: string, env: string, header?: string): string {
  return `${header ? `# podrun-set: ${header}\n` : ''}apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: a, image: ${TEST_IMAGE}, command: [sleep, '3600'], env: [{name: V, value: ${env}}]}
`;
}

function runningWith(name: string, env: string): Promise<string> {
  return runningWithIn(ns, name, env, 30_000);
}

function sourceErrors(): string[] {
  const s = JSON.parse(readFileSync(join(world.stateDir, 'agent-status.json'), 'utf8')) as { sources: { errors: string[] }[] };
  return s.sources.flatMap((x) => x.errors);
}

describe('signed sets that cannot be replayed or moved to another box', () => {
  it(
    'a URL: replay, a lower version, an expired set and a set for another node are refused; a higher version rolls back; an expired set in force keeps running and is reported',
    { timeout: 240_000 },
    async () => {
      const key = makeKeyPair(world.dir, unique('release'));
      const files = join(world.dir, unique('served'));
      mkdirSync(files);
      const server = new SignedServer();
      await server.start();
      const name = unique('url');
      /** Publishes a set as a release would: write, sign, serve both. Returns [body, sig]. */
      const publish = (body: string): [string, string] => {
        const f = join(files, `${unique('set')}.yaml`);
        writeFileSync(f, body);
        server.body = body;
        server.sig = key.sign(f);
        return [server.body, server.sig];
      };
      const args = ['--manifest-url', server.url, '--manifest-url-verify-key', key.pub, '--node-name', 'edge-7'];
      const setA = publish(pod(name, 'a', 'version=1'));
      agent = suite.run(args);
      await runningWith(name, 'a');
      publish(pod(name, 'b', 'version=2'));
      const b = await runningWith(name, 'b');
      const cacheDir = join(world.stateDir, 'url-cache');
      const cacheOfB = join(world.dir, 'cache-of-b.json');
      await until('the cache to hold version 2', async () =>
        readFileSync(join(cacheDir, readdirSync(cacheDir)[0]!), 'utf8').includes('value: b') ? true : undefined,
      );
      copyFileSync(join(cacheDir, readdirSync(cacheDir)[0]!), cacheOfB);
      const good = await containerIds(ns, name);

      const refusals: [string, () => void, string][] = [
        [
          'the exact old body and signature',
          () => ([server.body, server.sig] = setA),
          'set refused: replay: this exact set was superseded by a newer one (version 2 is in force)',
        ],
        ['a lower version', () => publish(pod(name, 'c', 'version=1')), 'set refused: replay: version 1 is older than version 2, already accepted'],
        ['an unversioned set', () => publish(pod(name, 'c')), 'set refused: replay: the set has no version, and version 2 was already accepted'],
        ['an expired set', () => publish(pod(name, 'c', 'version=3 expires=2026-01-01T00:00:00Z')), 'set refused: the set expired at 2026-01-01T00:00:00.000Z'],
        [
          'a set for other nodes',
          () => publish(pod(name, 'c', 'version=3 node=gw-*,edge-8')),
          'set refused: the set is signed for node gw-*,edge-8, not this node (edge-7)',
        ],
      ];
      for (const [what, change, message] of refusals) {
        change();
        await agent.waitForLog(message);
        const seen = server.requests;
        await until(`polls after ${what}`, async () => (server.requests >= seen + 4 ? true : undefined));
        expect([what, await containerIds(ns, name)]).toEqual([what, good]);
        expect(sourceErrors().join('\n')).toContain(message);
      }
      const described = await world.cli('describe', 'pod', '-n', ns, name);
      expect(described.out).toMatch(/Warning\s+FailedVerification\s+.*set refused: replay/);
      const metrics = await agentGetText(world.stateDir, '/metrics');
      for (const reason of ['replay', 'expired', 'node'])
        expect(metrics).toMatch(new RegExp(`podrun_manifest_set_refusals_total\\{source="url:[^"]+",reason="${reason}"\\} [1-9]`));

      // The operator's rollback: the old pods, signed again under a higher version.
      publish(pod(name, 'a', 'version=3 node=edge-*'));
      await runningWith(name, 'a');

      // kill -9 after version 3 was recorded, with the cache still holding version 2 (the cache is
      // written after the set is applied, the record before): the cache is a replay now, and so is
      // version 2 served again; the pod stays on version 3.
      await agent.kill9();
      copyFileSync(cacheOfB, join(cacheDir, readdirSync(cacheDir)[0]!));
      publish(pod(name, 'b', 'version=2'));
      const v3 = (await containerIds(ns, name)).a;
      agent = suite.run(args);
      await agent.waitForLog(/the cached copy is not used: set refused: replay: this exact set was superseded/);
      await agent.waitForLog('set refused: replay: this exact set was superseded');
      await pastRelist(agent);
      expect((await containerIds(ns, name)).a).toBe(v3);
      expect(b).not.toBe(v3);

      // A set in force that expires keeps running; the node and the metrics say so.
      const soon = new Date(Date.now() + 6000).toISOString().replace(/\.\d+Z$/, 'Z');
      publish(pod(name, 'd', `version=4 expires=${soon}`));
      const d = await runningWith(name, 'd');
      await until(
        'the node to report the expired set',
        async () => {
          const node = await world.cli('get', 'node', '-o', 'json');
          const cond = (JSON.parse(node.out) as { status: { conditions: { type: string; status: string; message: string }[] } }).status.conditions.find(
            (c) => c.type === 'ManifestSetExpired',
          );
          return cond?.status === 'True' && cond.message.includes(`expired ${new Date(soon).toISOString()}`) ? true : undefined;
        },
        30_000,
      );
      expect(await agentGetText(world.stateDir, '/metrics')).toMatch(/podrun_manifest_set_expired\{source="url:[^"]+"\} 1/);
      // The log says so too, naming the source and the time, once: not at every poll after.
      const expiredLine = `(version 4) expired at ${new Date(soon).toISOString()}: its pods keep running`;
      const escaped = expiredLine.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      await agent.waitForLog(new RegExp(`signed set url:http://127\\.0\\.0\\.1:\\d+/\\S+ ${escaped}`));
      await pastRelist(agent);
      expect((await containerIds(ns, name)).a).toBe(d);
      expect(agent.logs().split(expiredLine).length - 1).toBe(1);
      await server.close();
    },
  );

  it('a watched directory: an older signed file put back is refused and its pods stay; a newer one runs', { timeout: 120_000 }, async () => {
    const key = makeKeyPair(world.dir, unique('usb'));
    const dir = join(world.dir, unique('usb-dir'));
    mkdirSync(dir);
    const name = unique('dir');
    const file = join(dir, 'pods.yaml');
    const staging = join(world.dir, unique('staging'));
    mkdirSync(staging);
    /** Signs in a staging directory, then moves both into place (what an OTA image would hold). */
    const place = (body: string, tag: string): { body: string; sig: string } => {
      const f = join(staging, `${tag}.yaml`);
      writeFileSync(f, body);
      const sig = key.sign(f);
      writeFileSync(`${file}.sig`, sig);
      writeFileSync(file, body);
      return { body, sig };
    };
    const v1 = place(pod(name, 'one', 'version=1'), 'v1');
    agent = suite.run(['--manifest-dir', dir, '--manifest-dir-verify-key', key.pub]);
    await runningWith(name, 'one');
    place(pod(name, 'two', 'version=2'), 'v2');
    await runningWith(name, 'two');
    const good = await containerIds(ns, name);
    // The old stick again.
    writeFileSync(`${file}.sig`, v1.sig);
    writeFileSync(file, v1.body);
    await agent.waitForLog('set refused: replay: this exact set was superseded by a newer one (version 2 is in force)');
    await pastRelist(agent);
    expect(await containerIds(ns, name)).toEqual(good);
    place(pod(name, 'three', 'version=3'), 'v3');
    await runningWith(name, 'three');
  });
});
