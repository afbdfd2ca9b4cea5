/**
 * The pull of a multi-layer image of a few hundred MB from a real registry on loopback (Debian's
 * docker-registry), `podrun pull -f` (a whole process: start-up, manifests, credentials, progress)
 * against `docker pull` of the same reference, alternated run by run, the image removed between
 * runs so each pulls every layer.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildLayeredImage, LocalRegistry, untag } from '../test/integration/registry-helpers.js';
import { docker, log, must, ms, onPath, pairwise, PAUSE_IMAGE, QUICK, ratio, stat, table, BIN } from './lib.js';

const LAYERS = Number(process.env.BENCH_PULL_LAYERS ?? (QUICK ? 3 : 6));
const MB = Number(process.env.BENCH_PULL_MB ?? (QUICK ? 20 : 50));
const RUNS = Number(process.env.BENCH_PULL_RUNS ?? (QUICK ? 3 : 5));

async function removeImage(ref: string): Promise<void> {
  await docker
    .getImage(ref)
    .remove({ force: true })
    .catch(() => undefined);
}

export async function pullCost(root: string): Promise<string> {
  if (!onPath('docker-registry')) throw new Error('docker-registry is not installed (scripts/setup installs it)');
  const local = `podrun-bench/layered:${LAYERS}x${MB}`;
  const registry = await new LocalRegistry().start();
  try {
    await buildLayeredImage(local, LAYERS, MB);
    const ref = await registry.push(local, 'bench/layered:1');
    // The layers must leave the engine too, or every pull finds them "Already exists".
    await removeImage(local);
    await removeImage(ref);
    const dir = join(root, 'pull');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'pod.yaml'), `apiVersion: v1\nkind: Pod\nmetadata: {name: pulled, namespace: bench}\nspec:\n  containers:\n  - {name: app, image: ${ref}}\n`);
    const stateDir = join(root, 'pull-state');
    const ours: number[] = [];
    const floor: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      ours.push((await must(BIN, ['--state-dir', stateDir, '--pause-image', PAUSE_IMAGE, 'pull', '-f', dir])).ms);
      await removeImage(ref);
      floor.push((await must('docker', ['pull', '-q', ref])).ms);
      await removeImage(ref);
    }
    const r = pairwise(ours, floor);
    log(`pull ${LAYERS}×${MB} MB: podrun ${ms(stat(ours))} vs docker pull ${ms(stat(floor))}, ratio ${ratio(r)}`);
    return `### Pulling a ${LAYERS * MB} MB image of ${LAYERS} layers from a local registry

A real registry (docker-registry, plain HTTP on loopback) serves an image of ${LAYERS} layers of
${MB} MB of random bytes over the test busybox. Each run removes the image first, so every layer is
downloaded and extracted. \`podrun pull -f\` is a whole process (start-up, reading the manifest,
credentials, progress); the floor is \`docker pull -q\` of the same reference. ${RUNS} runs each,
alternated; the ratio is taken run by run (target ≤ 1.05).

${table(['', 'podrun pull -f', 'docker pull', 'podrun / docker'], [[`${LAYERS * MB} MB, ${LAYERS} layers`, ms(stat(ours)), ms(stat(floor)), `**${ratio(r)}**`]])}`;
  } finally {
    await registry.close();
    await untag(local);
  }
}
