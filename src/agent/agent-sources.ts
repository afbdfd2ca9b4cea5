import type { Logger } from '../log/logger.js';
import { OPEN_POLICY } from '../manifest/policy.js';
import type { AgentMetrics } from '../metrics/agent-metrics.js';
import { appliedSource } from '../sources/applied-source.js';
import { DirectorySource } from '../sources/dir-source.js';
import { FreshnessStore } from '../sources/freshness-store.js';
import { redactUrl } from '../sources/redact.js';
import type { SignaturePolicy } from '../sources/signed.js';
import type { PodSource } from '../sources/source.js';
import type { Signer } from '../sources/sshsig.js';
import { UrlSource } from '../sources/url-source.js';
import type { AgentOptions } from './options.js';

/** The agent's sources: its directories, its URLs, the applied sets, and any it was given. */
export function sourcesFor(o: AgentOptions, log: Logger, m: AgentMetrics, nodeName: string): PodSource[] {
  const policy = o.policy ?? OPEN_POLICY;
  const checked = (source: string, verified: boolean): void => m.signatureChecked(source, verified);
  // Replay, expiry and node rules on every verified set, recorded in the state dir (freshness.ts).
  const freshness = {
    store: new FreshnessStore(o.runtime.stateDir, log),
    nodeName: nodeName,
    onRefused: (source: string, kind: string) => m.setRefused(source, kind),
  };
  const signatures = (signers: Signer[] | undefined): { signatures?: SignaturePolicy } =>
    signers ? { signatures: { signers, onCheck: checked, freshness } } : {};
  const dirOpts = { resyncMs: o.resyncMs ?? 20_000, removeGraceMs: o.removeGraceMs ?? 1000, policy, log: log, ...signatures(o.dirSigners) };
  return [
    ...o.manifestDirs.map((d) => new DirectorySource(d, dirOpts)),
    ...o.manifestUrls.map(
      (u) =>
        new UrlSource(u, {
          stateDir: o.runtime.stateDir,
          periodMs: o.urlPeriodMs ?? 20_000,
          timeoutMs: o.urlTimeoutMs ?? 10_000,
          policy,
          ...(o.urlHeaders ? { headers: o.urlHeaders } : {}),
          ...(o.urlCaFile ? { caFile: o.urlCaFile } : {}),
          log: log,
          onFetch: (result) => m.fetched(`url:${redactUrl(u)}`, result),
          ...signatures(o.urlSigners),
        }),
    ),
    appliedSource(o.runtime.stateDir, { resyncMs: o.resyncMs ?? 20_000, policy, log: log }),
    ...(o.sources ?? []),
  ];
}
