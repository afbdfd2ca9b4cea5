import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** What the engine's pull takes as X-Registry-Auth. */
export interface RegistryAuth {
  username?: string;
  password?: string;
  identitytoken?: string;
  serveraddress: string;
}

export interface DockerConfig {
  auths?: Record<string, { auth?: string; username?: string; password?: string; identitytoken?: string }>;
  credsStore?: string;
  credHelpers?: Record<string, string>;
}

const DOCKER_HUB = 'https://index.docker.io/v1/';
const HUB_HOSTS = new Set(['docker.io', 'index.docker.io', 'registry-1.docker.io']);

/** The registry host of an image reference, as Docker resolves it. */
export function registryOf(image: string): string {
  const first = image.split('/')[0] ?? '';
  const hasRegistry = image.includes('/') && (first.includes('.') || first.includes(':') || first === 'localhost');
  return hasRegistry ? first : 'docker.io';
}

/** An image reference as a URL-ish target: host (docker.io for Hub), port, and repository path. */
function target(image: string): { host: string; port: string; path: string } {
  const registry = registryOf(image);
  let repo = image.includes('/') && registry !== 'docker.io' ? image.slice(registry.length + 1) : image;
  if (registry === 'docker.io' && !repo.includes('/')) repo = `library/${repo}`;
  if (registry === 'docker.io' && /^(docker\.io|index\.docker\.io)\//.test(repo)) repo = repo.slice(repo.indexOf('/') + 1);
  repo = repo.replace(/@.*$/, '').replace(/:[^/]*$/, '');
  const [host = '', port = ''] = registry.split(':');
  return { host: HUB_HOSTS.has(host) ? 'docker.io' : host, port, path: `/${repo}` };
}

/** A config.json key as the kubelet's keyring parses it: scheme optional, host glob, port, path prefix. */
function keyOf(key: string): { host: string; port: string; path: string } | undefined {
  const bare = key.replace(/^[a-z]+:\/\//i, '');
  const slash = bare.indexOf('/');
  const hostPort = slash < 0 ? bare : bare.slice(0, slash);
  let path = slash < 0 ? '' : bare.slice(slash).replace(/\/+$/, '');
  const [host = '', port = ''] = hostPort.split(':');
  if (!host) return undefined;
  const hub = HUB_HOSTS.has(host);
  // Docker Hub's legacy key "https://index.docker.io/v1/" names the whole registry, not a path.
  if (hub && path === '/v1') path = '';
  return { host: hub ? 'docker.io' : host.toLowerCase(), port, path };
}

/** Each dot-separated part of the host may be a glob (`*.example.com`), as the kubelet's URLsMatch. */
function hostMatches(glob: string, host: string): boolean {
  const g = glob.split('.');
  const h = host.toLowerCase().split('.');
  if (g.length !== h.length) return false;
  return g.every((part, i) => new RegExp(`^${part.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^.]*')}$`).test(h[i] ?? ''));
}

function matches(key: string, image: string): boolean {
  const k = keyOf(key);
  if (!k) return false;
  const t = target(image);
  if (!hostMatches(k.host, t.host) || k.port !== t.port) return false;
  return !k.path || t.path === k.path || t.path.startsWith(`${k.path}/`);
}

function fromEntry(entry: NonNullable<DockerConfig['auths']>[string], server: string): RegistryAuth | undefined {
  if (entry.identitytoken) return { identitytoken: entry.identitytoken, serveraddress: server };
  if (entry.auth) {
    const decoded = Buffer.from(entry.auth, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon > 0) return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1), serveraddress: server };
  }
  if (entry.username && entry.password !== undefined) return { username: entry.username, password: entry.password, serveraddress: server };
  return undefined;
}

/** The config.json files a node's pulls read, in order: the first that holds a match wins. */
export function credentialFiles(o: { file?: string; stateDir?: string }): string[] {
  if (o.file) return [o.file];
  const user = join(process.env.DOCKER_CONFIG ?? join(homedir(), '.docker'), 'config.json');
  // The kubelet reads <root-dir>/config.json before the user's; podrun's root is its state dir.
  return o.stateDir ? [join(o.stateDir, 'config.json'), user] : [user];
}

function readConfig(file: string): DockerConfig | undefined {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as DockerConfig;
  } catch {
    return undefined;
  }
}

