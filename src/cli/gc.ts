import { allContainers } from '../manifest/types.js';
import { agentRunning } from '../agent/lock.js';
import { becomeActor } from './actor.js';
import { GarbageCollector, type ContainerGcResult, type ImageGcResult } from '../gc/collector.js';
import { agentRequest } from '../server/client.js';
import { EXIT, makeRuntime, type GlobalOptions, type Io } from './context.js';

export interface GcCommandOptions {
  dryRun: boolean;
  images: boolean;
}

function print(io: Io, dryRun: boolean, c: ContainerGcResult, images: ImageGcResult | undefined): void {
  const verb = dryRun ? 'would remove' : 'removed';
  for (const r of c.removals) io.out(`${verb} container ${r.container} of pod ${r.pod} (${r.reason})`);
  io.out(
    `containers: ${dryRun ? c.removals.length : c.removed} ${dryRun ? 'to remove' : 'removed'}${c.failed ? `, ${c.failed} failed` : ''}; ${c.podsGone.length} pod(s) gone`,
  );
  if (!images) return;
  for (const i of images.candidates) io.out(`${verb} image ${i.tags[0] ?? i.id} (${(i.size / 1e6).toFixed(1)} MB)`);
  io.out(`images: disk at ${images.usagePercent.toFixed(1)}%; ${dryRun ? images.candidates.length : images.removed} ${dryRun ? 'to remove' : 'removed'}`);
}

/**
 * `podrun gc`: with an agent, its collector (it knows which pods are wanted); without one, only
 * dead instances over the bound go, never whole pods.
 */
export async function gcCommand(o: GcCommandOptions, g: GlobalOptions, io: Io): Promise<number> {
  // A dry run changes nothing: it needs no lock. Else the agent collects, or this command, holding the lock.
  const actor = o.dryRun ? undefined : await becomeActor(g.stateDir, 'gc', io);
  if (!o.dryRun && !actor) return EXIT.failed;
  try {
    return await collect(actor?.kind === 'agent' || (o.dryRun && (await agentRunning(g.stateDir))), o, g, io);
  } finally {
    if (actor?.kind === 'cli') actor.release();
  }
}

async function collect(agent: boolean, o: GcCommandOptions, g: GlobalOptions, io: Io): Promise<number> {
  if (agent) {
    const r = await agentRequest<{ containers: ContainerGcResult; images?: ImageGcResult }>(
      g.stateDir,
      o.dryRun ? 'GET' : 'POST',
      `/gc?images=${o.images}`,
      120_000,
    );
    if (r) {
      print(io, o.dryRun, r.containers, r.images);
      return EXIT.ok;
    }
    // The agent acts on this state directory: collecting beside it would race it.
    io.err(`podrun: the agent supervising ${g.stateDir} did not answer the collection`);
    return EXIT.failed;
  }
  const rt = await makeRuntime(g, io);
  const pods = await rt.listPods();
  // With no agent, the pods the engine holds (their specs ride on their sandboxes) are the declared ones.
  const neededImages = (): string[] => pods.flatMap((p) => (p.spec ? allContainers(p.spec).map((c) => c.image) : []));
  const gc = new GarbageCollector(rt, { stateDir: g.stateDir, pauseImage: g.pauseImage, neededImages });
  const containers = await gc.collectContainers(pods, undefined, o.dryRun);
  const images = o.images ? await gc.collectImages(o.dryRun) : undefined;
  print(io, o.dryRun, containers, images);
  return containers.failed ? EXIT.failed : EXIT.ok;
}
