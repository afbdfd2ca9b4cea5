import { yamlText } from './yaml-out.js';
import { EngineUnavailableError } from '../runtime/engine-errors.js';
import { agentGet } from '../server/client.js';
import { DEFAULT_EVICTION_HARD, parseEvictionThresholds, type NodeCondition } from '../stats/node.js';
import { nodeView } from '../stats/node-view.js';
import { podrunVersion } from '../status/version.js';
import { EXIT, makeRuntime, type GlobalOptions, type Io } from './context.js';
import { table } from './print.js';

interface V1Node {
  metadata: { name: string; creationTimestamp: string; labels?: Record<string, string> };
  status: {
    conditions: NodeCondition[];
    addresses: { type: string; address: string }[];
    nodeInfo: { kubeletVersion: string; osImage: string; kernelVersion: string; containerRuntimeVersion: string };
  };
}

function age(since: string): string {
  const s = Math.max(0, Math.floor((Date.now() - Date.parse(since)) / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.floor(s / 60)}m`;
  if (s < 172_800) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86_400)}d`;
}

/**
 * `podrun get node`: this machine as a v1 Node. From the agent when one runs (its thresholds, its
 * start time); else computed here against the kubelet's default thresholds.
 */
export async function getNodeCommand(o: { output?: string }, g: GlobalOptions, io: Io): Promise<number> {
  let node = await agentGet<V1Node>(g.stateDir, '/node');
  let code: number = EXIT.ok;
  if (!node) {
    const rt = await makeRuntime(g, io);
    // Without an engine the node is still there, NotReady, as the agent reports it: shown, with
    // the engine's own exit code (3) and why on stderr.
    let facts: Awaited<ReturnType<typeof rt.engineFacts>> | undefined;
    let pods = 0;
    try {
      facts = await rt.engineFacts();
      pods = (await rt.listPods()).length;
    } catch (err) {
      if (!(err instanceof EngineUnavailableError)) throw err;
      io.err(`podrun: ${err.message}: the node is NotReady`);
      code = EXIT.engine;
    }
    const now = new Date().toISOString();
    node = nodeView({
      rt,
      facts,
      stateDir: g.stateDir,
      engineUp: facts !== undefined,
      thresholds: parseEvictionThresholds(DEFAULT_EVICTION_HARD),
      startTime: now,
      podrunVersion: podrunVersion(),
      pods,
    }).node as unknown as V1Node;
  }
  if (o.output === 'json' || o.output === 'yaml') {
    io.out(o.output === 'json' ? JSON.stringify(node, null, 2) : yamlText(node));
    return code;
  }
  const ready = node.status.conditions.find((c) => c.type === 'Ready');
  const pressure = node.status.conditions.filter((c) => c.type !== 'Ready' && c.status === 'True').map((c) => c.type);
  const status = [ready?.status === 'True' ? 'Ready' : 'NotReady', ...pressure].join(',');
  const wide = o.output === 'wide';
  const ip = node.status.addresses.find((a) => a.type === 'InternalIP')?.address ?? '<none>';
  const info = node.status.nodeInfo;
  const header = [
    'NAME',
    'STATUS',
    'ROLES',
    'AGE',
    'VERSION',
    ...(wide ? ['INTERNAL-IP', 'EXTERNAL-IP', 'OS-IMAGE', 'KERNEL-VERSION', 'CONTAINER-RUNTIME'] : []),
  ];
  const row = [
    node.metadata.name,
    status,
    '<none>',
    age(node.metadata.creationTimestamp),
    info.kubeletVersion,
    ...(wide ? [ip, '<none>', info.osImage, info.kernelVersion, info.containerRuntimeVersion] : []),
  ];
  for (const l of table([header, row])) io.out(l);
  return code;
}
