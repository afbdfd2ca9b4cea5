import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseSigners, verifySignature } from '../../src/sources/sshsig.js';

// Keys and signatures made by OpenSSH 9.2's ssh-keygen (`ssh-keygen -Y sign -n podrun -f KEY message.yaml`).
const fixture = (name: string): string => readFileSync(new URL(`../fixtures/sshsig/${name}`, import.meta.url), 'utf8');
const message = Buffer.from(fixture('message.yaml'));
const signers = (name: string) => parseSigners(fixture(`${name}.pub`), `${name}.pub`);

describe('SSH signatures (SSHSIG)', () => {
  it.each(['ed25519', 'ecdsa', 'ecdsa384', 'ecdsa521', 'rsa', 'rsa2048'])('verifies a %s signature made by ssh-keygen', (k) => {
    const v = verifySignature(message, fixture(`message.yaml.${k}.sig`), signers(k));
    expect(v.ok).toBe(true);
  });

  it('refuses altered content, a foreign key, another namespace and garbage, saying which', () => {
    const sig = fixture('message.yaml.ed25519.sig');
    const altered = verifySignature(Buffer.concat([message, Buffer.from(' ')]), sig, signers('ed25519'));
    expect(altered).toEqual({ ok: false, reason: expect.stringContaining('does not match the content') });
    const foreign = verifySignature(message, sig, signers('ecdsa'));
    expect(foreign).toEqual({ ok: false, reason: expect.stringMatching(/signed by SHA256:\S+, which is not a trusted key/) });
    const git = verifySignature(message, fixture('message.yaml.ed25519-git.sig'), signers('ed25519'));
    expect(git).toEqual({ ok: false, reason: 'signed for namespace "git", not "podrun" (sign with ssh-keygen -Y sign -n podrun)' });
    expect(verifySignature(message, 'hello', signers('ed25519'))).toEqual({ ok: false, reason: 'not an SSH signature (no BEGIN SSH SIGNATURE block)' });
    const lines = sig.trim().split('\n');
    const truncated = [...lines.slice(0, 3), lines[lines.length - 1]].join('\n');
    expect(verifySignature(message, truncated, signers('ed25519')).ok).toBe(false);
  });

  it('fingerprints keys as ssh-keygen -l does', () => {
    const [k] = signers('ed25519');
    const pub = fixture('ed25519.pub').trim().split(/\s+/);
    expect(k?.fingerprint).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);
    expect(k?.name).toBe(pub[2]);
  });

  it('reads allowed-signers files: principals, namespaces, validity, several keys', () => {
    const ed = fixture('ed25519.pub').trim().split(/\s+/).slice(0, 2).join(' ');
    const rsa = fixture('rsa.pub').trim().split(/\s+/).slice(0, 2).join(' ');
    const file = `# fleet signers\nops@example.com,ci@example.com namespaces="podrun,git" ${ed}\n\nrelease@example.com ${rsa}\n`;
    const s = parseSigners(file, 'allowed_signers');
    expect(s.map((x) => [x.name, x.type, x.from])).toEqual([
      ['ops@example.com,ci@example.com', 'ssh-ed25519', 'allowed_signers:2'],
      ['release@example.com', 'ssh-rsa', 'allowed_signers:4'],
    ]);
    expect(verifySignature(message, fixture('message.yaml.ed25519.sig'), s).ok).toBe(true);
    expect(verifySignature(message, fixture('message.yaml.rsa.sig'), s).ok).toBe(true);

    const gitOnly = parseSigners(`ops@example.com namespaces="git" ${ed}`, 'a');
    expect(verifySignature(message, fixture('message.yaml.ed25519.sig'), gitOnly)).toEqual({
      ok: false,
      reason: expect.stringContaining('may sign only for namespaces git'),
    });
    const expired = parseSigners(`ops@example.com valid-before="20200101Z" ${ed}`, 'a');
    expect(verifySignature(message, fixture('message.yaml.ed25519.sig'), expired)).toEqual({
      ok: false,
      reason: expect.stringContaining('expired at 2020-01-01T00:00:00.000Z'),
    });
    const notYet = parseSigners(`ops@example.com valid-after="20991231235959Z" ${ed}`, 'a');
    expect(verifySignature(message, fixture('message.yaml.ed25519.sig'), notYet).ok).toBe(false);
    const window = parseSigners(`ops@example.com valid-after="20200101",valid-before="20991231" ${ed}`, 'a');
    expect(verifySignature(message, fixture('message.yaml.ed25519.sig'), window).ok).toBe(true);
  });

  it('refuses key files it cannot use, naming the file and line', () => {
    const ed = fixture('ed25519.pub').trim().split(/\s+/).slice(0, 2).join(' ');
    expect(() => parseSigners('', 'keys')).toThrow('keys: no public keys in it');
    expect(() => parseSigners('# nothing\nhello world\n', 'keys')).toThrow(/^keys:2: not an OpenSSH public key/);
    expect(() => parseSigners(`ops cert-authority ${ed}`, 'keys')).toThrow('keys:1: cert-authority lines are not supported');
    expect(() => parseSigners(`ops bogus=1 ${ed}`, 'keys')).toThrow('keys:1: unknown allowed-signers option "bogus"');
    expect(() => parseSigners('ssh-ed25519 AAAAC3NzaC1lZDI1NTE5', 'keys')).toThrow('keys:1: the key is truncated');
    expect(() => parseSigners(`ssh-rsa ${ed.split(' ')[1]}`, 'keys')).toThrow('keys:1: the key says ssh-ed25519, the line says ssh-rsa');
    expect(() => parseSigners(fixture('rsa1024.pub'), 'keys')).toThrow(
      'keys:1: an RSA key of 1024 bits is too weak (podrun requires 2048 bits, as NIST SP 800-131A does)',
    );
    expect(() => parseSigners(fixture('ed25519-cert.pub'), 'keys')).toThrow(
      'keys:1: certificates (ssh-ed25519-cert-v01@openssh.com) are not supported; pin the signing key itself',
    );
    expect(() => parseSigners('sk-ssh-ed25519@openssh.com AAAAGnNrLXNzaC1lZDI1NTE5QG9wZW5zc2guY29tAAAAIA==', 'keys')).toThrow(/security-key types/);
  });
});
