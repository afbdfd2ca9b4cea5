import { PassThrough, Transform } from 'node:stream';
import type { ObservedPod } from '../runtime/observed.js';
import { EXIT, makeRuntime, type GlobalOptions, type Io } from './context.js';
import { noResources, podArg, podNotFound, selectorFrom } from './pod-args.js';

export interface LogsOptions {
  container?: string;
  namespace: string;
  follow: boolean;
  previous: boolean;
  tail?: number;
  timestamps: boolean;
  selector?: string;
  allContainers?: boolean;
  /** Milliseconds back from now. */
  since?: number;
  sinceTime?: string;
  prefix?: boolean;
}

/** The container kubectl picks when none is named: the default-container annotation, else the first. */
export function defaultContainer(pod: ObservedPod): { name: string; all: string[] } | undefined {
  const all = pod.spec?.spec.containers.map((c) => c.name) ?? [...new Set(pod.containers.filter((c) => c.type === 'app').map((c) => c.name))].reverse();
  const annotated = pod.spec?.metadata.annotations?.['kubectl.kubernetes.io/default-container'];
  const name = annotated && all.includes(annotated) ? annotated : all[0];
  return name ? { name, all } : undefined;
}

/** Lines prefixed with `[pod/NAME/CONTAINER] `, as kubectl logs --prefix. */
function prefixed(target: NodeJS.WritableStream, prefix: string): NodeJS.WritableStream {
  let partial = '';
  const t = new Transform({
    transform(chunk: Buffer, _enc, done) {
      const lines = (partial + chunk.toString()).split('\n');
      partial = lines.pop() ?? '';
      done(null, lines.map((l) => `${prefix}${l}\n`).join(''));
    },
    flush(done) {
      done(null, partial ? `${prefix}${partial}\n` : '');
    },
  });
  t.pipe(target, { end: false });
  return t;
}

/** `podrun logs POD` (or `-l SELECTOR`): the container's output from the engine, kubectl's way. */
export async function logsCommand(podName: string | undefined, o: LogsOptions, g: GlobalOptions, io: Io): Promise<number> {
  if (!podName && !o.selector) {
    io.err('podrun: name a pod, or select pods with -l');
    return EXIT.usage;
  }
  let since: number | undefined;
  if (o.sinceTime) {
    const t = Date.parse(o.sinceTime);
    if (!Number.isFinite(t)) {
      io.err(`podrun: --since-time "${o.sinceTime}" is not an RFC3339 time`);
      return EXIT.usage;
    }
    since = Math.floor(t / 1000);
  } else if (o.since !== undefined) since = Math.floor((Date.now() - o.since) / 1000);
  const rt = await makeRuntime(g, io);
  const observed = await rt.listPods();
  let pods: ObservedPod[];
  if (podName) {
    const { namespace: ns, name } = podArg(podName, o.namespace);
    const pod = observed.find((p) => p.namespace === ns && p.name === name);
    if (!pod) {
      podNotFound(io, name, ns, observed);
      return EXIT.failed;
    }
    pods = [pod];
  } else {
    const select = selectorFrom(o.selector, io);
    if (!select) return EXIT.usage;
    pods = observed.filter((p) => p.namespace === o.namespace && select(p.spec?.metadata.labels)).sort((a, b) => a.name.localeCompare(b.name));
    if (!pods.length) {
      noResources(io, o.namespace);
      return EXIT.ok;
    }
  }
  const targets: { pod: ObservedPod; container: string; id: string }[] = [];
  for (const pod of pods) {
    const def = defaultContainer(pod);
    const allNames = [...(pod.spec?.spec.initContainers?.map((c) => c.name) ?? []), ...(def?.all ?? [])];
    let names: string[];
    if (o.allContainers) names = allNames;
    else if (o.container) {
      if (!allNames.includes(o.container)) {
        io.err(`podrun: container ${o.container} is not in pod ${pod.namespace}/${pod.name} (its containers: ${allNames.join(', ')})`);
        return EXIT.failed;
      }
      names = [o.container];
    } else {
      if (!def) {
        io.err(`podrun: pod ${pod.namespace}/${pod.name} has no containers`);
        return EXIT.failed;
      }
      if (def.all.length > 1 && podName) io.err(`Defaulted container "${def.name}" out of: ${def.all.join(', ')}`);
      names = [def.name];
    }
    for (const name of names) {
      const instances = pod.containers.filter((c) => c.name === name);
      const target = o.previous ? instances[1] : instances[0];
      if (!target) {
        if (o.allContainers || pods.length > 1) continue;
        io.err(o.previous ? `podrun: previous terminated container "${name}" in pod "${pod.name}" not found` : `podrun: container "${name}" in pod "${pod.name}" has not started yet`);
        return EXIT.failed;
      }
      targets.push({ pod, container: name, id: target.id });
    }
  }
  const prefix = o.prefix ?? false;
  const write = async (t: (typeof targets)[number]): Promise<void> => {
    const label = `[pod/${t.pod.name}/${t.container}] `;
    const out = prefix ? prefixed(io.stdout, label) : io.stdout;
    const err = prefix ? prefixed(io.stderr, label) : io.stderr;
    await rt.writeLogs(t.id, { follow: o.follow && !o.previous, timestamps: o.timestamps, ...(o.tail !== undefined ? { tail: o.tail } : {}), ...(since !== undefined ? { since } : {}) }, out, err);
    if (prefix) {
      // Let the prefixers flush their last partial line before the next target writes.
      for (const s of [out, err] as PassThrough[]) await new Promise<void>((r) => s.end(r));
    }
  };
  // Following several: all at once, as their lines come. Otherwise one after another, in order.
  if (o.follow && targets.length > 1) await Promise.all(targets.map(write));
  else for (const t of targets) await write(t);
  return EXIT.ok;
}
