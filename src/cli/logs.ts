import { EXIT, makeRuntime, type GlobalOptions, type Io } from './context.js';

export interface LogsOptions {
  container?: string;
  namespace: string;
  follow: boolean;
  previous: boolean;
  tail?: number;
  timestamps: boolean;
}

/** `podrun logs POD`: the container's output from the engine, kubectl's way. */
export async function logsCommand(podName: string, o: LogsOptions, g: GlobalOptions, io: Io): Promise<number> {
  const rt = await makeRuntime(g, io);
  const [ns, name] = podName.includes('/') ? (podName.split('/', 2) as [string, string]) : [o.namespace, podName];
  const pod = (await rt.listPods()).find((p) => p.namespace === ns && p.name === name);
  if (!pod) {
    io.err(`podrun: pod/${ns}/${name} not found`);
    return EXIT.failed;
  }
  const appNames = pod.spec?.spec.containers.map((c) => c.name) ?? [...new Set(pod.containers.filter((c) => c.type === 'app').map((c) => c.name))];
  const allNames = [...(pod.spec?.spec.initContainers?.map((c) => c.name) ?? []), ...appNames];
  let container = o.container;
  if (!container) {
    if (appNames.length !== 1) {
      io.err(`podrun: a container name must be given for pod ${ns}/${name} (-c): one of ${appNames.join(', ')}`);
      return EXIT.usage;
    }
    container = appNames[0] as string;
  }
  if (!allNames.includes(container)) {
    io.err(`podrun: container ${container} is not in pod ${ns}/${name} (its containers: ${allNames.join(', ')})`);
    return EXIT.failed;
  }
  const instances = pod.containers.filter((c) => c.name === container);
  const target = o.previous ? instances[1] : instances[0];
  if (!target) {
    io.err(o.previous ? `podrun: previous terminated container "${container}" in pod "${name}" not found` : `podrun: container "${container}" in pod "${name}" has not started yet`);
    return EXIT.failed;
  }
  await rt.writeLogs(target.id, { follow: o.follow && !o.previous, timestamps: o.timestamps, ...(o.tail !== undefined ? { tail: o.tail } : {}) }, io.stdout, io.stderr);
  return EXIT.ok;
}