/** Asks `docker-credential-<helper> get` (bounded: a hung helper must not hold a pull for ever). */
async function fromHelper(helper: string, server: string): Promise<RegistryAuth | undefined> {
  // Loaded here, not at import: every command that names the credential files would pay for it.
  const { execFile } = await import('node:child_process');
  return new Promise((resolve) => {
    const child = execFile(`docker-credential-${helper}`, ['get'], { timeout: 10_000, maxBuffer: 64 * 1024 }, (err, stdout) => {
      if (err || !stdout) return resolve(undefined);
      try {
        const out = JSON.parse(stdout) as { Username?: string; Secret?: string };
        if (!out.Username || out.Secret === undefined) return resolve(undefined);
        // A helper answers "<token>" as the user name for an identity token (docker/cli's convention).
        resolve(
          out.Username === '<token>'
            ? { identitytoken: out.Secret, serveraddress: server }
            : { username: out.Username, password: out.Secret, serveraddress: server },
        );
      } catch {
        resolve(undefined);
      }
    });
    // A helper that exits without reading its input must not take the process down with EPIPE.
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(server);
  });
}

/**
 * Every credential for pulling `image`, in the order the kubelet's keyring offers them: every
 * `auths` key that matches (host globs, port, repository path prefix: `registry:5000/team` serves
 * `registry:5000/team/app` only), the most specific first (reverse lexical order, as the keyring
 * sorts its index); then the registry's credential helper, then the default store; file by file.
 * A generator, so a helper is asked only when the credentials before it were refused.
 */
export async function* authsFor(image: string, configs: (DockerConfig | undefined)[]): AsyncGenerator<RegistryAuth> {
  const registry = registryOf(image);
  const server = registry === 'docker.io' ? DOCKER_HUB : registry;
  const given = new Set<string>();
  const fresh = (a: RegistryAuth | undefined): a is RegistryAuth => {
    if (!a) return false;
    const key = JSON.stringify([a.username, a.password, a.identitytoken]);
    if (given.has(key)) return false;
    given.add(key);
    return true;
  };
  for (const config of configs) {
    if (!config) continue;
    const keys = Object.keys(config.auths ?? {})
      .filter((k) => matches(k, image))
      .sort()
      .reverse();
    for (const k of keys) {
      const found = fromEntry(config.auths?.[k] ?? {}, server);
      if (fresh(found)) yield found;
    }
    const helper = config.credHelpers?.[registry] ?? config.credsStore;
    if (helper) {
      const found = await fromHelper(helper, server);
      if (fresh(found)) yield found;
    }
  }
}

/** The first credential for `image` (what a single request, e.g. a registry's HEAD, sends). */
export async function authFor(image: string, configs: (DockerConfig | undefined)[]): Promise<RegistryAuth | undefined> {
  for await (const auth of authsFor(image, configs)) return auth;
  return undefined;
}

/** Reads the files at each pull, so a credential written while the agent runs is used at the next one. */
export function authFromFiles(image: string, files: readonly string[]): Promise<RegistryAuth | undefined> {
  return authFor(image, files.map(readConfig));
}

/** Every failure of a pull tried with each credential in turn. */
export class EveryCredentialRefused extends Error {
  constructor(readonly failures: readonly unknown[]) {
    super(failures.map((f) => (f instanceof Error ? f.message : String(f))).join('; '));
  }
}

/**
 * Pulls with each credential the node has for `image` in turn, until one works, as the kubelet's
 * PullImage does (kuberuntime_image.go: keyring.Lookup, then each credential, errors aggregated);
 * with none, once without. Only a failure `nextOn` accepts (the registry's refusal) moves on to
 * the next credential: an engine that is gone fails the pull at once.
 */
export async function pullWithEachCredential<T>(
  image: string,
  files: readonly string[],
  attempt: (auth: RegistryAuth | undefined) => Promise<T>,
  nextOn: (err: unknown) => boolean,
): Promise<T> {
  const failures: unknown[] = [];
  for await (const auth of authsFor(image, files.map(readConfig))) {
    try {
      return await attempt(auth);
    } catch (err) {
      if (!nextOn(err)) throw err;
      failures.push(err);
    }
  }
  if (!failures.length) return attempt(undefined);
  if (failures.length === 1) throw failures[0];
  throw new EveryCredentialRefused(failures);
}
