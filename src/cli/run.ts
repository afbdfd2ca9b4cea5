import { Agent } from '../agent/agent.js';
import type { BackoffPolicy } from '../reconcile/backoff.js';
import { createLogger, levelFromVerbosity, type LogLevel } from '../log/logger.js';
import { sdNotify } from '../agent/notify.js';
import { loadSigners } from '../sources/signed.js';
import type { Signer } from '../sources/sshsig.js';
import { EXIT, runtimeOptionsOf, type GlobalOptions, type Io } from './context.js';

export interface RunOptions {
  manifestDir: string[];
  manifestUrl: string[];
  manifestUrlHeader: string[];
  manifestUrlCa?: string;
  manifestUrlVerifyKey: string[];
  manifestDirVerifyKey: string[];
  rollbackAfter: number;
  resyncPeriod: number;
  urlPeriod: number;
  urlTimeout: number;
  relistPeriod: number;
  maxParallel: number;
  httpPort?: number;
  httpTokenFile?: string;
  backoffInitial: number;
  backoffMax: number;
  gcPeriod: number;
  maximumDeadContainersPerContainer: number;
  maximumDeadContainers: number;
  imageGc: boolean;
  imageGcPeriod: number;
  imageGcHighThreshold: number;
  imageGcLowThreshold: number;
  imageMinimumGcAge: number;
  evictionHard: string;
  housekeepingInterval: number;
  logLevel?: LogLevel;
  /** The kubelet's verbosity: 4 and up is debug. */
  v?: number;
  logFormat?: 'json' | 'text';
}

export function parseHeaders(lines: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const l of lines) {
    const i = l.indexOf(':');
    if (i <= 0) throw new Error(`invalid header "${l}" (use 'Name: value')`);
    out[l.slice(0, i).trim()] = l.slice(i + 1).trim();
  }
  return out;
}

/** Runs the agent until SIGTERM or SIGINT; the pods keep running after it stops. */
export async function runCommand(o: RunOptions, g: GlobalOptions, io: Io, stopSignal?: Promise<void>): Promise<number> {
  let headers: Record<string, string>;
  try {
    headers = parseHeaders(o.manifestUrlHeader);
  } catch (err) {
    io.err(`podrun: ${(err as Error).message}`);
    return EXIT.usage;
  }
  let urlSigners: Signer[] | undefined;
  let dirSigners: Signer[] | undefined;
  try {
    // A key that cannot be read is a start-up error, never a silently open door.
    if (o.manifestUrlVerifyKey.length) urlSigners = loadSigners(o.manifestUrlVerifyKey);
    if (o.manifestDirVerifyKey.length) dirSigners = loadSigners(o.manifestDirVerifyKey);
  } catch (err) {
    io.err(`podrun: ${(err as Error).message}`);
    return EXIT.usage;
  }
  const backoff: BackoffPolicy = { initialMs: o.backoffInitial, maxMs: o.backoffMax, resetMs: 600_000 };
  const log = createLogger({
    level: o.logLevel ?? (o.v !== undefined ? levelFromVerbosity(o.v) : 'info'),
    format: o.logFormat ?? (io.isTTY ? 'text' : 'json'),
    write: (line) => io.err(line),
  });
  let engineFactory;
  try {
    engineFactory = g.engine ? await (await import('../runtime/open-engine.js')).engineFactory(g.engine) : undefined;
  } catch (err) {
    io.err(`podrun: ${(err as Error).message}`);
    return EXIT.usage;
  }
  const agent = new Agent({
    runtime: runtimeOptionsOf(g),
    ...(engineFactory ? { engineFactory } : {}),
    manifestDirs: o.manifestDir,
    manifestUrls: o.manifestUrl,
    urlHeaders: headers,
    ...(o.manifestUrlCa ? { urlCaFile: o.manifestUrlCa } : {}),
    ...(urlSigners ? { urlSigners } : {}),
    ...(dirSigners ? { dirSigners } : {}),
    rollbackAfterMs: o.rollbackAfter,
    resyncMs: o.resyncPeriod,
    urlPeriodMs: o.urlPeriod,
    urlTimeoutMs: o.urlTimeout,
    relistMs: o.relistPeriod,
    maxParallel: o.maxParallel,
    ...(o.httpPort ? { httpPort: o.httpPort } : {}),
    ...(o.httpTokenFile ? { httpTokenFile: o.httpTokenFile } : {}),
    backoff,
    evictionHard: o.evictionHard,
    statsPeriodMs: o.housekeepingInterval,
    policy: g.policy,
    gc: {
      periodMs: o.gcPeriod,
      imagePeriodMs: o.imageGcPeriod,
      imageGc: o.imageGc,
      containers: {
        maxPerPodContainer: o.maximumDeadContainersPerContainer,
        ...(o.maximumDeadContainers >= 0 ? { maxContainers: o.maximumDeadContainers } : {}),
      },
      images: { highPercent: o.imageGcHighThreshold, lowPercent: o.imageGcLowThreshold, minAgeMs: o.imageMinimumGcAge },
    },
    log,
  });
  try {
    await agent.start();
  } catch (err) {
    io.err(`podrun: ${(err as Error).message}`);
    await agent.stop().catch(() => undefined);
    return EXIT.failed;
  }
  const stop =
    stopSignal ??
    new Promise<void>((resolve) => {
      process.once('SIGTERM', () => resolve());
      process.once('SIGINT', () => resolve());
    });
  // READY=1 for systemd (Type=notify) once podrun has acted on everything it was given.
  void agent.converged().then(
    async (pods) => {
      const sent = await sdNotify({ ready: true, status: `converged: ${pods} pod(s) declared` });
      if (sent === 'sent') log.info(`told the service manager READY (${pods} pod(s) declared)`);
      else if (sent !== 'no-socket') log.warn(`cannot tell the service manager READY: ${sent}`);
    },
    () => undefined,
  );
  await stop;
  await sdNotify({ stopping: true });
  await agent.stop();
  return EXIT.ok;
}
