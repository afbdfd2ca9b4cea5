import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Unix sockets that answer each request as a test says, for code that reads an engine over a bare
 * socket (`podrun version`, the runtime's plain reads). `close` ends them all (for afterEach).
 */
export function answeringEndpoints(prefix: string): { endpoint(answer: (s: Socket, request: string) => void): Promise<string>; close(): void } {
  const dirs: string[] = [];
  const servers: Server[] = [];
  return {
    async endpoint(answer) {
      const dir = mkdtempSync(join(tmpdir(), prefix));
      dirs.push(dir);
      const path = join(dir, 'engine.sock');
      const server = createServer((s) => {
        let request = '';
        s.on('data', (c: Buffer) => {
          request += c.toString();
          if (request.includes('\r\n\r\n')) answer(s, request);
        });
        s.on('error', () => undefined);
      });
      servers.push(server);
      await new Promise<void>((r) => server.listen(path, r));
      return `unix://${path}`;
    },
    close() {
      for (const s of servers.splice(0)) s.close();
      for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
    },
  };
}
