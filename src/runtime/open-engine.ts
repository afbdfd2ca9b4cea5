import { parseDuration } from '../base/duration.js';
import type { PodEngine } from './roles.js';
import type { RuntimeOptions } from './runtime-types.js';

// Which engine podrun runs on, chosen as the kubelet chooses its runtime: a CRI endpoint
// (--container-runtime-endpoint, the config file's containerRuntimeEndpoint, or
// PODRUN_CONTAINER_RUNTIME_ENDPOINT) means a CRI runtime through runtime.v1; without one, the
// Docker API exactly as before. Each engine's client is loaded only when chosen: the gRPC stack
// costs Docker's start-up nothing.

export interface EngineChoice {
  /** `unix:///run/containerd/containerd.sock`: the kubelet's --container-runtime-endpoint. */
  containerRuntimeEndpoint?: string;
  /** The kubelet's --image-service-endpoint (CRI only; default: the runtime endpoint). */
  imageServiceEndpoint?: string;
  /** The kubelet's podLogsDir: where a CRI runtime writes containers' logs (default /var/log/pods). */
  podLogsDir?: string;
}

/** A CRI endpoint as the kubelet takes it: `unix:///path`, or a bare absolute path (it warns and adds the scheme). */
export function criEndpoint(v: string | undefined): string | undefined {
  const s = v?.trim();
  if (!s) return undefined;
  if (s.startsWith('/')) return `unix://${s}`;
  if (!s.startsWith('unix:///'))
    throw new Error(
      `--container-runtime-endpoint ${JSON.stringify(s)}: a CRI endpoint is a unix socket, unix:///path/to/runtime.sock (as the kubelet's on Linux)`,
    );
  return s;
}

/**
 * PODRUN_CRI_RELIST_PERIOD: the generic PLEG's relist on a runtime without container events (1 s,
 * as the kubelet's, by default). A tuning knob, and how a test shows a death seen without it.
 */
export function criRelistPeriod(v: string | undefined): number | undefined {
  if (!v?.trim()) return undefined;
  let ms: number;
  try {
    ms = parseDuration(v.trim());
  } catch (err) {
    throw new Error(`PODRUN_CRI_RELIST_PERIOD ${JSON.stringify(v)}: ${(err as Error).message}`);
  }
  if (!(ms >= 100)) throw new Error(`PODRUN_CRI_RELIST_PERIOD ${JSON.stringify(v)}: at least 100ms (it is how often the runtime is listed)`);
  return ms;
}

/** Makes engines of the chosen kind; async only to load the chosen client. */
export async function engineFactory(choice: EngineChoice): Promise<(o: RuntimeOptions) => PodEngine> {
  const endpoint = criEndpoint(choice.containerRuntimeEndpoint);
  if (endpoint) {
    const imageEndpoint = criEndpoint(choice.imageServiceEndpoint);
    const { CriEngine } = await import('./cri/engine.js');
    const relistPeriodMs = criRelistPeriod(process.env.PODRUN_CRI_RELIST_PERIOD);
    return (o) =>
      new CriEngine({
        ...o,
        runtimeEndpoint: endpoint,
        ...(imageEndpoint ? { imageEndpoint } : {}),
        ...(choice.podLogsDir ? { podLogsDir: choice.podLogsDir } : {}),
        ...(relistPeriodMs ? { relistPeriodMs } : {}),
      });
  }
  if (choice.imageServiceEndpoint) throw new Error('--image-service-endpoint needs --container-runtime-endpoint (the Docker API serves images itself)');
  const { DockerEngine } = await import('./docker/docker-engine.js');
  return (o) => new DockerEngine(o);
}

export async function openEngine(o: RuntimeOptions, choice: EngineChoice): Promise<PodEngine> {
  return (await engineFactory(choice))(o);
}
