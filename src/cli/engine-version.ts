import { request } from 'node:http';

/**
 * The engine's version from one plain GET /version: `podrun version` should not pay for loading
 * the whole engine client to print two strings.
 */
export function engineVersion(endpoint: string, timeoutMs = 5000): Promise<{ version: string; apiVersion: string }> {
  const target = endpoint.startsWith('unix://') ? { socketPath: endpoint.slice('unix://'.length) } : endpoint.startsWith('/') ? { socketPath: endpoint } : (() => {
    const u = new URL(endpoint.replace(/^tcp:/, 'http:'));
    return { host: u.hostname, port: Number(u.port || 2375) };
  })();
  return new Promise((resolve, reject) => {
    const req = request({ ...target, path: '/version', timeout: timeoutMs }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => {
        try {
          const v = JSON.parse(body) as { Version?: string; ApiVersion?: string };
          resolve({ version: v.Version ?? '?', apiVersion: v.ApiVersion ?? '?' });
        } catch {
          reject(new Error(`unexpected answer from ${endpoint}/version`));
        }
      });
    });
    req.on('timeout', () => req.destroy(new Error(`no answer from ${endpoint} within ${timeoutMs / 1000}s`)));
    req.on('error', (err: NodeJS.ErrnoException) => reject(new Error(err.code ?? err.message)));
    req.end();
  });
}
