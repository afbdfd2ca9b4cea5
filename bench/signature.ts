/**
 * What a signed set costs the agent: verifying its SSHSIG signature (Node's crypto) against the
 * floor every verifier pays, hashing the body once (SSHSIG signs a SHA-512 of it), and beside
 * what podrun does with every set anyway, parsing and validating it. Signatures made by
 * ssh-keygen, as users make them.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadManifestText } from '../src/manifest/load.js';
import { parseSigners, verifySignature } from '../src/sources/sshsig.js';
import { log, pairwise, podYaml, QUICK, ratio, stat, table, type Stat } from './lib.js';

function timeEach(n: number, fn: () => void): number[] {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    fn();
    out.push(performance.now() - t);
  }
  return out;
}

const us = (s: Stat): string => `${(s.median * 1000).toFixed(0)} µs`;

export async function signatureCost(root: string): Promise<string> {
  const dir = join(root, 'sig');
  mkdirSync(dir, { recursive: true });
  const pods = 50;
  const items = Array.from({ length: pods }, (_, i) =>
    podYaml(`signed-${i}`, 'bench-sig', { containers: 2, hostNetwork: false, probes: true })
      .replace(/^/gm, '  ')
      .replace(/^  apiVersion/, '- apiVersion'),
  );
  const body = Buffer.from(`apiVersion: v1\nkind: PodList\nitems:\n${items.join('')}`);
  const runs = QUICK ? 50 : 500;
  const rows: string[][] = [];
  for (const [type, bits] of [
    ['ed25519', undefined],
    ['ecdsa', '256'],
    ['rsa', '3072'],
  ] as const) {
    const key = join(dir, `key-${type}`);
    execFileSync('ssh-keygen', ['-q', '-t', type, ...(bits ? ['-b', bits] : []), '-N', '', '-f', key]);
    const sig = execFileSync('ssh-keygen', ['-Y', 'sign', '-n', 'podrun', '-f', key], { input: body, stdio: ['pipe', 'pipe', 'ignore'] }).toString();
    const signers = parseSigners(readFileSync(`${key}.pub`, 'utf8'), `${key}.pub`);
    if (!verifySignature(body, sig, signers).ok) throw new Error(`the ${type} signature does not verify`);
    const verify: number[] = [];
    const hash: number[] = [];
    const parse: number[] = [];
    // Interleaved, so each ratio is taken run by run.
    for (let i = 0; i < runs; i++) {
      verify.push(...timeEach(1, () => verifySignature(body, sig, signers)));
      hash.push(...timeEach(1, () => createHash('sha512').update(body).digest()));
      parse.push(...timeEach(1, () => loadManifestText({ file: 'set.yaml', source: 'url:bench', text: body.toString() })));
    }
    const v = pairwise(verify, hash);
    const p = pairwise(verify, parse);
    rows.push([`${type}${bits ? ` ${bits}` : ''}`, us(stat(verify)), us(stat(hash)), ratio(v), `${(p.median * 100).toFixed(1)} %`]);
    log(`signature ${type}: verify ${us(stat(verify))}, ${ratio(v)} × hashing the body, ${(p.median * 100).toFixed(1)} % of parsing it`);
  }
  return `### Verifying a signed set (${(body.length / 1024).toFixed(0)} KiB PodList of ${pods} pods, signed by ssh-keygen)

Per check, medians of ${runs} runs in one process; the floor is hashing the body once with SHA-512,
which any SSHSIG verifier must do; the last column compares it with parsing and validating the same
set, which podrun does with every set it takes, signed or not.

${table(['key', 'verify', 'SHA-512 of the body (floor)', 'verify / floor', 'verify / parse the set'], rows)}`;
}
