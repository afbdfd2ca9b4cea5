import { Readable } from 'node:stream';
import type Docker from 'dockerode';
import { describe, expect, it } from 'vitest';
import { attachedExitCode } from '../../src/runtime/docker/exec-exit.js';
import { DockerRequestError, type EngineCalls } from '../../src/runtime/docker/engine.js';

// The engine's answers as plain data: an exec whose inspect fails as Podman's does once it dropped
// the session, and the events it still keeps.
function engine(events: object[]): EngineCalls {
  const docker = { getEvents: async () => Readable.from(events.map((e) => `${JSON.stringify(e)}\n`)) } as unknown as Docker;
  return { docker, endpoint: 'unix:///fake', options: {} as EngineCalls['options'], call: (_what, fn) => fn(), engineName: 'the Docker engine' };
}
const gone = (status: number, message: string): Docker.Exec =>
  ({ inspect: async () => Promise.reject(new DockerRequestError(message, status, { engine: 'the Docker engine' })) }) as unknown as Docker.Exec;
const died = (code: number): object => ({ Action: 'exec_died', Actor: { Attributes: { containerExitCode: String(code) } } });

describe('the exit code of an attached exec whose session is gone', () => {
  it('comes from the engine\'s exec_died event when the session answers 404 or, as Podman 4.3, 500 "no exec session"', async () => {
    expect(await attachedExitCode(engine([died(0)]), gone(404, 'no such exec'), 'c1', 0)).toBe(0);
    expect(await attachedExitCode(engine([died(7), died(3)]), gone(500, 'retrieving exec session x from container c1: no exec session'), 'c1', 0)).toBe(3);
  });

  it("keeps the engine's own error when the events tell nothing", async () => {
    await expect(attachedExitCode(engine([]), gone(500, 'engine on fire'), 'c1', 0)).rejects.toThrow('engine on fire');
    await expect(attachedExitCode(engine([]), gone(404, 'no such exec'), 'c1', 0)).rejects.toThrow('kept no exit code');
  });
});
