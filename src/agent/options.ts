import type { ContainerGcPolicy, ImageGcPolicy } from '../gc/plan.js';
import type { Logger } from '../log/logger.js';
import type { PodPolicy } from '../manifest/policy.js';
import type { BackoffPolicy } from '../reconcile/backoff.js';
import type { PodEngine } from '../runtime/roles.js';
import type { RuntimeOptions } from '../runtime/runtime-types.js';
import type { PodSource } from '../sources/source.js';
import type { Signer } from '../sources/sshsig.js';

export interface AgentOptions {
  runtime: RuntimeOptions;
  /** The engine to run on (default: the Docker engine `runtime` describes; unit tests give the fake). */
  engine?: PodEngine;
  /** Makes the engine from the runtime options (runtime/open-engine.ts: a CRI runtime's, say); default: the Docker API. */
  engineFactory?: (o: RuntimeOptions) => PodEngine;
  /** Sources beyond the directories, URLs and applied sets (a program embedding the agent; unit tests). */
  sources?: PodSource[];
  manifestDirs: string[];
  manifestUrls: string[];
  urlHeaders?: Record<string, string>;
  urlCaFile?: string;
  /** Keys a URL's set must be signed with (its detached signature, URL.sig). */
  urlSigners?: Signer[];
  /** Keys a watched directory's files must be signed with (FILE.sig beside each). */
  dirSigners?: Signer[];
  /** Default health gate for every pod's updates (0: only pods annotated podrun.io/rollback-after). */
  rollbackAfterMs?: number;
  /** Directory rescan period (the watcher's safety net). */
  resyncMs?: number;
  urlPeriodMs?: number;
  urlTimeoutMs?: number;
  /** Engine relist period (the event stream's safety net). */
  relistMs?: number;
  removeGraceMs?: number;
  /** Engine calls that create, start, remove or list at once. */
  maxParallel?: number;
  /** Also serve the API on 127.0.0.1:port: /healthz, /metrics*, /stats/summary, /node to anyone, the rest with the token. */
  httpPort?: number;
  /** The TCP port's bearer token file (default: <state-dir>/http-token, made when missing). */
  httpTokenFile?: string;
  gc?: { periodMs?: number; imagePeriodMs?: number; imageGc?: boolean; containers?: ContainerGcPolicy; images?: ImageGcPolicy };
  backoff?: BackoffPolicy;
  /** What manifests may ask of this node (every source). */
  policy?: PodPolicy;
  log?: Logger;
  /** Node pressure thresholds, in the kubelet's --eviction-hard form (default: the kubelet's). */
  evictionHard?: string;
  /** Resource usage reading period (default 10 s, cAdvisor's housekeeping interval). */
  statsPeriodMs?: number;
}
