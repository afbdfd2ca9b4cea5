import type Docker from 'dockerode';
import { EngineRequestError } from '../engine-errors.js';
import type { EngineCalls } from './engine.js';

// Podman ends every exec session of a container that stops: a `podrun exec -- kill 1` (or a
// command the container reacts to by exiting) finishes, and its session is gone before anyone
// asks for its exit code. Podman's engine events still tell it (`exec_died`, with the exec's exit
// code as containerExitCode); Docker keeps the session, so this is never reached there.

/** The exit code of an attached exec whose output has ended: the session's, else the engine's last exec_died of the container since `sinceSec`. */
export async function attachedExitCode(e: EngineCalls, exec: Docker.Exec, containerId: string, sinceSec: number): Promise<number> {
  try {
    const info = await e.call('exec inspect', () => exec.inspect());
    return info.ExitCode ?? 1;
  } catch (err) {
    // Podman 4.3 answers a session it dropped with a 500 ("no exec session"), not a 404: any
    // refusal by the engine sends podrun to the events, and the engine's own error stands when
    // they tell nothing. (An engine that cannot be reached is another error class, and goes up.)
    if (!(err instanceof EngineRequestError)) throw err;
    const code = await lastExecDied(e, containerId, sinceSec).catch(() => undefined);
    if (code !== undefined) return code;
    if (err.kind !== 'NotFound') throw err;
    throw new EngineRequestError(
      `the command's exec session ended with its container ${containerId.slice(0, 12)}, and the engine kept no exit code for it`,
      'NotFound',
      { engine: e.engineName },
    );
  }
}

async function lastExecDied(e: EngineCalls, containerId: string, sinceSec: number): Promise<number | undefined> {
  const until = Math.ceil(Date.now() / 1000) + 1;
  const filters = JSON.stringify({ container: [containerId], event: ['exec_died'] });
  const stream = (await e.call('exec events', () => e.docker.getEvents({ since: sinceSec, until, filters }))) as NodeJS.ReadableStream;
  let text = '';
  for await (const chunk of stream) text += String(chunk);
  let code: number | undefined;
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    const ev = JSON.parse(line) as { Actor?: { Attributes?: Record<string, string> } };
    const exit = Number(ev.Actor?.Attributes?.containerExitCode);
    if (Number.isInteger(exit)) code = exit;
  }
  return code;
}
