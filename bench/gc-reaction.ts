/**
 * Benchmark: garbage collection and restart reaction with 10,000 exited containers.
 *
 * Two private engines run side by side in one run: A holds the garbage (half podrun's, of pods a
 * URL source declared, half foreign), B is clean. On each, a podrun agent supervises one desired
 * pod. Measured, in three phases:
 *   1. the URL answers 500, so podrun's dead pods are protected and stay: restart reaction (kill
 *      the container → replacement started) with the whole pile present, A against B;
 *   2. the URL answers an empty PodList: the time podrun takes to collect its own pile;
 *   3. with the foreign half left: reaction again, and against the raw Docker API floor.
 * Foreign containers are never touched.
 *
 *   npm run bench:gc                 # 10,000 containers
 *   BENCH_GARBAGE=2000 npm run bench:gc
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { Agent } from '../src/agent/agent.js';
import { instanceId, LABEL, MANAGED_BY } from '../src/runtime/labels.js';
import { PrivateEngine } from '../test/integration/engine-helpers.js';
import { PAUSE_IMAGE, TEST_IMAGE } from '../test/integration/helpers.js';

const GARBAGE = Number(process.env.BENCH_GARBAGE ?? 10_000);
const REACTIONS = Number(process.env.BENCH_REACTIONS ?? 7);
/** How many of the pile are foreign (not podrun's); half by default. */
const FOREIGN = Math.min(Number(process.env.BENCH_GARBAGE_FOREIGN ?? Math.floor(GARBAGE / 2)), Math.floor(GARBAGE / 2));
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 6);

const log = (s: string): void => void process.stdout.write(`${new Date().toISOString()} ${s}\n`);

async function mapLimit<T>(n: number, limit: number, fn: (i: number) => Promise<T>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < n) await fn(next++);
    }),
  );
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

/** Exited containers: half labelled as podrun's (pods of 1 sandbox + 4 containers, none desired), half foreign. */
async function makeGarbage(docker: Docker, stateDir: string, n: number, source: string): Promise<void> {
  const instance = instanceId(stateDir);
  const started = Date.now();
  await mapLimit(n, CONCURRENCY, async (i) => {
    // The first FOREIGN of every 2 × FOREIGN are foreign, interleaved; the rest are podrun's.
    const ours = i >= 2 * FOREIGN || i % 2 === 0;
    const k = i < 2 * FOREIGN ? i / 2 : i - FOREIGN;
    const podIndex = Math.floor(k / 5);
    const slot = k % 5;
    const labels: Record<string, string> = ours
      ? {
          [LABEL.managedBy]: MANAGED_BY,
          [LABEL.instance]: instance,
          [LABEL.podUid]: `garbage-${podIndex}`,
          [LABEL.podName]: `garbage-${podIndex}`,
          [LABEL.podNamespace]: 'bench-garbage',
          [LABEL.containerName]: slot === 0 ? 'POD' : `c${slot}`,
          [LABEL.containerType]: slot === 0 ? 'sandbox' : 'app',
          [LABEL.hash]: 'old',
          [LABEL.restartCount]: '0',
          [LABEL.source]: source,
        }
      : { 'com.example.owner': 'someone-else' };
    // No network: nothing to set up, so the pile is made at the engine's best start rate.
    const c = await docker.createContainer({ Image: TEST_IMAGE, Cmd: ['true'], Labels: labels, HostConfig: { NetworkMode: 'none' } });
    await c.start();
    if (i % 500 === 499) log(`  garbage ${i + 1}/${n} (${((i + 1) / ((Date.now() - started) / 1000)).toFixed(1)}/s)`);
  });
}

async function timeList(docker: Docker, runs = 5): Promise<number> {
  const ts: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await docker.listContainers({ all: true, filters: JSON.stringify({ label: [`${LABEL.managedBy}=${MANAGED_BY}`] }) });
    ts.push(performance.now() - t);
  }
  return median(ts);
}

/** Resolves with the time the next `start` of a container matching the labels happens. */
async function nextStart(docker: Docker, labels: string[]): Promise<() => Promise<number>> {
  const stream = (await docker.getEvents({ filters: JSON.stringify({ type: ['container'], event: ['start'], label: labels }) })) as NodeJS.ReadableStream & {
    destroy(): void;
  };
  const p = new Promise<number>((resolve) => stream.once('data', () => resolve(performance.now())));
  return async () => {
    const t = await p;
    stream.destroy();
    return t;
  };
}

/** podrun's reaction: kill the supervised container, wait for its replacement to start. */
async function podrunReaction(docker: Docker, podName: string): Promise<number> {
  const [running] = await docker.listContainers({ filters: JSON.stringify({ label: [`${LABEL.podName}=${podName}`, `${LABEL.containerName}=app`] }) });
  if (!running) throw new Error('no running app container');
  const started = await nextStart(docker, [`${LABEL.podName}=${podName}`, `${LABEL.containerName}=app`]);
  const t0 = performance.now();
  await docker.getContainer(running.Id).kill();
  return (await started()) - t0;
}

