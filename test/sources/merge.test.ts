import { describe, expect, it, vi } from 'vitest';
import { rootOrderLocale } from '../../src/base/locale-order.js';
import { mergeOrigins } from '../../src/sources/merge.js';
import { isManifestFileName } from '../../src/manifest/files.js';
import { desired } from '../fixtures/pods.js';

const pod = (name: string, image = 'busybox:1.36') =>
  desired(`apiVersion: v1
kind: Pod
metadata: {name: ${name}}
spec: {containers: [{name: c, image: ${image}}]}
`);

describe('mergeOrigins', () => {
  it('unions origins into one set keyed by namespace/name', () => {
    const r = mergeOrigins(
      [
        { origin: 'file:/a.yaml', pods: [pod('a')] },
        { origin: 'url:http://x', pods: [pod('b')] },
      ],
      new Map(),
    );
    expect([...r.pods.keys()].sort()).toEqual(['default/a', 'default/b']);
    expect(r.conflicts).toEqual([]);
  });

  it('keeps the pod where it already was when a second origin declares it, and reports both', () => {
    const first = { origin: 'file:/z.yaml', pods: [pod('a')] };
    const second = { origin: 'file:/a.yaml', pods: [pod('a', 'busybox:9')] };
    const r = mergeOrigins([first, second], new Map([['default/a', 'file:/z.yaml']]));
    expect(r.pods.get('default/a')?.pod.spec.containers[0]?.image).toBe('busybox:1.36');
    expect(r.conflicts).toEqual([{ key: 'default/a', kept: 'file:/z.yaml', origins: ['file:/z.yaml', 'file:/a.yaml'] }]);
    // Without history, the first origin in name order wins, whatever order the sources came in.
    expect(mergeOrigins([first, second], new Map()).conflicts[0]?.kept).toBe('file:/a.yaml');
    expect(mergeOrigins([second, first], new Map()).conflicts[0]?.kept).toBe('file:/a.yaml');
  });

  // ICU's collator, once used, keeps 2 MB of its data resident in the agent for good.
  it.runIf(rootOrderLocale(process.env))('orders ASCII origins by name without ICU', () => {
    const collate = vi.spyOn(String.prototype, 'localeCompare');
    try {
      const first = { origin: 'file:/etc/Web.yaml', pods: [pod('a')] };
      const second = { origin: 'file:/etc/api.yaml', pods: [pod('a', 'busybox:9')] };
      // Case is a lesser difference than the letter: api before Web.
      expect(mergeOrigins([first, second], new Map()).conflicts[0]?.kept).toBe('file:/etc/api.yaml');
      expect(collate).not.toHaveBeenCalled();
    } finally {
      collate.mockRestore();
    }
  });

  it('takes the same pod declared alike by two origins as one pod, not a conflict', () => {
    const watched = { origin: 'file:/etc/podrun/web.yaml', pods: [pod('a')] };
    const applied = { origin: 'apply:3ca88104d725c73c', pods: [pod('a')] };
    const r = mergeOrigins([watched, applied], new Map([['default/a', 'file:/etc/podrun/web.yaml']]));
    expect(r.conflicts).toEqual([]);
    expect(r.pods.get('default/a')?.pod.spec.containers[0]?.image).toBe('busybox:1.36');
  });

  it('gives a contested pod to the declaration that changed since the last merge: the latest update by name wins', () => {
    const watched = { origin: 'file:/etc/podrun/web.yaml', pods: [pod('a')] };
    const applied = { origin: 'apply:3ca88104d725c73c', pods: [pod('a', 'busybox:9')] };
    const held = new Map([['default/a', 'file:/etc/podrun/web.yaml']]);
    const r = mergeOrigins([watched, applied], held, (origin) => origin === 'apply:3ca88104d725c73c');
    expect(r.pods.get('default/a')?.pod.spec.containers[0]?.image).toBe('busybox:9');
    expect(r.conflicts).toEqual([{ key: 'default/a', kept: 'apply:3ca88104d725c73c', origins: ['apply:3ca88104d725c73c', 'file:/etc/podrun/web.yaml'] }]);
    // Nothing changed: the holder keeps it.
    expect(mergeOrigins([watched, applied], held).pods.get('default/a')?.pod.spec.containers[0]?.image).toBe('busybox:1.36');
    // The holder's own change keeps it where it is.
    expect(mergeOrigins([watched, applied], held, (origin) => origin === 'file:/etc/podrun/web.yaml').conflicts[0]?.kept).toBe('file:/etc/podrun/web.yaml');
  });

  it('moves a pod to the remaining origin when its holder drops it', () => {
    const r = mergeOrigins([{ origin: 'url:http://x', pods: [pod('a')] }], new Map([['default/a', 'file:/gone.yaml']]));
    expect(r.pods.get('default/a')?.origin.source).toBe('file:/test.yaml');
    expect(r.conflicts).toEqual([]);
  });
});

describe('manifest file names', () => {
  it('are YAML or JSON, never dot, swap, backup or probe files', () => {
    const yes = ['web.yaml', 'web.yml', 'pods.json', 'WEB.YAML'];
    const no = ['.web.yaml', '.web.yaml.swp', 'web.yaml~', 'web.yaml.bak', 'web.yaml.tmp', '4913', '.#web.yaml', '#web.yaml#', 'README.md', 'web'];
    expect(yes.filter(isManifestFileName)).toEqual(yes);
    expect(no.filter(isManifestFileName)).toEqual([]);
  });
});
