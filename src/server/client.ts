import { existsSync } from 'node:fs';
import { join } from 'node:path';

/** The agent's socket in its state directory. Here rather than in server.ts, so that the commands that ask the agent load neither the server nor Node's HTTP stack when no agent runs. */
export function agentSocketPath(stateDir: string): string {
  return join(stateDir, 'podrun.sock');
}

/** GETs a path from the agent of this state directory; undefined when no agent answers. */
export function agentGet<T>(stateDir: string, path: string, timeoutMs = 5000): Promise<T | undefined> {
  return agentRequest<T>(stateDir, 'GET', path, timeoutMs);
}

export function agentRequest<T>(stateDir: string, method: 'GET' | 'POST', path: string, timeoutMs = 5000): Promise<T | undefined> {
  const socketPath = agentSocketPath(stateDir);
  if (!existsSync(socketPath)) return Promise.resolve(undefined);
  return new Promise((resolve) => {
    const req = process.getBuiltinModule('node:http').request({ socketPath, path, method, timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        if (res.statusCode !== 200) return resolve(undefined);
        try {
          resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')) as T);
        } catch {
          resolve(undefined);
        }
      });
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(undefined));
    req.end();
  });
}
