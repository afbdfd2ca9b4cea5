import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  authFor,
  authFromFiles,
  authsFor,
  credentialFiles,
  EveryCredentialRefused,
  pullWithEachCredential,
  registryOf,
  type DockerConfig,
} from '../../src/runtime/auth.js';

const b64 = (s: string): string => Buffer.from(s).toString('base64');

describe('registry credentials as a node finds them', () => {
  it('finds the registry of an image reference as Docker does', () => {
    expect(registryOf('busybox')).toBe('docker.io');
    expect(registryOf('library/busybox:1.36')).toBe('docker.io');
    expect(registryOf('registry.k8s.io/etcd:3.5.15-0')).toBe('registry.k8s.io');
    expect(registryOf('localhost:5000/app')).toBe('localhost:5000');
    expect(registryOf('localhost/app')).toBe('localhost');
  });

  it('reads auths entries, Docker Hub under its legacy key', async () => {
    const config = {
      auths: {
        'https://index.docker.io/v1/': { auth: b64('hubuser:hub:pass') },
        'ghcr.io': { auth: b64('gh:token') },
        'registry.example': { username: 'u', password: 'p' },
      },
    };
    expect(await authFor('busybox:1.36', [config])).toEqual({ username: 'hubuser', password: 'hub:pass', serveraddress: 'https://index.docker.io/v1/' });
    expect(await authFor('ghcr.io/kube-vip/kube-vip:v0.8.0', [config])).toEqual({ username: 'gh', password: 'token', serveraddress: 'ghcr.io' });
    expect(await authFor('registry.example/x', [config])).toEqual({ username: 'u', password: 'p', serveraddress: 'registry.example' });
    expect(await authFor('quay.io/x', [config])).toBeUndefined();
    expect(await authFor('quay.io/x', [undefined])).toBeUndefined();
  });

  it('matches keys as the kubelet keyring: port exact, host globs, the most specific path first', async () => {
    const config = {
      auths: {
        '127.0.0.1:5000': { auth: b64('whole:registry') },
        '127.0.0.1:5000/team': { auth: b64('team:secret') },
        '127.0.0.1:5000/team/app': { auth: b64('app:secret') },
        '*.corp.example': { auth: b64('corp:secret') },
        'https://registry.example:443/v2/x': { identitytoken: 'tok' },
      },
    };
    const user = async (image: string): Promise<string | undefined> => {
      const a = await authFor(image, [config]);
      return a?.username ?? a?.identitytoken;
    };
    expect(await user('127.0.0.1:5000/team/app:1')).toBe('app');
    expect(await user('127.0.0.1:5000/team/app2:1')).toBe('team');
    expect(await user('127.0.0.1:5000/team/other@sha256:abc')).toBe('team');
    expect(await user('127.0.0.1:5000/teamster/x')).toBe('whole');
    expect(await user('127.0.0.1:5001/team/app')).toBeUndefined();
    expect(await user('registry.corp.example/x')).toBe('corp');
    expect(await user('a.registry.corp.example/x')).toBeUndefined();
    expect(await user('registry.example:443/v2/x/y')).toBe('tok');
    expect(await user('registry.example/v2/x/y')).toBeUndefined();
  });

  it('asks a credential helper without blocking, and takes the first file that answers', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'podrun-auth-'));
    try {
      const helper = join(dir, 'docker-credential-podruntest');
      writeFileSync(helper, '#!/bin/sh\nread server\nprintf \'{"ServerURL":"%s","Username":"helped","Secret":"s3cret"}\' "$server"\n');
      chmodSync(helper, 0o755);
      const node = join(dir, 'node.json');
      const user = join(dir, 'user.json');
      writeFileSync(node, JSON.stringify({ credHelpers: { '127.0.0.1:5000': 'podruntest' } }));
      writeFileSync(user, JSON.stringify({ auths: { '127.0.0.1:5000': { auth: b64('user:pw') }, 'other.example': { auth: b64('o:pw') } } }));
      const path = process.env.PATH;
      process.env.PATH = `${dir}:${path ?? ''}`;
      try {
        expect(await authFromFiles('127.0.0.1:5000/a', [node, user])).toEqual({ username: 'helped', password: 's3cret', serveraddress: '127.0.0.1:5000' });
        expect(await authFromFiles('other.example/a', [node, user])).toMatchObject({ username: 'o' });
        expect(await authFromFiles('127.0.0.1:5000/a', [join(dir, 'missing.json'), user])).toMatchObject({ username: 'user' });
      } finally {
        process.env.PATH = path;
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  // The hung helper sleeps 60 s: one not cut off fails the test by its timeout, well before.
  it('a helper that prints garbage is passed over; one that hangs is cut off at 10 s without holding the event loop', { timeout: 45_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'podrun-auth-'));
    const path = process.env.PATH;
    const pidFile = join(dir, 'hang.pid');
    try {
      writeFileSync(join(dir, 'docker-credential-garbage'), '#!/bin/sh\nhead -c 100000 /dev/urandom\n');
      writeFileSync(join(dir, 'docker-credential-hang'), `#!/bin/sh\necho $$ > ${pidFile}\nexec sleep 60\n`);
      chmodSync(join(dir, 'docker-credential-garbage'), 0o755);
      chmodSync(join(dir, 'docker-credential-hang'), 0o755);
      process.env.PATH = `${dir}:${path ?? ''}`;
      const fallback = { auths: { 'r.example': { auth: b64('u:p') } } };
      expect(await authFor('r.example/a', [{ credsStore: 'garbage' }, fallback])).toMatchObject({ username: 'u' });
      const hung = (): boolean => {
        try {
          process.kill(Number(readFileSync(pidFile, 'utf8')), 0);
          return true;
        } catch {
          return false;
        }
      };
      // Ticks of this loop while the helper runs: none if the helper were waited for in-thread.
      let ticksWhileHung = 0;
      const timer = setInterval(() => (ticksWhileHung += hung() ? 1 : 0), 100);
      const t0 = Date.now();
      try {
        expect(await authFor('r.example/a', [{ credsStore: 'hang' }])).toBeUndefined();
      } finally {
        clearInterval(timer);
      }
      // Not before its 10 s (a lower bound no machine's speed can break).
      expect(Date.now() - t0).toBeGreaterThanOrEqual(9500);
      // Cut off, not waited for: the helper is gone 50 s before its sleep would have ended.
      expect(hung()).toBe(false);
      expect(ticksWhileHung).toBeGreaterThan(0);
    } finally {
      process.env.PATH = path;
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("reads the state dir's config.json before the user's, and only the file named when one is", () => {
    expect(credentialFiles({ stateDir: '/var/lib/podrun' })[0]).toBe('/var/lib/podrun/config.json');
    expect(credentialFiles({ stateDir: '/s', file: '/etc/podrun/auth.json' })).toEqual(['/etc/podrun/auth.json']);
  });
});

describe('a pull tried with each credential in turn, as the kubelet does', () => {
  const dir = mkdtempSync(join(tmpdir(), 'podrun-auths-'));
  const file = join(dir, 'config.json');
  const other = join(dir, 'other.json');
  writeFileSync(
    file,
    JSON.stringify({
      auths: { '127.0.0.1:5000/team': { auth: b64('team:wrong') }, '127.0.0.1:5000': { auth: b64('whole:right') }, '127.0.0.1:5001': { auth: b64('x:y') } },
    }),
  );
  // The same credential in a second file is not sent twice.
  writeFileSync(other, JSON.stringify({ auths: { '127.0.0.1:5000': { auth: b64('whole:right') } } }));

  it('offers every matching credential, the most specific first, each once', async () => {
    const seen: string[] = [];
    for await (const a of authsFor('127.0.0.1:5000/team/app:1', [
      JSON.parse(readFileSync(file, 'utf8')) as DockerConfig,
      JSON.parse(readFileSync(other, 'utf8')) as DockerConfig,
    ]))
      seen.push(`${a.username}:${a.password}`);
    expect(seen).toEqual(['team:wrong', 'whole:right']);
  });

  it('moves on when the registry refuses a credential, and stops at the first that works', async () => {
    const tried: string[] = [];
    const result = await pullWithEachCredential(
      '127.0.0.1:5000/team/app:1',
      [file, other],
      async (auth) => {
        tried.push(auth?.username ?? 'none');
        if (auth?.password !== 'right') throw new Error('unauthorized');
        return 'pulled';
      },
      () => true,
    );
    expect(result).toBe('pulled');
    expect(tried).toEqual(['team', 'whole']);
  });

  it('with no credential pulls once without; every refusal is named; an engine that is gone ends it at once', async () => {
    const none: string[] = [];
    await pullWithEachCredential(
      'quay.io/x',
      [file],
      async (auth) => void none.push(auth ? 'auth' : 'none'),
      () => true,
    );
    expect(none).toEqual(['none']);
    const all = pullWithEachCredential(
      '127.0.0.1:5000/team/app:1',
      [file],
      async (auth) => Promise.reject(new Error(`denied ${auth?.username}`)),
      () => true,
    );
    await expect(all).rejects.toBeInstanceOf(EveryCredentialRefused);
    await expect(all).rejects.toThrow('denied team; denied whole');
    let calls = 0;
    const gone = pullWithEachCredential(
      '127.0.0.1:5000/team/app:1',
      [file],
      async () => {
        calls++;
        throw new Error('engine gone');
      },
      () => false,
    );
    await expect(gone).rejects.toThrow('engine gone');
    expect(calls).toBe(1);
  });
});
