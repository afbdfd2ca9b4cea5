import { credentialFiles } from '../runtime/auth.js';
import type { PodPolicy } from '../manifest/policy.js';
import type { PodEngine } from '../runtime/roles.js';
import type { EngineChoice } from '../runtime/open-engine.js';
import type { RuntimeOptions } from '../runtime/runtime-types.js';
import type { Io } from './process-io.js';

// The exit codes, the Io and the process's own Io live in process-io.ts, which `podrun version`'s
// own start (version-start.ts) uses without this module's engine door.
export { EXIT, processIo, type Io } from './process-io.js';

export interface GlobalOptions {
  /** What manifests may ask of this node: checked by validate, apply and the agent alike. */
  policy: PodPolicy;
  dockerHost?: string;
  /** --container-runtime-endpoint, --image-service-endpoint, --pod-logs-dir: a CRI runtime instead of the Docker API. */
  engine?: EngineChoice;
  /** --runtime-request-timeout. */
  requestTimeoutMs?: number;
  stateDir: string;
  pauseImage: string;
  network: string;
  nodeName?: string;
  nodeIP?: string;
  /** Log rotation of every container podrun makes (--container-log-max-size, --container-log-max-files). */
  containerLog?: { maxBytes: number; maxFiles: number };
  /** --pod-max-pids: above 0, each container's process limit (the kubelet's podPidsLimit). */
  podPidsLimit?: number;
  /** The node's resolver configuration that pods inherit (--resolv-conf). */
  resolvConf?: string;
  /** --image-credentials: the one config.json pulls read (default: <state-dir>/config.json, then the user's). */
  imageCredentials?: string;
  /** Pulls at once (1: --serialize-image-pulls, the kubelet's default; 0: no limit). */
  pullSlots?: number;
}

/** What the engine door needs of the global options: one place, for apply and the agent alike. */
export function runtimeOptionsOf(g: GlobalOptions): RuntimeOptions {
  return {
    ...(g.dockerHost ? { host: g.dockerHost } : {}),
    ...(g.requestTimeoutMs !== undefined ? { requestTimeoutMs: g.requestTimeoutMs } : {}),
    stateDir: g.stateDir,
    pauseImage: g.pauseImage,
    network: g.network,
    ...(g.nodeName ? { nodeName: g.nodeName } : {}),
    ...(g.nodeIP ? { hostIP: g.nodeIP } : {}),
    ...(g.policy.allowedHostPaths ? { allowedHostPaths: g.policy.allowedHostPaths } : {}),
    ...(g.containerLog ? { containerLog: g.containerLog } : {}),
    ...(g.resolvConf ? { resolvConf: g.resolvConf } : {}),
    ...(g.podPidsLimit !== undefined && g.podPidsLimit > 0 ? { podPidsLimit: g.podPidsLimit } : {}),
    credentialFiles: credentialFiles({ stateDir: g.stateDir, ...(g.imageCredentials ? { file: g.imageCredentials } : {}) }),
    ...(g.pullSlots !== undefined ? { pullSlots: g.pullSlots } : {}),
  };
}

/** The defaults; PODRUN_STATE_DIR and the like are read as each flag's environment variable. */
export const DEFAULTS = {
  stateDir: '/var/lib/podrun',
  pauseImage: 'registry.k8s.io/pause:3.10',
  network: 'bridge',
};

/** The engine client, loaded only by the commands that talk to the engine (it is most of start-up). */
export async function makeRuntime(g: GlobalOptions, io: Io): Promise<PodEngine> {
  const { openEngine } = await import('../runtime/open-engine.js');
  const { pullReporter } = await import('./pull-progress.js');
  return openEngine(
    {
      ...runtimeOptionsOf(g),
      onPullProgress: pullReporter(
        (s) => io.stderr.write(s),
        () => io.isTTY,
      ),
    },
    g.engine ?? {},
  );
}
