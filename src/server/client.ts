import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Pod } from '../manifest/types.js';

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

/** `podrun delete`'s question to the agent: which pods, and the grace period given outright (--grace-period, --now, --force). */
export interface DeleteAsk {
  /**
   * `ids`: what the asker saw of each pod on the engine, for an agent whose cache has not heard of
   * it yet; `sandboxIds`: which of them are sandboxes (asked for as such).
   */
  pods: { uid: string; key: string; ids?: string[]; sandboxIds?: string[] }[];
  override?: number;
}

/** The agent's answer, once every pod asked is gone: per pod, an error if it could not be deleted. */
export interface DeleteAnswer {
  pods: { key: string; error?: string }[];
}

/** `podrun pull`'s question to the agent: the images a set needs, each with its pull policy. */
export interface PullAsk {
  images: { image: string; policy: 'Always' | 'IfNotPresent' | 'Never' }[];
}

/** The agent's answer once every pull has ended: per image, an error if it could not be had. */
export interface PullAnswer {
  images: { image: string; error?: string }[];
}

/**
 * `podrun apply`'s question to the agent: the set (its id, from the paths given), each pod as the
 * CLI loaded it with where it was applied from (`file:/abs/path`, `url:…`, `stdin`), and
 * `--prune`. `dryRun`: the plan only, nothing recorded.
 */
export interface ApplyAsk {
  applySet: string;
  pods: { source: string; pod: Pod }[];
  prune: boolean;
  dryRun: boolean;
}

/** One pod's line of an apply's plan, as printed: a `PodPlan` without the pods themselves. */
export interface ShownPlan {
  key: string;
  verdict: 'created' | 'replaced' | 'updated' | 'unchanged' | 'deleted';
  actions: { reason?: string; containersToKill: { name: string; reason: string }[]; containersToStart: { name: string; reason: string }[] };
}

/** The agent's answer: the plan its workers carry out (recorded unless a dry run), or why it refused the set, line by line. */
export interface ApplyAnswer {
  plans?: ShownPlan[];
  refused?: string[];
}

/** The agent's answer to a POST with a JSON body; `status` 0 when no agent answered, `code` then the connection's error code. */
export interface AgentAnswer<T> {
  status: number;
  body?: T;
  text: string;
  code?: string;
}

/** POSTs `body` as JSON to the agent of this state directory and reads its answer. */
export function agentPost<T>(stateDir: string, path: string, body: unknown, timeoutMs: number): Promise<AgentAnswer<T>> {
  const socketPath = agentSocketPath(stateDir);
  const payload = JSON.stringify(body);
  return new Promise((resolve) => {
    const req = process
      .getBuiltinModule('node:http')
      .request(
        { socketPath, path, method: 'POST', timeout: timeoutMs, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let parsed: T | undefined;
            try {
              parsed = res.statusCode === 200 ? (JSON.parse(text) as T) : undefined;
            } catch {
              parsed = undefined;
            }
            resolve({ status: res.statusCode ?? 0, ...(parsed !== undefined ? { body: parsed } : {}), text });
          });
        },
      );
    req.on('timeout', () => req.destroy(new Error(`the agent did not answer within ${Math.round(timeoutMs / 1000)}s`)));
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ status: 0, text: err.message, ...(err.code ? { code: err.code } : {}) }));
    req.end(payload);
  });
}
