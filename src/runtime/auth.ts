import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

export interface RegistryAuth {
  username: string;
  password: string;
  serveraddress: string;
}

interface DockerConfig {
  auths?: Record<string, { auth?: string; username?: string; password?: string; identitytoken?: string }>;
  credsStore?: string;
  credHelpers?: Record<string, string>;
}

const DOCKER_HUB = 'https://index.docker.io/v1/';

/** The registry host of an image reference, as Docker resolves it. */
export function registryOf(image: string): string {
  const first = image.split('/')[0] ?? '';
  const hasRegistry = image.includes('/') && (first.includes('.') || first.includes(':') || first === 'localhost');
  return hasRegistry ? first : 'docker.io';
}

function readConfig(): DockerConfig | undefined {
  const dir = process.env.DOCKER_CONFIG ?? join(homedir(), '.docker');
  try {
    return JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as DockerConfig;
  } catch {
    return undefined;
  }
}

function fromHelper(helper: string, server: string): RegistryAuth | undefined {
  const r = spawnSync(`docker-credential-${helper}`, ['get'], { input: server, encoding: 'utf8', timeout: 10_000 });
  if (r.status !== 0 || !r.stdout) return undefined;
  try {
    const out = JSON.parse(r.stdout) as { Username?: string; Secret?: string };
    if (!out.Username || out.Secret === undefined) return undefined;
    return { username: out.Username, password: out.Secret, serveraddress: server };
  } catch {
    return undefined;
  }
}

/** Credentials for pulling `image`, from ~/.docker/config.json (auths, credHelpers, credsStore). */
export function authFor(image: string, config: DockerConfig | undefined = readConfig()): RegistryAuth | undefined {
  if (!config) return undefined;
  const registry = registryOf(image);
  const keys = registry === 'docker.io' ? [DOCKER_HUB, 'docker.io', 'index.docker.io', 'https://index.docker.io/v1'] : [registry, `https://${registry}`, `http://${registry}`];
  const server = registry === 'docker.io' ? DOCKER_HUB : registry;
  const helper = config.credHelpers?.[registry] ?? config.credsStore;
  for (const k of keys) {
    const entry = config.auths?.[k];
    if (!entry) continue;
    if (entry.auth) {
      const decoded = Buffer.from(entry.auth, 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      if (colon > 0) return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1), serveraddress: server };
    }
    if (entry.username && entry.password !== undefined) return { username: entry.username, password: entry.password, serveraddress: server };
  }
  return helper ? fromHelper(helper, server) : undefined;
}
