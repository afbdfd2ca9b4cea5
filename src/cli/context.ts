import type { PodPolicy } from '../manifest/policy.js';
import type { PodRuntime } from '../runtime/runtime.js';
import type { RuntimeOptions } from '../runtime/runtime-types.js';

export const EXIT = { ok: 0, failed: 1, usage: 2, engine: 3 } as const;

export interface GlobalOptions {
  /** What manifests may ask of this node: checked by validate, apply and the agent alike. */
  policy: PodPolicy;
  dockerHost?: string;
  /** --runtime-request-timeout. */
  requestTimeoutMs?: number;
  stateDir: string;
  pauseImage: string;
  network: string;
  nodeName?: string;
  nodeIP?: string;
  /** Log rotation of every container podrun makes (--container-log-max-size, --container-log-max-files). */
  containerLog?: { maxBytes: number; maxFiles: number };
  /** The node's resolver configuration that pods inherit (--resolv-conf). */
  resolvConf?: string;
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
  };
}

/** The defaults; PODRUN_STATE_DIR and the like are read as each flag's environment variable. */
export const DEFAULTS = {
  stateDir: '/var/lib/podrun',
  pauseImage: 'registry.k8s.io/pause:3.10',
  network: 'bridge',
};

/** Where command output goes; tests hand in their own. */
export interface Io {
  out: (line: string) => void;
  err: (line: string) => void;
  /** Raw streams, for output that is not line by line (logs). */
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  isTTY: boolean;
}

export const processIo: Io = {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
  stdout: process.stdout,
  stderr: process.stderr,
  isTTY: process.stderr.isTTY === true,
};

/** The engine client, loaded only by the commands that talk to the engine (it is most of start-up). */
export async function makeRuntime(g: GlobalOptions, io: Io): Promise<PodRuntime> {
  const { PodRuntime } = await import('../runtime/runtime.js');
  let last = 0;
  return new PodRuntime({
    ...runtimeOptionsOf(g),
    ...(io.isTTY
      ? {
          onPullProgress: (image: string, line: string) => {
            const now = Date.now();
            if (now - last < 200) return;
            last = now;
            process.stderr.write(`\r\x1b[KPulling ${image}: ${line}`.slice(0, 200));
          },
        }
      : {}),
  });
}
