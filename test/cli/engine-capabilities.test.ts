import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { GlobalOptions, Io } from '../../src/cli/context.js';
import { execCommand } from '../../src/cli/exec.js';
import { logsCommand } from '../../src/cli/logs.js';
import { FakeEngine } from '../fakes/fake-engine.js';

// The CLI asks the engine what it can do before it asks for it: on an engine without streaming,
// `exec` and `logs -f` say so and stop, rather than hang or quietly do less.

const held = vi.hoisted(() => ({ engine: undefined as unknown }));
vi.mock('../../src/cli/context.js', async (original) => ({
  ...(await original<typeof import('../../src/cli/context.js')>()),
  makeRuntime: async () => held.engine,
}));

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function setup(): { engine: FakeEngine; g: GlobalOptions; io: Io; err: string[] } {
  const stateDir = mkdtempSync(join(tmpdir(), 'podrun-capabilities-'));
  dirs.push(stateDir);
  const engine = new FakeEngine({ stateDir });
  engine.capabilities = { ...engine.capabilities, streaming: false };
  held.engine = engine;
  const err: string[] = [];
  const io: Io = { out: () => undefined, err: (l) => err.push(l), stdout: new PassThrough(), stderr: new PassThrough(), isTTY: false };
  return { engine, g: { stateDir } as GlobalOptions, io, err };
}

describe('the CLI on an engine without streaming', () => {
  it('exec says the engine cannot attach a command, and asks it for nothing more', async () => {
    const { engine, g, io, err } = setup();
    const attached = vi.spyOn(engine, 'execAttached');
    const lists = vi.spyOn(engine, 'listPods');
    expect(await execCommand('web', ['true'], { namespace: 'default', stdin: false, tty: false }, g, io)).toBe(1);
    expect(err).toEqual(['podrun: the engine at fake:// cannot attach a command to this terminal (no streaming)']);
    expect(attached).not.toHaveBeenCalled();
    expect(lists).not.toHaveBeenCalled();
  });

  it('logs -f says the engine cannot follow a log', async () => {
    const { engine, g, io, err } = setup();
    const writes = vi.spyOn(engine, 'writeLogs');
    const o = { namespace: 'default', follow: true, previous: false, timestamps: false } as Parameters<typeof logsCommand>[1];
    expect(await logsCommand('web', o, g, io)).toBe(1);
    expect(err).toEqual(['podrun: the engine at fake:// cannot follow a log (no streaming); without -f the log so far is shown']);
    expect(writes).not.toHaveBeenCalled();
  });
});
