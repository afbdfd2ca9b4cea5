// Records which commit dist/ was built from and when, for `podrun version`. The date is the
// commit's (SOURCE_DATE_EPOCH when set, as reproducible-builds.org asks), never the clock's, so
// two builds of one commit are the same bytes. A tree with uncommitted changes says "-dirty".
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';

const git = (...args) => {
  try {
    return execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return '';
  }
};
const head = git('rev-parse', 'HEAD');
const dirty = head !== '' && git('status', '--porcelain', '--untracked-files=no') !== '';
const epoch = process.env.SOURCE_DATE_EPOCH || git('log', '-1', '--format=%ct');
const info = {
  commit: head === '' ? 'unknown' : `${head}${dirty ? '-dirty' : ''}`,
  date: /^\d+$/.test(epoch) ? new Date(Number(epoch) * 1000).toISOString().replace('.000Z', 'Z') : 'unknown',
};
mkdirSync('dist', { recursive: true });
writeFileSync('dist/build-info.json', `${JSON.stringify(info)}\n`);
