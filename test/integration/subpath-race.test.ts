import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, renameSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setImmediate as yieldToLoop, setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { fdPath } from '../../src/runtime/dir-fd.js';
import { MountRefused, openSubPath, removeTree } from '../../src/runtime/safe-mount.js';

// Host-level races against the code that makes subPath directories and removes pod directories,
// with what a container that can write the volume can do: swap a directory inside the volume for
// a symlink to a host directory and back, as fast as it can, while podrun works below it.

// How long each race runs. Against a walk that follows the symlink, a mkdir by path after the walk
// (a microsecond window), or a removal that opens a swapped-in symlink, each race failed within 3 s
// under load, at its first look: 10 s and 5 s keep a margin, where 60 s and 20 s held both cores
// (podrun's loop and the racer) for 80 s of the suite.
const RACE_MS = 10_000;
const REMOVAL_RACE_MS = 5_000;

let root: string | undefined;
let racer: ChildProcess | undefined;

afterEach(() => {
  if (racer?.pid !== undefined && racer.exitCode === null) racer.kill('SIGKILL');
  racer = undefined;
  if (root) rmSync(root, { recursive: true, force: true });
  root = undefined;
});

/**
 * A separate process that flips `<parent>/<name>` between the directory and a symlink to `target`
 * in a tight loop, through holding names in `holdDir` (rename is atomic; a failed step is retried,
 * e.g. while the tree is being removed). It reports how many flips it made, now and then.
 */
function startRacer(parent: string, name: string, holdDir: string, target: string): { flips: () => Promise<number> } {
  const code = `
    const fs = require('fs');
    const [parent, name, hold, target] = process.argv.slice(1);
    const at = parent + '/' + name, held = hold + '/held', link = hold + '/link';
    let flips = 0, told = Date.now();
    for (let i = 0; ; i++) {
      if (i % 1000 === 0 && Date.now() - told > 200) { told = Date.now(); process.stdout.write(flips + '\\n'); }
      try { fs.symlinkSync(target, link); } catch {}
      try { fs.renameSync(at, held); } catch (e) {
        // A holding directory left from a lost step: out of the way.
        if (e.code !== 'ENOENT') try { fs.renameSync(held, hold + '/old' + i); } catch {}
        continue;
      }
      try { fs.renameSync(link, at); flips++; fs.renameSync(at, link); } catch {}
      // podrun may have made the missing directory meanwhile: that one is moved aside.
      try { fs.renameSync(held, at); } catch { try { fs.renameSync(at, hold + '/made' + i); fs.renameSync(held, at); } catch {} }
    }`;
  const child = spawn(process.execPath, ['-e', code, parent, name, holdDir, target], { stdio: ['ignore', 'pipe', 'inherit'] });
  racer = child;
  let last = 0;
  child.stdout?.on('data', (d: Buffer) => {
    const lines = d.toString().trim().split('\n');
    last = Number(lines[lines.length - 1]) || last;
  });
  // The count it wrote last, once it has had time to write again.
  return { flips: () => sleep(500).then(() => last) };
}

describe('a volume writer racing podrun', () => {
  it(
    `makes nothing outside the volume while an ancestor of the subPath flips to a host symlink for ${RACE_MS / 1000} s`,
    { timeout: RACE_MS + 60_000 },
    async () => {
      root = realpathSync(mkdtempSync(join(tmpdir(), 'podrun-race-')));
      const vol = join(root, 'vol');
      const outside = join(root, 'host');
      mkdirSync(join(vol, 'a'), { recursive: true });
      mkdirSync(join(vol, 'hold'));
      mkdirSync(outside);
      const race = startRacer(vol, 'a', join(vol, 'hold'), outside);
      let made = 0;
      let refused = 0;
      let failed = 0;
      const escaped: string[] = [];
      const until = Date.now() + RACE_MS;
      for (let i = 0; Date.now() < until; i++) {
        try {
          const fd = openSubPath(vol, `a/b${i}/c`, 'volume "v" of container app');
          const where = fdPath(fd);
          closeSync(fd);
          made++;
          if (!where.startsWith(`${vol}/`)) escaped.push(where);
          // What was made goes again (wherever the racer has moved it), so the volume stays small.
          else {
            for (const dir of [where, dirname(where)]) {
              try {
                rmdirSync(dir);
              } catch {
                // Moved by the racer meanwhile: left, it is inside the volume.
              }
            }
          }
        } catch (err) {
          // Refusals are right (the symlink was seen, or the directory was mid-flip); what counts
          // is where directories were made.
          if (err instanceof MountRefused) refused++;
          else if ((err as NodeJS.ErrnoException).code !== undefined) failed++;
          else throw err;
        }
        if (i % 200 === 0) {
          expect(readdirSync(outside)).toEqual([]);
          await yieldToLoop();
        }
      }
      const flips = await race.flips();
      console.log(`subPath race: ${made} made, ${refused} refused, ${failed} failed, ${flips} flips to the symlink in ${RACE_MS} ms`);
      expect(escaped).toEqual([]);
      expect(readdirSync(outside)).toEqual([]);
      // The race was run both ways: some walks met the symlink, some got through.
      expect(made).toBeGreaterThan(0);
      expect(refused).toBeGreaterThan(0);
      expect(flips).toBeGreaterThan(1000);
    },
  );

  it('removes a pod directory without deleting anything a swapped-in symlink points to', { timeout: 60_000 }, async () => {
    root = realpathSync(mkdtempSync(join(tmpdir(), 'podrun-race-')));
    const outside = join(root, 'host');
    const hold = join(root, 'hold');
    mkdirSync(outside);
    mkdirSync(hold);
    const canaries = Array.from({ length: 20 }, (_, i) => `canary${i}`);
    for (const c of canaries) writeFileSync(join(outside, c), 'host data');
    const tree = join(root, 'pod');
    const race = startRacer(join(tree, 'vol'), 'a', hold, outside);
    let removed = 0;
    let failed = 0;
    const until = Date.now() + REMOVAL_RACE_MS;
    while (Date.now() < until) {
      // A pod directory with a volume, made aside and moved in whole, then removed under the racer.
      const build = join(root, 'build');
      mkdirSync(join(build, 'vol', 'a', 'b'), { recursive: true });
      for (let i = 0; i < 20; i++) writeFileSync(join(build, 'vol', 'a', 'b', `f${i}`), 'x');
      renameSync(build, tree);
      for (let tries = 0; existsSync(tree); tries++) {
        try {
          await removeTree(tree);
          removed++;
        } catch (err) {
          // A writer that keeps the tree changing may make one removal give up (the pod's
          // directory is removed at the next try); what counts is what it deleted.
          failed++;
          if (tries > 100) throw err;
        }
      }
      expect(canaries.filter((c) => !existsSync(join(outside, c)))).toEqual([]);
    }
    const flips = await race.flips();
    console.log(`removal race: ${removed} trees removed, ${failed} removals gave up, ${flips} flips`);
    expect(removed).toBeGreaterThan(10);
    expect(flips).toBeGreaterThan(1000);
  });
});
