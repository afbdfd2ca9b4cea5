import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN } from './helpers.js';

// What a command loads is paid at every start (issue 33): `validate` reads no pod uid, so it must
// not load node:crypto, which only uids (and apply's set id) hash with. No engine is asked.
const dir = mkdtempSync(join(tmpdir(), 'podrun-validate-modules-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('validate loads only what it uses', () => {
  it('never loads node:crypto for pods that name no uid', () => {
    const preload = join(dir, 'loaded.cjs');
    writeFileSync(preload, "process.on('exit', () => process.stderr.write(`\\nloaded: ${process.moduleLoadList.filter((m) => / crypto$/.test(m)).join(',')}\\n`));\n");
    const pod = join(dir, 'p.yaml');
    writeFileSync(pod, 'apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: modules}\nspec:\n  containers: [{name: c, image: busybox:1}]\n');
    const r = spawnSync(process.execPath, ['--require', preload, BIN, '--state-dir', join(dir, 'state'), 'validate', pod], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain('valid');
    expect(r.stderr).toMatch(/\nloaded: \n/);
  });
});
