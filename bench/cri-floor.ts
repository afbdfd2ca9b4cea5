/**
 * The CRI floor: what a hand-written Node tool on podrun's own CriClient takes for what podrun
 * does on a CRI runtime, as a whole process.
 *
 *   node .bench-build/bench/cri-floor.js cold ENDPOINT PODS LABEL LOGDIR
 *     N pods of one container: RunPodSandbox, CreateContainer, StartContainer, 4 calls at once.
 *     Prints the ms from the first call to the last start, then the CPU ms (user+sys) this process
 *     spent over them (its module loading left out, as a tool's own start is `node -e 0`'s).
 *   node .bench-build/bench/cri-floor.js restart ENDPOINT SANDBOX LABEL LOGDIR
 *     Relists at the generic PLEG's 1 s; when the pod's container has exited, creates and starts
 *     its next attempt; prints `seen <epoch ms>` when it saw the death, then the new container's id
 *     once started (the caller times it).
 */
import { CriClient } from '../src/runtime/cri/client.js';
import { ContainerState } from '../src/runtime/cri/messages.js';
import { CRI_TEST_IMAGE } from '../test/integration/cri-engine.js';
import { coldCalls, floorContainer, floorSandbox } from './cri-floor-calls.js';

const [mode, endpoint, arg, label, logDir] = process.argv.slice(2) as [string, string, string, string, string];
const client = new CriClient({ endpoint, timeoutMs: 60_000 });
const value = label.split('=')[1] ?? '';

async function cold(pods: number): Promise<void> {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await coldCalls(
    client,
    Array.from({ length: pods }, (_, i) => `floor-${value}-${i}`),
    label,
    logDir,
    CRI_TEST_IMAGE,
  );
  const wall = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  process.stdout.write(`${wall.toFixed(1)} ${((cpu.user + cpu.system) / 1000).toFixed(1)}\n`);
}

async function restart(sandbox: string): Promise<void> {
  const st = await client.podSandboxStatus(sandbox);
  const cfg = floorSandbox(st.metadata!.name, st.metadata!.uid, label, logDir);
  process.stdout.write('ready\n');
  for (;;) {
    await new Promise((r) => setTimeout(r, 1000));
    const cs = await client.listContainers({ podSandboxId: sandbox });
    if (cs.some((c) => c.state === ContainerState.RUNNING)) continue;
    // When the relist saw the death: the caller times what follows it apart from the relist's phase.
    process.stdout.write(`seen ${Date.now()}\n`);
    const last = Math.max(...cs.map((c) => c.metadata?.attempt ?? 0));
    const id = await client.createContainer(sandbox, floorContainer(last + 1, label, CRI_TEST_IMAGE), cfg);
    await client.startContainer(id);
    process.stdout.write(`${id}\n`);
    return;
  }
}

if (mode === 'cold') await cold(Number(arg));
else await restart(arg);
client.close();