/** The floor: the same replacement made straight through the Docker API (create in the pod's sandbox, start). */
async function rawReaction(docker: Docker, sandboxId: string): Promise<number> {
  const first = await docker.createContainer({
    Image: TEST_IMAGE,
    Cmd: ['sleep', '3600'],
    Labels: { 'bench.raw': '1' },
    HostConfig: { NetworkMode: `container:${sandboxId}` },
  });
  await first.start();
  const t0 = performance.now();
  const waited = first.wait();
  await first.kill();
  await waited;
  const next = await docker.createContainer({
    Image: TEST_IMAGE,
    Cmd: ['sleep', '3600'],
    Labels: { 'bench.raw': '1' },
    HostConfig: { NetworkMode: `container:${sandboxId}` },
  });
  await next.start();
  const t = performance.now() - t0;
  await Promise.all([first.remove({ force: true }), next.remove({ force: true })]);
  return t;
}

async function startAgent(engine: PrivateEngine, root: string, name: string, urls: string[] = []): Promise<{ agent: Agent; stateDir: string }> {
  const stateDir = join(root, `${name}-state`);
  const dir = join(root, `${name}-manifests`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'target.yaml'),
    `apiVersion: v1
kind: Pod
metadata: {name: target, namespace: bench}
spec:
  terminationGracePeriodSeconds: 1
  containers: [{name: app, image: ${TEST_IMAGE}, command: [sleep, '3600']}]
`,
  );
  const agent = new Agent({
    runtime: { host: engine.host, stateDir, pauseImage: PAUSE_IMAGE, network: 'none' },
    manifestDirs: [dir],
    manifestUrls: urls,
    urlPeriodMs: 1000,
    // Crash backoff off: the reaction measured is podrun's own path, not a deliberate wait.
    backoff: { initialMs: 0, maxMs: 0, resetMs: 600_000 },
    relistMs: 3_600_000,
    gc: { periodMs: 3_600_000, imageGc: false },
  });
  return { agent, stateDir };
}

