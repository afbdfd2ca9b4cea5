import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { AgentSuite } from './agent-helpers.js';
import { podContainers, TEST_IMAGE, unique, until } from './helpers.js';

// podrun as systemd runs it: the unit in deploy/ passes systemd-analyze verify, and with
// NOTIFY_SOCKET set the agent says READY=1 once it has acted on every declared pod, and
// STOPPING=1 when it stops, leaving the pods running.
const suite = new AgentSuite('systemd');
const REPO = fileURLToPath(new URL('../..', import.meta.url));
let listener: ChildProcess | undefined;
afterAll(() => listener?.kill());

/** A unix datagram socket as systemd's notify socket; Node has none, Python does. */
function notifySocket(path: string): { messages: string[] } {
  const got = { messages: [] as string[] };
  listener = spawn('python3', [
    '-u',
    '-c',
    `
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
print("ready", flush=True)
while True:
    print(repr(s.recv(4096).decode()), flush=True)
`,
    path,
  ]);
  listener.stdout?.on('data', (c: Buffer) =>
    got.messages.push(
      ...c
        .toString()
        .split('\n')
        .filter((l) => l.startsWith("'")),
    ),
  );
  return got;
}

describe('the systemd unit', () => {
  it('passes systemd-analyze verify', () => {
    const unit = join(suite.world.dir, 'podrun.service');
    writeFileSync(unit, readFileSync(join(REPO, 'deploy/podrun.service'), 'utf8').replace('/usr/local/bin/podrun', join(REPO, 'bin/podrun')));
    const r = spawnSync('systemd-analyze', ['verify', unit], { encoding: 'utf8' });
    expect(r.error).toBeUndefined();
    // A misspelt setting is only a warning to systemd: no output at all is the bar.
    expect(`${r.stdout}${r.stderr}`.trim()).toBe('');
    expect(r.status).toBe(0);
  });

  it('the sample config file is valid', () => {
    const r = spawnSync(join(REPO, 'bin/podrun'), ['run', '--config', join(REPO, 'deploy/config.yaml'), '--print-config'], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });
});

describe('the agent under Type=notify', () => {
  it('sends READY=1 after acting on every declared pod, STOPPING=1 on stop, and leaves the pods running', async () => {
    const dir = join(suite.world.dir, 'manifests');
    mkdirSync(dir);
    const steady = unique('steady');
    const crashing = unique('crashing');
    for (const [name, cmd] of [
      [steady, "['sleep', '3600']"],
      [crashing, "['sh', '-c', 'exit 1']"],
    ] as const) {
      writeFileSync(
        join(dir, `${name}.yaml`),
        `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${suite.ns}}
spec:
  terminationGracePeriodSeconds: 1
  containers: [{name: c, image: ${TEST_IMAGE}, command: ${cmd}}]
`,
      );
    }
    const config = join(suite.world.dir, 'config.yaml');
    writeFileSync(config, `apiVersion: podrun.io/v1alpha1\nkind: PodrunConfiguration\nstaticPodPath: ${dir}\n`);
    const socket = join(suite.world.dir, 'notify.sock');
    const notify = notifySocket(socket);
    await until('the notify socket', async () => (listener?.stdout && spawnSync('test', ['-S', socket]).status === 0 ? true : undefined), 10_000);
    const agent = suite.run(['--config', config], { NOTIFY_SOCKET: socket });
    const ready = await until('READY=1', async () => notify.messages.find((m) => m.includes('READY=1')), 30_000);
    expect(ready).toBe(`'READY=1\\nSTATUS=converged: 2 pod(s) declared\\nMAINPID=${agent.proc.pid}'`);
    // By then podrun has acted on both: each has its container made (the crashing one may be dead already).
    for (const name of [steady, crashing])
      expect((await podContainers(suite.ns, name)).filter((c) => c.Labels['podrun.io/container-name'] === 'c').length).toBeGreaterThan(0);
    const running = (await podContainers(suite.ns, steady))
      .filter((c) => c.State === 'running')
      .map((c) => c.Id)
      .sort();
    expect(running).toHaveLength(2);

    expect(await agent.stop()).toBe(0);
    await until('STOPPING=1', async () => notify.messages.find((m) => m.includes('STOPPING=1')), 10_000);
    expect(
      (await podContainers(suite.ns, steady))
        .filter((c) => c.State === 'running')
        .map((c) => c.Id)
        .sort(),
    ).toEqual(running);
  });
});
