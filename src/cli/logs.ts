import { PassThrough, Transform } from 'node:stream';
import { shouldRestart } from '../reconcile/plan.js';
import { isActive, type ObservedContainer, type ObservedPod } from '../runtime/observed.js';
import type { PodEngine } from '../runtime/roles.js';
import type { LogWindow } from '../runtime/runtime-types.js';
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

/** Whether a dead instance's container runs again: by the pod's restartPolicy; a completed init container never, a sidecar always. */
function runsAgain(pod: ObservedPod, c: ObservedContainer): boolean {
  const spec = pod.spec?.spec.initContainers?.find((x) => x.name === c.name);
  if (c.type === 'init' && spec?.restartPolicy === 'Always') return true;
  if (c.type === 'init' && c.exitCode === 0) return false;
  return pod.spec ? shouldRestart(pod.spec, c) : false;
}

/**
 * The instance whose log `logs` prints, as the kubelet picks it (validateContainerLogStatus): the
 * current one, or with `previous` the container's last termination state. While the next instance
 * waits out its back-off (or was made and never started), the container is waiting and the
 * instance that just died is both its last state and what `logs` shows. Pure.
 */
export function logInstance(pod: ObservedPod, name: string, previous: boolean): { c: ObservedContainer } | undefined {
  const instances = pod.containers.filter((c) => c.name === name);
  const dead = (c: ObservedContainer | undefined): c is ObservedContainer => c !== undefined && !isActive(c) && c.state !== 'created';
  const [newest] = instances;
  if (!newest) return undefined;
  const waiting = newest.state === 'created' || (dead(newest) && runsAgain(pod, newest));
  // The instance that ended last, made before the newest when the newest never started.
  const justDied = instances.find(dead);
  if (waiting) return justDied ? { c: justDied } : previous ? undefined : { c: newest };
  if (!previous) return { c: newest };
  const before = instances[1];
  return dead(before) ? { c: before } : undefined;
}

/** Seconds since the epoch, to the ns, of an RFC 3339 time the engine gave. */
function engineSeconds(iso: string): string | undefined {
  const m = /^(.*T\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)$/.exec(iso);
  const s = m ? Date.parse(`${m[1]}${m[3]}`) : NaN;
  if (!m || !Number.isFinite(s) || s <= 0) return undefined;
  return `${Math.floor(s / 1000)}.${(m[2] ?? '').padEnd(9, '0')}`;
}

/**
 * A container the engine restarts in place (its own restart policy, `apply` without an agent)
 * keeps every run in one log: the current run is what came since its start, and the previous what
 * came before; while the engine waits to restart it, the run that just ended is both. Undefined:
 * no previous run.
 */
async function inPlaceRun(rt: PodEngine, id: string, previous: boolean): Promise<LogWindow | undefined> {
  const st = await rt.containerState(id);
  const started = st?.startedAt ? engineSeconds(st.startedAt) : undefined;
  if (!st || !started || st.engineRestarts === 0) return previous ? undefined : {};
  if (st.restarting || !previous) return { since: started };
  return { until: started };
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
  if (o.follow && !rt.capabilities.streaming) {
    io.err(`podrun: the engine at ${rt.endpoint} cannot follow a log (no streaming); without -f the log so far is shown`);
    return EXIT.failed;
  }
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
  const targets: { pod: ObservedPod; container: string; id: string; window: LogWindow }[] = [];
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
      let picked = logInstance(pod, name, o.previous)?.c;
      let window: LogWindow = {};
      // The engine's restarts in place are runs of the newest instance, newer than any other.
      const newest = pod.containers.find((c) => c.name === name);
      if (newest && isActive(newest) && (!picked || picked === newest)) {
        const run = await inPlaceRun(rt, newest.id, o.previous);
        if (run) [picked, window] = [newest, run];
      }
      if (!picked) {
        if (o.allContainers || pods.length > 1) continue;
        io.err(
          o.previous
            ? `podrun: previous terminated container "${name}" in pod "${pod.name}" not found`
            : `podrun: container "${name}" in pod "${pod.name}" has not started yet`,
        );
        return EXIT.failed;
      }
      targets.push({ pod, container: name, id: picked.id, window });
    }
  }
  const prefix = o.prefix ?? false;
  const write = async (t: (typeof targets)[number]): Promise<void> => {
    const label = `[pod/${t.pod.name}/${t.container}] `;
    const out = prefix ? prefixed(io.stdout, label) : io.stdout;
    const err = prefix ? prefixed(io.stderr, label) : io.stderr;
    // The user's --since and the start of the run asked for: the later of the two.
    const from = t.window.since !== undefined && (since === undefined || Number(t.window.since) > since) ? t.window.since : since;
    await rt.writeLogs(
      t.id,
      {
        follow: o.follow && !o.previous,
        timestamps: o.timestamps,
        ...(o.tail !== undefined ? { tail: o.tail } : {}),
        ...(from !== undefined ? { since: from } : {}),
        ...(t.window.until ? { until: t.window.until } : {}),
      },
      out,
      err,
    );
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
