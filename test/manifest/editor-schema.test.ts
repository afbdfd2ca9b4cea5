import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import { loadAll } from 'js-yaml';
import { describe, expect, it } from 'vitest';

// The schemas as an editor uses them (yaml-language-server with the modeline the examples carry):
// manifest.schema.json takes a Pod or a PodList, every field has a description, and the
// descriptions are the ones scripts/describe-schema.mjs writes.
const REPO = fileURLToPath(new URL('../..', import.meta.url));
const read = (p: string): object => JSON.parse(readFileSync(join(REPO, p), 'utf8')) as object;

function validator(): (doc: unknown) => boolean {
  const ajv = new Ajv({ allErrors: true, strict: false });
  ajv.addSchema(read('schemas/pod.schema.json'), 'pod.schema.json');
  return ajv.compile(read('schemas/manifest.schema.json'));
}

describe('the schemas for editors', () => {
  it('take every example and fixture, as a Pod or inside a PodList, and refuse what podrun refuses', () => {
    const validate = validator();
    const files = [
      ...readdirSync(join(REPO, 'manifests')).map((f) => join('manifests', f)),
      ...readdirSync(join(REPO, 'test/fixtures/static-pods')).map((f) => join('test/fixtures/static-pods', f)),
    ];
    const pods: unknown[] = [];
    for (const f of files) {
      for (const doc of loadAll(readFileSync(join(REPO, f), 'utf8'))) {
        if (!doc) continue;
        expect(validate(doc), `${f}: ${JSON.stringify(validate)}`).toBe(true);
        pods.push(doc);
      }
    }
    expect(pods.length).toBeGreaterThan(5);
    expect(validate({ apiVersion: 'v1', kind: 'PodList', items: pods })).toBe(true);
    expect(
      validate({
        apiVersion: 'v1',
        kind: 'PodList',
        items: [{ ...(pods[0] as object), spec: { containers: [{ name: 'c', image: 'x', volumeDevices: [] }] } }],
      }),
    ).toBe(false);
    expect(validate({ apiVersion: 'v1', kind: 'Deployment' })).toBe(false);
  });

  it('carry the modeline in every example', () => {
    for (const f of readdirSync(join(REPO, 'manifests')))
      expect(readFileSync(join(REPO, 'manifests', f), 'utf8').split('\n')[0]).toBe('# yaml-language-server: $schema=/opt/podrun/schemas/manifest.schema.json');
    // An absolute path that survives a copy of the file: where the README's service section installs podrun.
    expect(readFileSync(join(REPO, 'README.md'), 'utf8')).toContain('git clone https://github.com/podrun/podrun /opt/podrun');
    expect(readFileSync(join(REPO, 'deploy', 'config.yaml'), 'utf8').split('\n')[0]).toBe(
      '# yaml-language-server: $schema=/opt/podrun/schemas/config.schema.json',
    );
  });

  it('describe every field, with what podrun does where it differs, as the script writes them', () => {
    const schema = read('schemas/pod.schema.json') as {
      properties: Record<string, { description?: string }>;
      $defs: Record<string, { properties?: Record<string, { description?: string }> }>;
    };
    const missing: string[] = [];
    for (const [k, v] of Object.entries(schema.properties)) if (!v.description) missing.push(k);
    for (const [def, s] of Object.entries(schema.$defs))
      for (const [k, v] of Object.entries(s.properties ?? {})) if (!v.description) missing.push(`${def}.${k}`);
    expect(missing).toEqual([]);
    expect(schema.$defs.Container?.properties?.volumeDevices?.description).toMatch(/podrun: refused/);
    const check = spawnSync('node', ['scripts/describe-schema.mjs', '--check'], { cwd: REPO, encoding: 'utf8' });
    expect(check.stderr).toBe('');
    expect(check.status).toBe(0);
  });
});
