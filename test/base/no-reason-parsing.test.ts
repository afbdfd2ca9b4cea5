import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

// A reason is a value (src/base/reasons.ts), a message is for people: no code outside the CLI's
// input parsing decides anything by reading a reason or a message back (startsWith, includes,
// replace, split, match, a regex's test or exec). What stays is text podrun is given only as
// text, at the boundary where it arrives, each named here with why.

const ROOT = join(import.meta.dirname, '../../src');

/** file → the lines allowed in it (a fragment of each): another such line in the file is a failure. */
const FOREIGN_TEXT: Record<string, { line: string; why: string }[]> = {
  'runtime/docker/records.ts': [
    { line: '/^Exited \\((-?\\d+)\\)/.exec(status', why: "Docker's list entry has its exit code only in its status text" },
    { line: '/^Up (Less than a second|', why: "and its running instance's uptime (apply's Ready hold, with no inspect)" },
  ],
  'runtime/docker/engine.ts': [{ line: 'e?.message?.replace(/^\\(HTTP code', why: "docker-modem's prefix cut from the engine's words, for people" }],
  'runtime/safe-mount.ts': [{ line: "(err.stderr ?? err.message).split('\\n')", why: "mount(8)'s stderr shortened, for people" }],
  'runtime/docker/images.ts': [
    { line: '/^(Pulling fs layer|Waiting|Downloading', why: "Docker's pull progress is text per layer" },
    { line: "status.startsWith('Downloading')", why: "Docker's pull progress is text per layer" },
  ],
  'runtime/host.ts': [{ line: "readFileSync('/proc/self/status'", why: 'a kernel file' }],
  'base/plain-get.ts': [{ line: '/^HTTP\\/1\\.[01] (\\d{3})(?: (.*))?$/.exec(statusLine)', why: "the engine's HTTP answer, read off the socket" }],
  'runtime/cri/exec-spdy.ts': [{ line: '/^HTTP\\/1\\.1 101 /.test(statusLine)', why: 'the SPDY upgrade is answered in HTTP/1.1 text, read off the socket' }],
  'runtime/cri/exec-stream.ts': [
    { line: '/^\\d{1,3}$/.test(cause.message)', why: "the streaming server's v4 status carries the exit code only as the text of its ExitCode cause" },
  ],
  'runtime/cri/engine.ts': [{ line: '/failed to get sandbox image', why: "containerd names a missing sandbox image only in its error's text" }],
  'runtime/cri/channel.ts': [{ line: '/unknown service runtime\\.v1\\./.test(details)', why: "the peer's UNIMPLEMENTED is only text" }],
};

const PARSE = [
  /\w*(reason|message|problem|detail|stderr|status)\w*\)?\??\.(startsWith|endsWith|includes|replace|replaceAll|match|matchAll|split)\(/i,
  /\/[^/]+\/[gimsuy]*\.(test|exec)\([^)]*(reason|message|problem|detail|status|stderr)/i,
];

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/** Every line of src/ (outside src/cli/) that reads a reason or a message back, and is not foreign text. */
function reasonParsing(root = ROOT): string[] {
  const found: string[] = [];
  for (const file of sources(root)) {
    const rel = relative(root, file);
    if (rel.startsWith('cli/')) continue;
    readFileSync(file, 'utf8')
      .split('\n')
      .forEach((line, i) => {
        if (!PARSE.some((p) => p.test(line))) return;
        if (FOREIGN_TEXT[rel]?.some((a) => line.includes(a.line))) return;
        found.push(`${rel}:${i + 1}: ${line.trim()}`);
      });
  }
  return found;
}

describe('reasons are values', () => {
  it('no code outside the CLI reads a reason or a message back from its text', () => {
    expect(reasonParsing()).toEqual([]);
  });

  it('finds each pattern issue 31 named, should one come back', () => {
    const lines = [
      "if (!problem.startsWith('init container')) {",
      "reason: failed.reason.replace(/, will be .*/, '')",
      "if (k.reason.startsWith('failed ')) log()",
      "waitingOnImage: (name) => r.waiting.get(name)?.reason.includes('Image') ?? false,",
      "const why = before && !before.message.startsWith('Back-off') ? 'x' : '';",
      'return message.startsWith(SIGNATURE_REFUSED) || message.startsWith(SET_REFUSED);',
      "const m = /^Exited \\((-?\\d+)\\)/.exec(c.status ?? '');",
    ];
    for (const line of lines)
      expect(
        PARSE.some((p) => p.test(line)),
        line,
      ).toBe(true);
  });
});
