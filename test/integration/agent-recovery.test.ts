import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { load as parse } from 'js-yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { writeFileAtomic } from '../../src/base/atomic-file.js';
import { AgentSuite, pastRelist, type AgentProcess } from './agent-helpers.js';
import { containerIds, podContainers, TEST_IMAGE, unique, until } from './helpers.js';

// What the agent believes after a restart: a corrupt state file, a contested name, a pod no one
// declares any more. Nothing healthy may be lost, and nothing unwanted may linger.
const suite = new AgentSuite('recover');
const { world, ns } = suite;
let agent: AgentProcess | undefined;

function pod(name: string, env = 'one'): string {
  return `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: ${TEST_IMAGE}
    command: [sh, -c, 'echo $V; exec sleep 3600']
    env: [{name: V, value: ${env}}]
`;
}

async function running(name: string): Promise<Record<string, string>> {
  return until(`pod ${name} to run`, async () => {
    const up = (await podContainers(ns, name)).filter((c) => c.State === 'running');
    return up.length === 2 ? containerIds(ns, name) : undefined;
  });
}

/** Two directory rescans and relists of `a` since the call, seen on its relist count (pastRelist, twice). */
async function settle(a: AgentProcess): Promise<void> {
  await pastRelist(a);
  await pastRelist(a);
}

describe('the agent after a restart', () => {
  it('keeps the pods of a corrupt applied set running, and says why', async () => {
    const name = unique('applied');
    const r = await world.cli('apply', world.write(`${name}.yaml`, pod(name)));
    expect(r.code, r.err).toBe(0);
    const ids = await running(name);
    const applied = join(world.stateDir, 'applied');
    const [set] = readdirSync(applied).filter((n) => n.endsWith('.json'));
    truncateSync(join(applied, set!), 40);

    agent = suite.run([]);
    await agent.started();
    await agent.waitForLog(`${join(applied, set!)}:`);
    await settle(agent);
    expect(agent.logs()).not.toContain('no longer declared');
    expect(await containerIds(ns, name)).toEqual(ids);
    const status = JSON.parse(readFileSync(join(world.stateDir, 'agent-status.json'), 'utf8')) as { sources: { errors: string[] }[] };
    expect(status.sources.flatMap((s) => s.errors).join('\n')).toContain(join(applied, set!));
    // Once the set is readable again and no longer has the pod, it goes.
    writeFileSync(join(applied, set!), JSON.stringify({ apiVersion: 'v1', kind: 'PodList', items: [] }));
    await until('the pod to be deleted', async () => ((await podContainers(ns, name)).length === 0 ? true : undefined));
  });

  it('resolves a contested name from the engine: the running pod keeps it, whatever the file names', async () => {
    const dir = join(world.dir, unique('dup'));
    mkdirSync(dir);
    const name = unique('twice');
    writeFileSync(join(dir, 'b.yaml'), pod(name, 'from-b'));
    agent = suite.run(['--manifest-dir', dir]);
    await agent.started();
    const first = await running(name);
    writeFileSync(join(dir, 'a.yaml'), pod(name, 'from-a'));
    await agent.waitForLog(`conflict: pod ${ns}/${name}`);
    await agent.stop();

    // a.yaml sorts first; after the restart the running pod from b.yaml must still win.
    agent = suite.run(['--manifest-dir', dir]);
    await agent.started();
    await agent.waitForLog(`running the one from ${join(dir, 'b.yaml')}`).catch((e: Error) => {
      throw new Error(`${e.message}\n${agent?.logs()}`);
    });
    await settle(agent);
    expect(await containerIds(ns, name)).toEqual(first);
  });

  it('deletes a pod no source declares any more as soon as the source has loaded, not at the next relist', async () => {
    const name = unique('gone');
    let body = JSON.stringify({ apiVersion: 'v1', kind: 'PodList', items: [parse(pod(name))] });
    let delayMs = 0;
    const server = createServer((_req, res) => void setTimeout(() => res.end(body), delayMs));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/pods.json`;
    try {
      agent = suite.run(['--manifest-url', url, '--url-period', '1h']);
      await agent.started();
      await running(name);
      await agent.stop();
      // Down for a while: the set lost the pod meanwhile, and the server is slow to say so.
      rmSync(join(world.stateDir, 'url-cache'), { recursive: true, force: true });
      body = JSON.stringify({ apiVersion: 'v1', kind: 'PodList', items: [] });
      delayMs = 3000;
      agent = suite.run(['--manifest-url', url, '--url-period', '1h', '--relist-period', '10m']);
      await agent.started();
      // Within 30 s, not the 10 minutes of the next relist (10 s failed once under a load of 80).
      await until('the pod to be deleted', async () => ((await podContainers(ns, name)).length === 0 ? true : undefined), 30_000);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});

describe('state on a full disk', () => {
  const full = join(world.dir, 'full');
  afterAll(() => {
    spawnSync('umount', ['-l', full]);
  });

  it('fails a write cleanly: the old content stays, no temp file is left, and apply says what and where', async () => {
    mkdirSync(full);
    const m = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', full], { encoding: 'utf8' });
    expect(m.status, m.stderr).toBe(0);
    const file = join(full, 'state.json');
    writeFileAtomic(file, 'old');
    writeFileSync(join(full, 'filler'), Buffer.alloc(60 * 1024));
    expect(() => writeFileAtomic(file, 'x'.repeat(32 * 1024))).toThrow(/ENOSPC/);
    expect(readFileSync(file, 'utf8')).toBe('old');
    expect(readdirSync(full).sort()).toEqual(['filler', 'state.json']);

    const name = unique('nospace');
    const r = await world.cli('--state-dir', join(full, 'state'), 'apply', world.write(`${name}.yaml`, pod(name)));
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/^podrun: cannot record the applied set in .*\/full\/state\/applied: ENOSPC/m);
    expect(r.err).not.toMatch(/\n\s+at /);
    expect(await podContainers(ns, name)).toEqual([]);
  });
});
