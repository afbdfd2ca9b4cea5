/**
 * The raw Docker API floor for a cold apply: the same containers podrun makes for N pods (a pause
 * sandbox, then each container joined to its network and IPC namespaces, or host networking),
 * created and started straight through dockerode, with the same bound of 4 engine calls at once.
 * Run as a whole process, as a hand-written dockerode tool would be:
 *
 *   node .bench-build/bench/floor.js PODS CONTAINERS bridge|host LABEL
 *
 * Prints the milliseconds from the first engine call to the last start (the engine's own share).
 */
import Docker from 'dockerode';
import { Slots } from '../src/runtime/slots.js';
import { PAUSE_IMAGE, TEST_IMAGE } from '../test/integration/helpers.js';

const [pods, containers, net, label] = [Number(process.argv[2]), Number(process.argv[3]), process.argv[4], process.argv[5] ?? 'podrun-bench.floor=1'];
const docker = new Docker();
const slots = new Slots(4);
const [key, value] = label.split('=') as [string, string];
const Labels = { [key]: value };

async function pod(i: number): Promise<void> {
  const host = net === 'host';
  const sandbox = await slots.run(() =>
    docker.createContainer({
      name: `floor_${value}_${i}_POD`,
      Image: PAUSE_IMAGE,
      Labels,
      HostConfig: { NetworkMode: host ? 'host' : 'bridge', IpcMode: 'shareable' },
    }),
  );
  await slots.run(() => sandbox.start());
  for (let c = 0; c < containers; c++) {
    const ct = await slots.run(() =>
      docker.createContainer({
        name: `floor_${value}_${i}_c${c}`,
        Image: TEST_IMAGE,
        Cmd: ['sh', '-c', 'exec sleep 3600'],
        Labels,
        HostConfig: { NetworkMode: host ? 'host' : `container:${sandbox.id}`, IpcMode: `container:${sandbox.id}` },
      }),
    );
    await slots.run(() => ct.start());
  }
}

const t0 = performance.now();
await Promise.all(Array.from({ length: pods }, (_, i) => pod(i)));
process.stdout.write(`${(performance.now() - t0).toFixed(1)}\n`);
