import { describe, expect, it } from 'vitest';
import { FULL_GET_EVERY, judgeValidators, planPoll } from '../../src/sources/validators.js';

const DATE = 'Tue, 01 Dec 2026 23:09:13 GMT';
const at = (offsetS: number): string => new Date(Date.parse(DATE) + offsetS * 1000).toUTCString();

describe('which validators can tell two versions apart', () => {
  it('distrusts a Last-Modified less than 60 s before the Date, and an ETag that came with it', () => {
    // python's http.server: Last-Modified of the file written this second, no ETag.
    expect(judgeValidators({ lastModified: at(0), date: DATE })).toMatchObject({ weak: expect.stringContaining('less than 60 s before') });
    // busybox httpd: ETag of hex mtime and size, which a same-second same-length rewrite keeps.
    expect(judgeValidators({ etag: '"6b0f5398-9"', lastModified: at(-1), date: DATE })).toMatchObject({ weak: expect.stringContaining('Last-Modified') });
    expect(judgeValidators({ lastModified: at(-59), date: DATE })).toHaveProperty('weak');
  });

  it('trusts a Last-Modified a minute or more before the Date, with its ETag', () => {
    expect(judgeValidators({ lastModified: at(-60), date: DATE })).toEqual({ trusted: { lastModified: at(-60) } });
    expect(judgeValidators({ etag: '"6b0f5398-9"', lastModified: at(-3600), date: DATE })).toEqual({
      trusted: { etag: '"6b0f5398-9"', lastModified: at(-3600) },
    });
  });

  it('distrusts what it cannot judge: no Date, dates that do not parse, a Last-Modified after the Date', () => {
    expect(judgeValidators({ lastModified: at(-3600) })).toMatchObject({ weak: expect.stringContaining('no Date') });
    expect(judgeValidators({ lastModified: 'yesterday', date: DATE })).toMatchObject({ weak: expect.stringContaining('not an HTTP date') });
    expect(judgeValidators({ lastModified: at(-3600), date: 'now' })).toMatchObject({ weak: expect.stringContaining('not an HTTP date') });
    expect(judgeValidators({ lastModified: at(3600), date: DATE })).toHaveProperty('weak');
  });

  it('uses an ETag that comes alone as it is (strong or weak), and has nothing to use without validators', () => {
    expect(judgeValidators({ etag: '"abc"', date: DATE })).toEqual({ trusted: { etag: '"abc"' } });
    expect(judgeValidators({ etag: 'W/"abc"' })).toEqual({ trusted: { etag: 'W/"abc"' } });
    expect(judgeValidators({ date: DATE })).toMatchObject({ weak: expect.stringContaining('no ETag or Last-Modified') });
  });
});

describe('what a poll sends', () => {
  const settled = { etag: '"abc"', lastModified: at(-3600), date: DATE };

  it('is a plain GET until a 200 was read since the start, whatever the cache held', () => {
    expect(planPoll({ validators: settled, fullSinceStart: false, notModifiedInARow: 0 })).toEqual({ conditional: {}, full: 'the first poll since the start' });
    expect(planPoll({ fullSinceStart: false, notModifiedInARow: 0 }).conditional).toEqual({});
  });

  it('is conditional on trusted validators, and a plain GET every FULL_GET_EVERY-th poll', () => {
    const plans = Array.from({ length: FULL_GET_EVERY * 2 }, (_, n) =>
      planPoll({ validators: settled, fullSinceStart: true, notModifiedInARow: n % FULL_GET_EVERY }),
    );
    expect(plans.filter((p) => p.full).length).toBe(2);
    expect(plans[0]).toEqual({ conditional: { etag: '"abc"', lastModified: at(-3600) } });
    expect(plans[FULL_GET_EVERY - 1]).toEqual({ conditional: {}, full: `one poll in ${FULL_GET_EVERY}` });
  });

  it('is a plain GET on weak validators, saying why', () => {
    const p = planPoll({ validators: { etag: '"6b0f5398-9"', lastModified: DATE, date: DATE }, fullSinceStart: true, notModifiedInARow: 0 });
    expect(p.conditional).toEqual({});
    expect(p.full).toContain('a second write within that second would keep the same validators');
  });
});
