/**
 * The pull of a multi-layer image of a few hundred MB from a real registry on loopback (Debian's
 * docker-registry), `podrun pull -f` (a whole process: start-up, manifests, credentials, progress)
 * against `docker pull` of the same reference, alternated run by run, the image removed between
 * runs so each pulls every layer.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildLayeredImage, LocalRegistry, untag } from '../test/integration/registry-helpers.js';
import { BIN, docker, log, must, ms, onPath, pairwise, PAUSE_IMAGE, QUICK, ratio, stat, table } from './lib.js';

// Two sizes: podrun's fixed cost (a Node process, the manifests read and checked) shows as the
// difference between the two commands; the part that grows with the image is the engine's in both.
const SIZES: number[] = (process.env.BENCH_PULL_LAYERS ?? (QUICK ? '3' : '6,12')).split(',').map(Number);
const MB = Number(process.env.BENCH_PULL_MB ?? (QUICK ? 20 : 50));
const RUNS = Number(process.env.BENCH_PULL_RUNS ?? (QUICK ? 3 : 5));

async function removeImage(ref: string): Promise<void> {
  await docker
    .getImage(ref)
    .remove({ force: true })
    .catch(() => undefined);
}

interface Row {
  layers: number;
  ours: number[];
  floor: number[];
}

async function measure(root: string, registry: LocalRegistry, layers: number): Promise<Row> {
  const local = `podrun-bench/layered:${layers}x${MB}`;
  try {
    await buildLayeredImage(local, layers, MB);
    const ref = await registry.push(local, `bench/layered:${layers}`);
    // The layers must leave the engine too, or every pull finds them "Already exists".
    await removeImage(local);
    await removeImage(ref);
    const dir = join(root, `pull-${layers}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, 'pod.yaml'),
      `apiVersion: v1\nkind: Pod\nmetadata: {name: pulled, namespace: bench}\nspec:\n  containers:\n  - {name: app, image: ${ref}}\n`,
    );
    const stateDir = join(root, 'pull-state');
    const ours: number[] = [];
    const floor: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      ours.push((await must(BIN, ['--state-dir', stateDir, '--pause-image', PAUSE_IMAGE, 'pull', '-f', dir])).ms);
      await removeImage(ref);
      floor.push((await must('docker', ['pull', '-q', ref])).ms);
      await removeImage(ref);
    }
    log(`pull ${layers}×${MB} MB: podrun ${ms(stat(ours))} vs docker pull ${ms(stat(floor))}, ratio ${ratio(pairwise(ours, floor))}`);
    return { layers, ours, floor };
  } finally {
    await untag(local);
  }
}

export async function pullCost(root: string): Promise<string> {
  if (!onPath('docker-registry')) throw new Error('docker-registry is not installed (scripts/setup installs it)');
  const registry = await new LocalRegistry().start();
  const rows: Row[] = [];
  try {
    for (const layers of SIZES) rows.push(await measure(root, registry, layers));
  } finally {
    await registry.close();
  }
  const fixed = rows.map((r) => stat(r.ours).median - stat(r.floor).median);
  return `### Pulling a multi-layer image from a local registry

A real registry (docker-registry, plain HTTP on loopback) serves images of ${MB} MB layers of
random bytes over the test busybox. Each run removes the image first, so every layer is
downloaded and extracted. \`podrun pull -f\` is a whole process (start-up, reading and checking the
manifest, credentials, progress); the floor is \`docker pull -q\` of the same reference. ${RUNS} runs
each, alternated; ratios are taken run by run (target ≤ 1.05).

${table(
  ['image', 'podrun pull -f', 'docker pull', 'podrun / docker'],
  rows.map((r) => [`${r.layers * MB} MB, ${r.layers} layers`, ms(stat(r.ours)), ms(stat(r.floor)), `**${ratio(pairwise(r.ours, r.floor))}**`]),
)}

podrun's time over docker's is about the same at every size (${fixed.map((f) => `${Math.round(f)} ms`).join(', ')}): the cost of
starting a Node process that reads and checks the manifests, against Go's client; the pull itself
is the engine's, byte for byte the same.`;
}
