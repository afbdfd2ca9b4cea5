import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AgentSuite } from './agent-helpers.js';
import type { EngineBed } from './engine-beds.js';
import { TEST_IMAGE, unique, until } from './helpers.js';

interface Line {
  level: string;
  time: string;
  msg: string;
  pod?: string;
  container?: string;
  probe?: string;
}

function lines(text: string): Line[] {
  return text
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Line);
}

// An operator's log: JSON lines when stderr is not a terminal, with a level and the pod and
// container as fields; a probe failure and a finished deletion each get a line; --log-level cuts.
export function agentLogsSuite(bed: EngineBed): void {
  const suite = new AgentSuite('logs', bed);

  describe(`${bed.tag} the agent log`, () => {
    it('is JSON lines off a terminal, with levels and fields, and logs probe failures and finished deletions', async () => {
      const dir = join(suite.world.dir, 'manifests');
      mkdirSync(dir);
      const name = unique('logged');
      const pod = `${suite.ns}/${name}`;
      writeFileSync(
        join(dir, 'pod.yaml'),
        `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${suite.ns}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: ${TEST_IMAGE}
    command: [sleep, '3600']
    readinessProbe: {exec: {command: ['false']}, periodSeconds: 1}
`,
      );
      // The helper asks for text; the last --log-format wins, and json is what a pipe gets by default.
      const agent = suite.run(['--manifest-dir', dir, '--log-format', 'json']);
      await agent.started();
      const all = (): Line[] => lines(agent.logs());
      const failed = await until('a probe failure line', async () => all().find((l) => l.probe === 'readiness'), 30_000);
      expect(failed).toMatchObject({ level: 'warn', pod, container: 'app', msg: `pod ${pod}: container app readiness probe failed: command exited with 1` });
      expect(Number.isNaN(Date.parse(failed.time))).toBe(false);
      expect(all().find((l) => l.msg === `pod ${pod}: creating`)).toMatchObject({ level: 'info', pod });
      expect(
        agent
          .logs()
          .split('\n')
          .filter((l) => l.trim() && !l.startsWith('{')),
      ).toEqual([]);

      rmSync(join(dir, 'pod.yaml'));
      const deleted = await until('the deletion to be logged as done', async () => all().find((l) => l.msg === `pod ${pod}: deleted`), 30_000);
      expect(deleted).toMatchObject({ level: 'info', pod });
    });

    it('logs nothing below --log-level, and engine events at --v 4', async () => {
      const dir = join(suite.world.dir, 'quiet');
      mkdirSync(dir);
      writeFileSync(join(dir, 'bad.yaml'), 'apiVersion: v1\nkind: Pod\nmetadata: {name: Bad}\n');
      const quiet = suite.run(['--manifest-dir', dir, '--log-format', 'json', '--log-level', 'warn']);
      await until('the invalid file to be logged', async () => lines(quiet.logs()).find((l) => l.level === 'warn' && l.msg.includes('bad.yaml')), 20_000);
      expect(
        lines(quiet.logs())
          .map((l) => l.level)
          .filter((l) => l !== 'warn' && l !== 'error'),
      ).toEqual([]);
      await quiet.stop();

      const name = unique('verbose');
      writeFileSync(
        join(dir, 'bad.yaml'),
        `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}, namespace: ${suite.ns}}\nspec:\n  containers: [{name: c, image: ${TEST_IMAGE}, command: [sleep, '3600']}]\n`,
      );
      const verbose = suite.run(['--manifest-dir', dir, '--log-format', 'json', '--v', '4']);
      const event = await until(
        'a debug line for an engine event',
        async () => lines(verbose.logs()).find((l) => l.level === 'debug' && l.msg.includes('engine event start')),
        30_000,
      );
      expect(event.pod).toBe(`${suite.ns}/${name}`);
    });
  });
}