/** The URL source of podrun's dead pods: 500 (so they are protected) until told to serve an empty PodList. */
async function garbageSource(): Promise<{ url: string; heal: () => void; close: () => Promise<void> }> {
  let healthy = false;
  const server = createServer((_req, res) => {
    if (!healthy) res.writeHead(500).end('down');
    else res.writeHead(200, { 'content-type': 'application/yaml' }).end('apiVersion: v1\nkind: PodList\nitems: []\n');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/pods.yaml`, heal: () => (healthy = true), close: () => new Promise((r) => server.close(() => r())) };
}

async function reactions(A: Docker, B: Docker, n: number): Promise<{ a: number[]; b: number[] }> {
  const a: number[] = [];
  const b: number[] = [];
  for (let i = 0; i < n; i++) {
    // Interleaved, so drift in the machine's load hits both engines alike.
    a.push(await podrunReaction(A, 'target'));
    b.push(await podrunReaction(B, 'target'));
    await new Promise((r) => setTimeout(r, 300));
  }
  return { a, b };
}

async function main(): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), 'podrun-bench-'));
  const garbageEngine = new PrivateEngine();
  const cleanEngine = new PrivateEngine();
  const source = await garbageSource();
  // An interrupted run must not leave private engines, mounts and bridges behind.
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      void Promise.all([garbageEngine.destroy(), cleanEngine.destroy()]).finally(() => process.exit(130));
    });
  }
  const results: Record<string, unknown> = { garbage: GARBAGE, reactions: REACTIONS, date: new Date().toISOString() };
  try {
    await Promise.all([garbageEngine.start(), cleanEngine.start()]);
    garbageEngine.loadTestImages();
    cleanEngine.loadTestImages();
    const A = garbageEngine.docker;
    const B = cleanEngine.docker;

    const a = await startAgent(garbageEngine, root, 'garbage', [source.url]);
    const b = await startAgent(cleanEngine, root, 'clean');
    log(`creating ${GARBAGE} exited containers on engine A`);
    const tg = performance.now();
    await makeGarbage(A, a.stateDir, GARBAGE, `url:${source.url}`);
    results.garbageCreationSeconds = (performance.now() - tg) / 1000;

    const count = async (label: string): Promise<number> => (await A.listContainers({ all: true, filters: JSON.stringify({ label: [label] }) })).length;
    const foreignBefore = await count('com.example.owner');
    const oursBefore = await count(`${LABEL.podNamespace}=bench-garbage`);
    results.listMsWithAllGarbage = await timeList(A);
    results.listMsClean = await timeList(B);
    log(
      `engine list (label-filtered): ${(results.listMsWithAllGarbage as number).toFixed(1)} ms with ${GARBAGE} exited, ${(results.listMsClean as number).toFixed(1)} ms clean`,
    );

    // Phase 1: the pile's source is down, so podrun's own dead pods stay while the target is restarted.
    const ta = performance.now();
    await a.agent.start();
    results.agentStartMsGarbage = performance.now() - ta;
    const tb = performance.now();
    await b.agent.start();
    results.agentStartMsClean = performance.now() - tb;
    const relistStart = performance.now();
    await a.agent.cache.relist();
    results.relistMsWithAllGarbage = performance.now() - relistStart;
    const waitRunning = async (d: Docker): Promise<string> => {
      for (;;) {
        const [c] = await d.listContainers({ filters: JSON.stringify({ label: [`${LABEL.podName}=target`, `${LABEL.containerType}=sandbox`] }) });
        const [app] = await d.listContainers({ filters: JSON.stringify({ label: [`${LABEL.podName}=target`, `${LABEL.containerName}=app`] }) });
        if (c && app) return c.Id;
        await new Promise((r) => setTimeout(r, 200));
      }
    };
    const sandboxA = await waitRunning(A);
    const sandboxB = await waitRunning(B);
    const pile = await reactions(A, B, REACTIONS);
    results.podrunPileDuringReactions = await count(`${LABEL.podNamespace}=bench-garbage`);
    Object.assign(results, {
      reactionMsOwnPile: median(pile.a),
      reactionMsCleanPhase1: median(pile.b),
      reactionSamplesOwnPile: pile.a.map(Math.round),
      reactionSamplesCleanPhase1: pile.b.map(Math.round),
    });
    log(
      `reaction with podrun's own ${results.podrunPileDuringReactions as number} dead containers present: ${median(pile.a).toFixed(0)} ms vs ${median(pile.b).toFixed(0)} ms clean`,
    );

    // Phase 2: the source answers and declares none of them: collection.
    const tc = performance.now();
    source.heal();
    let swept = false;
    for (;;) {
      const left = await count(`${LABEL.podNamespace}=bench-garbage`);
      if (left === 0) break;
      if (!swept && performance.now() - tc > 5_000) {
        // Whatever the workers have not reached yet, a sweep takes.
        swept = true;
        void a.agent.collect(false);
      }
      await new Promise((r) => setTimeout(r, 250));
    }
    results.gcSeconds = (performance.now() - tc) / 1000;
    results.podrunGarbageBefore = oursBefore;
    results.foreignBefore = foreignBefore;
    results.foreignAfter = await count('com.example.owner');
    log(
      `gc: ${oursBefore} of podrun's dead containers gone in ${(results.gcSeconds as number).toFixed(1)} s; foreign ${foreignBefore} -> ${results.foreignAfter as number}`,
    );

    // Phase 3: the foreign half stays; reaction again, and the raw API floor.
    const t1 = performance.now();
    await a.agent.cache.relist();
    results.relistMsForeignGarbage = performance.now() - t1;
    const t2 = performance.now();
    await b.agent.cache.relist();
    results.relistMsClean = performance.now() - t2;
    results.listMsForeignGarbage = await timeList(A);
    const foreign = await reactions(A, B, REACTIONS);
    const rawA: number[] = [];
    const rawB: number[] = [];
    for (let i = 0; i < REACTIONS; i++) {
      rawA.push(await rawReaction(A, sandboxA));
      rawB.push(await rawReaction(B, sandboxB));
    }
    Object.assign(results, {
      reactionMsGarbage: median(foreign.a),
      reactionMsClean: median(foreign.b),
      rawMsGarbage: median(rawA),
      rawMsClean: median(rawB),
      reactionSamplesGarbage: foreign.a.map(Math.round),
      reactionSamplesClean: foreign.b.map(Math.round),
    });
    log(
      `reaction: podrun ${median(foreign.a).toFixed(0)} ms with foreign garbage vs ${median(foreign.b).toFixed(0)} ms clean; raw API ${median(rawA).toFixed(0)} / ${median(rawB).toFixed(0)} ms`,
    );

    await Promise.all([a.agent.stop(), b.agent.stop()]);
  } finally {
    await source.close();
    await Promise.all([garbageEngine.destroy(), cleanEngine.destroy()]);
  }
  const ratio = (x: unknown, y: unknown): number => Number(((x as number) / (y as number)).toFixed(2));
  results.reactionRatioOwnPileToClean = ratio(results.reactionMsOwnPile, results.reactionMsCleanPhase1);
  results.reactionRatioGarbageToClean = ratio(results.reactionMsGarbage, results.reactionMsClean);
  results.reactionRatioPodrunToRawClean = ratio(results.reactionMsClean, results.rawMsClean);
  process.stdout.write(`\nRESULT ${JSON.stringify(results)}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exitCode = 1;
});
