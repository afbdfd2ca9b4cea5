import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { Pod as K8sPod } from 'kubernetes-models/v1';
import { loadManifestText } from '../../src/manifest/load.js';

// Manifests stay plain Kubernetes: every pod podrun accepts is also a valid v1 Pod, checked against
// the official OpenAPI schema (kubernetes-models), before and after podrun's defaulting.
const DIRS = ['../../manifests/', '../fixtures/static-pods/'].map((d) => fileURLToPath(new URL(d, import.meta.url)));

describe('accepted pods are valid Kubernetes v1 Pods', () => {
  for (const dir of DIRS) {
    for (const name of readdirSync(dir).filter((n) => /\.(ya?ml|json)$/.test(n))) {
      it(`${dir.split('/').slice(-2).join('/')}${name}`, () => {
        const r = loadManifestText({ file: name, source: `file:${name}`, text: readFileSync(join(dir, name), 'utf8') });
        expect(r.pods.length).toBeGreaterThan(0);
        for (const p of r.pods) {
          expect(() => new K8sPod(p.pod as never).validate()).not.toThrow();
        }
      });
    }
  }

  it('the official schema does reject a broken pod (the check can fail)', () => {
    expect(() =>
      new K8sPod({ metadata: { name: 'x' }, spec: { containers: [{ name: 'c', image: 'i', ports: [{ containerPort: 'eighty' }] }] } } as never).validate(),
    ).toThrow();
  });
});
