import { writeSync } from 'node:fs';
import { credentialFiles } from '../runtime/auth.js';
import type { PodPolicy } from '../manifest/policy.js';
import type { PodEngine } from '../runtime/roles.js';
import type { EngineChoice } from '../runtime/open-engine.js';
import type { RuntimeOptions } from '../runtime/runtime-types.js';

export const EXIT = { ok: 0, failed: 1, usage: 2, engine: 3 } as const;

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

/** Where command output goes; tests hand in their own. */
export interface Io {
  out: (line: string) => void;
  err: (line: string) => void;
  /** Raw streams, for output that is not line by line (logs). */
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  isTTY: boolean;
}

// A command's lines go to descriptors 1 and 2 with writeSync until something asks for Node's
// stdout or stderr stream: making one loads Node's stream modules (and net or tty), a measurable
// part of a start that only writes a few lines. Node's own writes to pipes, files and terminals
// are synchronous on Linux, so lines come out where and when they did. Only bin/podrun's start()
// turns this on (directLines), after it has made sure it learns when a stream is made: from then
// on every line goes through the stream, so that nothing overtakes what the stream holds.
let direct = false;
const streamMade = { 1: false, 2: false };

/** For start(): lines may go straight to the descriptors; a stream made later is reported here. */
export function directLines(): (fd: 1 | 2) => void {
  direct = true;
  return (fd) => {
    streamMade[fd] = true;
  };
}

function writeLine(fd: 1 | 2, line: string): void {
  const stream = (): NodeJS.WriteStream => (fd === 1 ? process.stdout : process.stderr);
  if (!direct || streamMade[fd]) {
    stream().write(`${line}\n`);
    return;
  }
  const bytes = Buffer.from(`${line}\n`);
  let done = 0;
  try {
    while (done < bytes.length) done += writeSync(fd, bytes, done);
  } catch {
    // A descriptor that is non-blocking and full (EAGAIN), a reader gone (EPIPE), or any other
    // failure: the stream takes the rest and does what it always did (waits; or the EPIPE exit).
    stream().write(bytes.subarray(done));
  }
}

export const processIo: Io = {
  out: (line) => writeLine(1, line),
  err: (line) => writeLine(2, line),
  get stdout() {
    return process.stdout;
  },
  get stderr() {
    return process.stderr;
  },
  // As process.stderr.isTTY, without making the stream.
  get isTTY() {
    return process.getBuiltinModule('node:tty').isatty(2);
  },
};

/** The engine client, loaded only by the commands that talk to the engine (it is most of start-up). */
export async function makeRuntime(g: GlobalOptions, io: Io): Promise<PodEngine> {
  const { openEngine } = await import('../runtime/open-engine.js');
  const { pullReporter } = await import('./pull-progress.js');
  return openEngine({ ...runtimeOptionsOf(g), onPullProgress: pullReporter((s) => io.stderr.write(s), io.isTTY) }, g.engine ?? {});
}
