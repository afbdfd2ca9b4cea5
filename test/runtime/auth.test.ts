import { describe, expect, it } from 'vitest';
import { authFor, registryOf } from '../../src/runtime/auth.js';

const b64 = (s: string): string => Buffer.from(s).toString('base64');

describe('registry credentials from ~/.docker/config.json', () => {
  it('finds the registry of an image reference as Docker does', () => {
    expect(registryOf('busybox')).toBe('docker.io');
    expect(registryOf('library/busybox:1.36')).toBe('docker.io');
    expect(registryOf('registry.k8s.io/etcd:3.5.15-0')).toBe('registry.k8s.io');
    expect(registryOf('localhost:5000/app')).toBe('localhost:5000');
    expect(registryOf('localhost/app')).toBe('localhost');
  });

  it('reads auths entries, Docker Hub under its legacy key', () => {
    const config = {
      auths: {
        'https://index.docker.io/v1/': { auth: b64('hubuser:hub:pass') },
        'ghcr.io': { auth: b64('gh:token') },
        'registry.example': { username: 'u', password: 'p' },
      },
    };
    expect(authFor('busybox:1.36', config)).toEqual({ username: 'hubuser', password: 'hub:pass', serveraddress: 'https://index.docker.io/v1/' });
    expect(authFor('ghcr.io/kube-vip/kube-vip:v0.8.0', config)).toEqual({ username: 'gh', password: 'token', serveraddress: 'ghcr.io' });
    expect(authFor('registry.example/x', config)).toEqual({ username: 'u', password: 'p', serveraddress: 'registry.example' });
    expect(authFor('quay.io/x', config)).toBeUndefined();
    expect(authFor('quay.io/x', undefined)).toBeUndefined();
  });
});
