import { agentPost, type PullAnswer, type PullAsk } from '../server/client.js';
import { becomeActor } from './actor.js';
import { allContainers, type DesiredPod } from '../manifest/types.js';
import { EXIT, makeRuntime, type GlobalOptions, type Io } from './context.js';
import { table } from './print.js';
import { loadManifestArgs } from './validate.js';

/** One image a set of pods needs: the pull policy its containers ask for, and who asks. */
export interface NeededImage {
  image: string;
  policy: string;
  usedBy: string[];
}

/** The images a set of pods needs, the sandbox image first (every pod needs it), in a stable order. */
export function neededImages(pods: DesiredPod[], pauseImage: string): NeededImage[] {
  const byImage = new Map<string, NeededImage>([[pauseImage, { image: pauseImage, policy: 'IfNotPresent', usedBy: ['(pod sandbox)'] }]]);
  for (const p of pods) {
    for (const c of allContainers(p.pod)) {
      const e = byImage.get(c.image) ?? { image: c.image, policy: c.imagePullPolicy ?? 'IfNotPresent', usedBy: [] };
      // Different policies for one image: the strictest wins the column (Always > IfNotPresent > Never).
      const rank = (x: string): number => ['Never', 'IfNotPresent', 'Always'].indexOf(x);
      if (rank(c.imagePullPolicy ?? 'IfNotPresent') > rank(e.policy)) e.policy = c.imagePullPolicy ?? 'IfNotPresent';
      e.usedBy.push(`${p.key}/${c.name}`);
      byImage.set(c.image, e);
    }
  }
  return [...byImage.values()];
}

/** `podrun images -f DIR`: what a set needs, and whether the engine has it (the appliance's bake list). */
export async function imagesCommand(paths: string[], o: { output?: string }, g: GlobalOptions, io: Io): Promise<number> {
  const pods = (await loadManifestArgs(paths, io, g.policy))?.pods;
  if (!pods) return EXIT.failed;
  const needed = neededImages(pods, g.pauseImage);
  if (o.output === 'name') {
    for (const n of needed) io.out(n.image);
    return EXIT.ok;
  }
  const rt = await makeRuntime(g, io);
  const present = await Promise.all(needed.map((n) => rt.hasImage(n.image)));
  io.out(
    table([['IMAGE', 'PULL POLICY', 'PRESENT', 'USED BY'], ...needed.map((n, i) => [n.image, n.policy, present[i] ? 'yes' : 'no', n.usedBy.join(',')])]).join(
      '\n',
    ),
  );
  return EXIT.ok;
}

/**
 * `podrun pull -f DIR`: has every image a set needs, as its pods would at their first start
 * (IfNotPresent pulls what is missing, Always pulls, Never only checks: the node must have it
 * loaded), with the node's credentials and progress. Exits 1 if any is missing afterwards.
 */
export async function pullCommand(paths: string[], g: GlobalOptions, io: Io): Promise<number> {
  // The engine client loads while the manifests are read: a bake step's time is mostly the pull.
  const runtime = makeRuntime(g, io);
  // Not awaited when the agent pulls: an engine this command cannot reach is then no failure of it.
  runtime.catch(() => undefined);
  const pods = (await loadManifestArgs(paths, io, g.policy))?.pods;
  if (!pods) return EXIT.failed;
  const needed = neededImages(pods, g.pauseImage).map((n) => ({ image: n.image, policy: n.policy as PullAsk['images'][number]['policy'] }));
  // One actor per state directory: with an agent, it pulls (with its own credentials); without, this command, holding the lock.
  const actor = await becomeActor(g.stateDir, 'pull', io);
  if (!actor) return EXIT.failed;
  let failures: string[];
  try {
    if (actor.kind === 'agent') {
      const r = await agentPost<PullAnswer>(g.stateDir, '/images/pull', { images: needed } satisfies PullAsk, PULL_TIMEOUT_MS);
      if (!r.body) {
        io.err(`podrun: the agent supervising ${g.stateDir} did not pull: ${r.text.trim() || `status ${r.status}`}`);
        return EXIT.failed;
      }
      failures = r.body.images.flatMap((i) => (i.error === undefined ? [] : [i.error]));
    } else {
      const rt = await runtime;
      const results = await Promise.all(
        needed.map((n) =>
          rt.ensureImage(n.image, n.policy).then(
            () => undefined,
            (err: unknown) => (err as Error).message,
          ),
        ),
      );
      failures = results.filter((m): m is string => m !== undefined);
    }
  } finally {
    if (actor.kind === 'cli') actor.release();
  }
  for (const f of failures) io.err(`podrun: ${f}`);
  io.out(`${needed.length - failures.length} of ${needed.length} image${needed.length === 1 ? '' : 's'} present`);
  return failures.length ? EXIT.failed : EXIT.ok;
}

/** How long the agent is given for every pull of a set: a large image on a slow link. */
const PULL_TIMEOUT_MS = 30 * 60_000;
