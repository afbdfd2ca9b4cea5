import { InvalidArgumentError, type Command } from 'commander';
import { parseQuantity } from '../manifest/quantity.js';
import type { GlobalOptions } from './context.js';
import { bool, logFiles, logSize, podMaxPids, positiveInt } from './arg-parsers.js';

// podrun's own options (before the verb) as every command reads them: GlobalOptions.

/** The kubelet refuses maxParallelImagePulls other than 1 with serializeImagePulls (validation.go). */
function pullSlots(serialize: boolean | string, max: number | string | undefined): number {
  const serial = typeof serialize === 'string' ? bool(serialize) : serialize;
  const n = max === undefined ? undefined : typeof max === 'string' ? positiveInt(max) : max;
  if (serial && n !== undefined && n !== 1)
    throw new InvalidArgumentError(
      `--max-parallel-image-pulls ${n} needs --serialize-image-pulls false (as the kubelet: maxParallelImagePulls must be 1 when serializeImagePulls is true)`,
    );
  return serial ? 1 : (n ?? 0);
}

export function globals(cmd: Command): GlobalOptions {
  const o = cmd.optsWithGlobals<{
    runtimeRequestTimeout: number;
    dockerHost?: string;
    containerRuntimeEndpoint?: string;
    imageServiceEndpoint?: string;
    podLogsDir?: string;
    stateDir: string;
    pauseImage: string;
    network: string;
    nodeName?: string;
    nodeIp?: string;
    allowPrivileged: boolean;
    allowHostNamespaces: boolean;
    allowedHostPaths?: string;
    allowedUnsafeSysctls?: string;
    containerLogMaxSize: string;
    containerLogMaxFiles: number | string;
    resolvConf: string;
    imageCredentials?: string;
    serializeImagePulls: boolean | string;
    maxParallelImagePulls?: number | string;
    podMaxPids: number | string;
  }>();
  const commaList = (v: string): string[] =>
    v
      .split(',')
      .map((p) => p.trim())
      .filter(Boolean);
  return {
    policy: {
      allowPrivileged: o.allowPrivileged,
      allowHostNamespaces: o.allowHostNamespaces,
      ...(o.allowedHostPaths !== undefined ? { allowedHostPaths: commaList(o.allowedHostPaths) } : {}),
      ...(o.allowedUnsafeSysctls !== undefined ? { allowedUnsafeSysctls: commaList(o.allowedUnsafeSysctls) } : {}),
    },
    containerLog: { maxBytes: Math.floor(parseQuantity(logSize(o.containerLogMaxSize))), maxFiles: logFiles(String(o.containerLogMaxFiles)) },
    resolvConf: o.resolvConf,
    podPidsLimit: podMaxPids(String(o.podMaxPids)),
    ...(o.imageCredentials ? { imageCredentials: o.imageCredentials } : {}),
    pullSlots: pullSlots(o.serializeImagePulls, o.maxParallelImagePulls),
    ...engineChoiceOf(o),
    requestTimeoutMs: o.runtimeRequestTimeout,
    stateDir: o.stateDir,
    pauseImage: o.pauseImage,
    network: o.network,
    ...(o.nodeName ? { nodeName: o.nodeName } : {}),
    ...(o.nodeIp ? { nodeIP: o.nodeIp } : {}),
  };
}

/** A Docker endpoint named as the runtime endpoint (a config file of before CRI, where the field meant Docker's). */
function isDockerEndpoint(v: string): boolean {
  return /^(tcp|https?):\/\//.test(v) || /\/(docker|podman)\.sock$/.test(v);
}

/** The engine the options choose: a CRI runtime's endpoint, or the Docker engine's (engine selection: runtime/open-engine.ts). */
function engineChoiceOf(o: {
  dockerHost?: string;
  containerRuntimeEndpoint?: string;
  imageServiceEndpoint?: string;
  podLogsDir?: string;
}): Pick<GlobalOptions, 'dockerHost' | 'engine'> {
  const cri = o.containerRuntimeEndpoint && !isDockerEndpoint(o.containerRuntimeEndpoint) ? o.containerRuntimeEndpoint : undefined;
  const dockerHost = o.dockerHost ?? (o.containerRuntimeEndpoint && !cri ? o.containerRuntimeEndpoint : undefined);
  const engine = {
    ...(cri ? { containerRuntimeEndpoint: cri } : {}),
    ...(o.imageServiceEndpoint ? { imageServiceEndpoint: o.imageServiceEndpoint } : {}),
    ...(o.podLogsDir ? { podLogsDir: o.podLogsDir } : {}),
  };
  return { ...(dockerHost ? { dockerHost } : {}), ...(Object.keys(engine).length ? { engine } : {}) };
}
