import { describe, expect, it } from 'vitest';
import { ImagePresence } from '../../src/runtime/image-presence.js';

/** An engine's image look, counting how often it is asked; `has` is what it holds now. */
function engine(has: Set<string>) {
  const asked: string[] = [];
  let fail = false;
  return {
    asked,
    failNext: () => (fail = true),
    look: async (image: string): Promise<boolean> => {
      asked.push(image);
      await new Promise((r) => setTimeout(r, 5));
      if (fail) {
        fail = false;
        throw new Error('engine unreachable');
      }
      return has.has(image);
    },
  };
}

describe('ImagePresence', () => {
  it('asks the engine once for many starts of one present image, and once per image', async () => {
    const e = engine(new Set(['a', 'b']));
    const p = new ImagePresence(e.look);
    p.lookAhead('a');
    expect(await Promise.all([p.present('a'), p.present('a'), p.present('b')])).toEqual([true, true, true]);
    expect(await p.present('a')).toBe(true);
    expect(e.asked.sort()).toEqual(['a', 'b']);
  });

  it('never keeps an absent image or a failed look: the next start asks again', async () => {
    const has = new Set<string>();
    const e = engine(has);
    const p = new ImagePresence(e.look);
    expect(await p.present('a')).toBe(false);
    has.add('a');
    expect(await p.present('a')).toBe(true);
    e.failNext();
    await expect(p.present('b')).rejects.toThrow('unreachable');
    has.add('b');
    expect(await p.present('b')).toBe(true);
    expect(e.asked).toEqual(['a', 'a', 'b', 'b']);
  });

  it('ensure: does nothing for an image seen present, unless the policy is Always; pulls one that is absent', async () => {
    const has = new Set(['a']);
    const e = engine(has);
    const p = new ImagePresence(e.look);
    const ensured: string[] = [];
    const ensure = (image: string) => async (): Promise<void> => {
      ensured.push(image);
      has.add(image);
    };
    await p.ensure('a', 'IfNotPresent', ensure('a'));
    await p.ensure('a', undefined, ensure('a'));
    await p.ensure('a', 'Never', ensure('a'));
    expect(ensured).toEqual([]);
    await p.ensure('a', 'Always', ensure('a'));
    expect(ensured).toEqual(['a']);
    await p.ensure('b', 'IfNotPresent', ensure('b'));
    expect(ensured).toEqual(['a', 'b']);
    // Had now: the next start of b asks nobody.
    const before = e.asked.length;
    await p.ensure('b', 'IfNotPresent', ensure('b'));
    expect(e.asked.length).toBe(before);
  });

  it('forgets what podrun removed (by id: every image), so the next start asks again', async () => {
    const e = engine(new Set(['a', 'b']));
    const p = new ImagePresence(e.look);
    await p.present('a');
    await p.present('b');
    p.forget();
    await p.present('a');
    await p.present('b');
    expect(e.asked).toEqual(['a', 'b', 'a', 'b']);
  });

  it('create: an image gone behind its back (seen present, create failed) is had again and the create tried once more', async () => {
    const has = new Set(['a']);
    const e = engine(has);
    const p = new ImagePresence(e.look);
    await p.present('a');
    has.delete('a'); // `crictl rmi` while podrun thought it present
    let creates = 0;
    const create = async (): Promise<string> => {
      creates++;
      if (!has.has('a')) throw new Error('image not found');
      return 'cid';
    };
    const pulled: string[] = [];
    const id = await p.create('a', create, async () => {
      pulled.push('a');
      has.add('a');
    });
    expect(id).toBe('cid');
    expect(creates).toBe(2);
    expect(pulled).toEqual(['a']);
  });

  it("create: a failure that is not the image's stands, tried once; so does one whose pod is going", async () => {
    const e = engine(new Set(['a']));
    const p = new ImagePresence(e.look);
    let creates = 0;
    const refused = async (): Promise<string> => {
      creates++;
      throw new Error('refused: bad mount');
    };
    const ensure = async (): Promise<void> => {
      throw new Error('not to be called');
    };
    await expect(p.create('a', refused, ensure)).rejects.toThrow('bad mount');
    expect(creates).toBe(1);
    const gone = new AbortController();
    gone.abort();
    await expect(p.create('b', refused, ensure, gone.signal)).rejects.toThrow('bad mount');
    expect(creates).toBe(2);
  });
});
