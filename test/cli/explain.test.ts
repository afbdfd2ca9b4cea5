import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { explain } from '../../src/cli/explain.js';

const root = JSON.parse(readFileSync(fileURLToPath(new URL('../../schemas/pod.schema.json', import.meta.url)), 'utf8')) as Parameters<typeof explain>[0];

function podrunSays(path: string): string {
  const r = explain(root, path);
  if ('error' in r) throw new Error(r.error);
  const i = r.lines.indexOf('PODRUN:');
  const rest = r.lines.slice(i + 1);
  const end = rest.indexOf('');
  return (end < 0 ? rest : rest.slice(0, end)).map((l) => l.trim()).join(' ');
}

describe('explain says what podrun really does with a field', () => {
  it('does not call unenforced limits honoured', () => {
    expect(podrunSays('pod.spec.containers.resources.limits.ephemeral-storage')).toBe(
      'accepted and not enforced, with a warning: the kubelet enforces it by evicting the pod, and never evicts a static pod.',
    );
    expect(podrunSays('pod.spec.volumes.emptyDir.sizeLimit')).toContain('On disk it is accepted and not enforced');
  });

  it('says ignored fields warn, and names the narrower rules of fields it honours', () => {
    expect(podrunSays('pod.spec.nodeName')).toBe('accepted and ignored (validate and apply print a warning that says why)');
    expect(podrunSays('pod.spec.hostUsers')).toContain('false is refused');
    expect(podrunSays('pod.spec.containers.volumeMounts.subPath')).toContain('a symlink in the volume never leads out of it');
    expect(podrunSays('pod.spec.containers.image')).toBe('honoured');
  });
});
