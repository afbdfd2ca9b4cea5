import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LABEL } from '../../src/runtime/labels.js';
import { docker, podContainers, serveLocal, until } from './helpers.js';

export interface SigningKey {
  pub: string;
  /** Signs a file as a publisher would; writes FILE.sig and returns it. */
  sign: (file: string, namespace?: string) => string;
}

/** An ssh-keygen key pair in `dir`. */
export function makeKeyPair(dir: string, name: string): SigningKey {
  const key = join(dir, name);
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', `${name}@test`, '-f', key]);
  return {
    pub: `${key}.pub`,
    // The form the README gives: the file on stdin, the signature on stdout (no overwrite prompt).
    sign: (file, namespace = 'podrun') => {
      const sig = execFileSync('ssh-keygen', ['-Y', 'sign', '-n', namespace, '-f', key], {
        input: readFileSync(file),
        stdio: ['pipe', 'pipe', 'ignore'],
      }).toString();
      writeFileSync(`${file}.sig`, sig);
      return sig;
    },
  };
}

/** Serves pods.yaml and pods.yaml.sig on 127.0.0.1 (a missing signature is a 404). */
export class SignedServer {
  body = '';
  sig: string | undefined;
  requests = 0;
  private served: Awaited<ReturnType<typeof serveLocal>> | undefined;

  async start(): Promise<void> {
    this.served = await serveLocal((req, res) => {
      this.requests++;
      if (req.url === '/pods.yaml.sig') {
        if (this.sig === undefined) res.writeHead(404).end('not found');
        else res.writeHead(200).end(this.sig);
        return;
      }
      res.writeHead(200, { etag: `"${createHash('sha256').update(this.body).digest('hex').slice(0, 16)}"` }).end(this.body);
    });
  }

  get url(): string {
    return `http://127.0.0.1:${this.served?.port ?? 0}/pods.yaml`;
  }

  async close(): Promise<void> {
    await this.served?.close();
  }
}

/** The id of the pod's container `a` once it runs with env V=`env` (the signed-set tests' pods). */
export async function runningWith(ns: string, name: string, env: string, timeoutMs = 20_000): Promise<string> {
  return until(
    `pod ${name} to run with V=${env}`,
    async () => {
      const c = (await podContainers(ns, name)).find((x) => x.Labels[LABEL.containerName] === 'a' && x.State === 'running');
      if (!c) return undefined;
      const vars = (await docker.getContainer(c.Id).inspect()).Config.Env ?? [];
      return vars.includes(`V=${env}`) ? c.Id : undefined;
    },
    timeoutMs,
  );
}
