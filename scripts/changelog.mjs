// CHANGELOG.md from the commit history: for each version package.json has had, newest first, the
// commits made while it was the version (first parent only: a merge's line says what its branch
// brought). Made from git alone, so the same commit always gives the same file.
// Usage: node scripts/changelog.mjs [OUT] (default: standard output).
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';

const git = (...args) => execFileSync('git', args, { encoding: 'utf8', maxBuffer: 256 << 20 });
const commits = git('log', '--first-parent', '--reverse', '--format=%H%x09%cs%x09%s', 'HEAD')
  .split('\n')
  .filter(Boolean)
  .map((line) => {
    const [hash, date, subject] = line.split('\t');
    return { hash, date, subject };
  });

// package.json's version at each commit that touched it; the commits between belong to it.
const versionAt = new Map();
for (const hash of git('log', '--first-parent', '--format=%H', 'HEAD', '--', 'package.json').split('\n').filter(Boolean)) {
  try {
    versionAt.set(hash, JSON.parse(git('show', `${hash}:package.json`)).version ?? '0.0.0');
  } catch {
    versionAt.set(hash, '0.0.0');
  }
}
const sections = [];
let version = '0.0.0';
for (const c of commits) {
  if (versionAt.has(c.hash)) version = versionAt.get(c.hash);
  if (sections.at(-1)?.version !== version) sections.push({ version, commits: [] });
  sections.at(-1).commits.push(c);
}

const lines = [
  '# Changelog',
  '',
  'Made from the commit history by `node scripts/changelog.mjs`; each version lists the commits',
  'made while package.json named it, newest first.',
  '',
];
for (const s of sections.reverse()) {
  const last = s.commits.at(-1);
  lines.push(`## ${s.version} (${last.date}, ${last.hash.slice(0, 12)})`, '');
  for (const c of s.commits.reverse()) lines.push(`- ${c.subject.replace(/([\\`*_[\]<>])/g, '\\$1')} (${c.hash.slice(0, 12)})`);
  lines.push('');
}
const text = lines.join('\n');
if (process.argv[2]) writeFileSync(process.argv[2], text);
else process.stdout.write(text);
