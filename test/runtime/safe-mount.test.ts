import {
  closeSync,
  constants,
  existsSync,
  openSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  realpathSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fdPath, removeTreeNoFollow } from '../../src/runtime/dir-fd.js';
import { MountRefused, openSubPath } from '../../src/runtime/safe-mount.js';
import { prepareHostPath } from '../../src/runtime/volumes.js';

// Plain directories in a temporary dir: the walk that makes subPath directories, and the removal
// of pod directories, judged by what they leave on disk outside the volume.

let root: string;
let vol: string;
let outside: string;

beforeEach(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'podrun-safe-mount-')));
  vol = join(root, 'vol');
  outside = join(root, 'outside');
  mkdirSync(vol);
  mkdirSync(outside);
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

/** Where openSubPath's descriptor leads, closed after. */
function walk(subPath: string): string {
  const fd = openSubPath(vol, subPath, 'volume "v" of container app');
  try {
    return fdPath(fd);
  } finally {
    closeSync(fd);
  }
}

describe('openSubPath', () => {
  it('makes the missing directories of a subPath and opens the last one', () => {
    expect(walk('a/b/c')).toBe(join(vol, 'a/b/c'));
    writeFileSync(join(vol, 'a/file'), 'x');
    expect(walk('a/file')).toBe(join(vol, 'a/file'));
  });

  it('refuses an ancestor that is a symlink out of the volume, and makes nothing through it', () => {
    symlinkSync(outside, join(vol, 'a'));
    expect(() => walk('a/b/c')).toThrow(`volume "v" of container app: a is a symlink to ${outside}, outside the volume`);
    symlinkSync('../outside', join(vol, 'rel'));
    expect(() => walk('rel/b')).toThrow(MountRefused);
    expect(readdirSync(outside)).toEqual([]);
  });

  it('follows a symlink that stays inside, by its text, and makes the rest below its target', () => {
    mkdirSync(join(vol, 'real'));
    symlinkSync('real', join(vol, 'link'));
    symlinkSync(join(vol, 'real'), join(vol, 'abs'));
    expect(walk('link/sub/new')).toBe(join(vol, 'real/sub/new'));
    expect(walk('abs/sub')).toBe(join(vol, 'real/sub'));
  });

  it('never asks the kernel to follow a link: one whose text leaves the volume is refused wherever the kernel would land', () => {
    // /proc/self/root/<vol>/real is the volume to the kernel, but its text is outside the volume.
    mkdirSync(join(vol, 'real'));
    symlinkSync(`/proc/self/root${vol}/real`, join(vol, 'magic'));
    expect(() => walk('magic/x')).toThrow(/magic is a symlink to \/proc\/self\/root.*, outside the volume/);
    expect(existsSync(join(vol, 'real/x'))).toBe(false);
  });

  it('refuses a symlink to nothing instead of making its target, and a loop of links', () => {
    symlinkSync('missing/deeper', join(vol, 'dangling'));
    expect(() => walk('dangling')).toThrow('dangling is a symlink that leads nowhere');
    expect(existsSync(join(vol, 'missing'))).toBe(false);
    symlinkSync('l2', join(vol, 'l1'));
    symlinkSync('l1', join(vol, 'l2'));
    expect(() => walk('l1/x')).toThrow('too many levels of symbolic links');
  });

  it("refuses '..', and a file where a directory is needed", () => {
    expect(() => walk('a/../../outside')).toThrow("subPath may not contain '..'");
    writeFileSync(join(vol, 'f'), 'x');
    expect(() => walk('f/x')).toThrow('f is not a directory');
  });

  it('keeps working in the directory it opened when that directory is moved and a symlink put in its place', () => {
    // The walk holds each parent by descriptor: what it makes below lands in the directory it
    // opened, wherever that has moved, never through the symlink now at the old path.
    mkdirSync(join(vol, 'a/b'), { recursive: true });
    const fd = openSubPath(vol, 'a', 'v');
    renameSync(join(vol, 'a'), join(vol, 'moved'));
    symlinkSync(outside, join(vol, 'a'));
    mkdirSync(`/proc/self/fd/${fd}/made`);
    closeSync(fd);
    expect(existsSync(join(vol, 'moved/made'))).toBe(true);
    expect(readdirSync(outside)).toEqual([]);
  });
});

describe('removeTreeNoFollow', () => {
  it('removes the tree, symlinks as names only, without blocking on a FIFO or touching what links point to', () => {
    writeFileSync(join(outside, 'keep'), 'x');
    mkdirSync(join(vol, 'a/b/c'), { recursive: true });
    writeFileSync(join(vol, 'a/b/c/f'), 'x');
    symlinkSync(outside, join(vol, 'a/out'));
    symlinkSync(join(outside, 'keep'), join(vol, 'a/b/keep'));
    execFileSync('mkfifo', [join(vol, 'a/fifo')]);
    removeTreeNoFollow(vol);
    expect(existsSync(vol)).toBe(false);
    expect(readdirSync(outside)).toEqual(['keep']);
  });

  it('removes a tree deeper than a path can name (a container can make one in its emptyDir)', () => {
    // 5,000 levels: 10,000 bytes of path, past PATH_MAX; rmSync ran out of stack on it.
    let fd = openSync(vol, constants.O_RDONLY | constants.O_DIRECTORY);
    for (let i = 0; i < 5000; i++) {
      mkdirSync(`/proc/self/fd/${fd}/d`);
      writeFileSync(`/proc/self/fd/${fd}/f`, 'x');
      const next = openSync(`/proc/self/fd/${fd}/d`, constants.O_RDONLY | constants.O_DIRECTORY);
      closeSync(fd);
      fd = next;
    }
    closeSync(fd);
    removeTreeNoFollow(vol);
    expect(existsSync(vol)).toBe(false);
  }, 60_000);
});

describe('prepareHostPath under --allowed-host-paths', () => {
  it('makes a missing directory or file below the allowed path', () => {
    prepareHostPath('h', join(vol, 'a/b'), 'DirectoryOrCreate', [vol]);
    prepareHostPath('h', join(vol, 'a/f'), 'FileOrCreate', [vol]);
    expect(readdirSync(join(vol, 'a')).sort()).toEqual(['b', 'f']);
    expect(() => prepareHostPath('h', join(vol, 'missing/f'), 'FileOrCreate', [vol])).toThrow(
      `hostPath volume "h": ${vol}/missing/f cannot be created: its parent directory does not exist`,
    );
  });

  it('creates nothing through a symlink a pod planted under the allowed path, dangling or not', () => {
    // A dangling link passes every check on its path (it does not exist; its parent is allowed).
    symlinkSync(join(outside, 'planted-file'), join(vol, 'f'));
    expect(() => prepareHostPath('h', join(vol, 'f'), 'FileOrCreate', [vol])).toThrow(`hostPath volume "h": cannot create ${vol}/f: it is a symlink`);
    symlinkSync(join(outside, 'planted-dir'), join(vol, 'd'));
    expect(() => prepareHostPath('h', join(vol, 'd'), 'DirectoryOrCreate', [vol])).toThrow(MountRefused);
    expect(() => prepareHostPath('h', join(vol, 'd'), '', [vol])).toThrow(MountRefused);
    expect(readdirSync(outside)).toEqual([]);
  });
});
