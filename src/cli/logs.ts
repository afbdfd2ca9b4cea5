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
  const rt = makeRuntime(g, io);
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
  const c = rt.docker.getContainer(target.id);
  const opts = { stdout: true, stderr: true, timestamps: o.timestamps, ...(o.tail !== undefined ? { tail: o.tail } : {}) };
  if (o.follow && !o.previous) {
    const stream = await c.logs({ ...opts, follow: true });
    rt.docker.modem.demuxStream(stream, io.stdout, io.stderr);
    await new Promise<void>((resolve) => {
      stream.on('end', resolve);
      stream.on('close', resolve);
      stream.on('error', () => resolve());
    });
    return EXIT.ok;
  }
  const buf = (await c.logs({ ...opts, follow: false })) as unknown as Buffer;
  // Non-TTY logs are multiplexed in 8-byte framed chunks; TTY logs are raw.
  const info = await c.inspect();
  if (info.Config.Tty) {
    io.stdout.write(buf);
    return EXIT.ok;
  }
  for (let i = 0; i + 8 <= buf.length; ) {
    const len = buf.readUInt32BE(i + 4);
    const chunk = buf.subarray(i + 8, i + 8 + len);
    (buf[i] === 2 ? io.stderr : io.stdout).write(chunk);
    i += 8 + len;
  }
  return EXIT.ok;
}
