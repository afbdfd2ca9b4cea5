/**
 * The configuration file (`--config FILE`): YAML or JSON, a PodrunConfiguration whose field names
 * follow the kubelet's KubeletConfiguration where the setting is the same. Checked against
 * schemas/config.schema.json, with the same `file:line:column field: message` errors as manifests.
 */
import { didYouMean } from '../base/did-you-mean.js';
import { readPackageFile } from '../base/package-file.js';
import { Ajv, type ErrorObject } from 'ajv';
import { isIP } from '../base/ip.js';
import { fieldPath, type ManifestIssue } from '../manifest/errors.js';
import { parseManifestText, type PathSegment } from '../manifest/parse.js';
import { readManifestFile } from '../manifest/files.js';

export interface PodrunConfiguration {
  apiVersion: 'podrun.io/v1alpha1';
  kind: 'PodrunConfiguration';
  containerRuntimeEndpoint?: string;
  imageServiceEndpoint?: string;
  podLogsDir?: string;
  stateDir?: string;
  runtimeRequestTimeout?: string;
  podInfraContainerImage?: string;
  network?: string;
  nodeName?: string;
  nodeIP?: string;
  allowPrivileged?: boolean;
  allowHostNamespaces?: boolean;
  allowedHostPaths?: string[];
  allowedUnsafeSysctls?: string[];
  containerLogMaxSize?: string;
  containerLogMaxFiles?: number;
  resolvConf?: string;
  podPidsLimit?: number;
  imageCredentialsFile?: string;
  serializeImagePulls?: boolean;
  maxParallelImagePulls?: number;
  staticPodPath?: string | string[];
  staticPodURL?: string | string[];
  staticPodURLHeader?: Record<string, string[]>;
  staticPodURLCA?: string;
  staticPodURLVerifyKeys?: string | string[];
  staticPodPathVerifyKeys?: string | string[];
  rollbackAfter?: string;
  fileCheckFrequency?: string;
  httpCheckFrequency?: string;
  httpCheckTimeout?: string;
  syncFrequency?: string;
  maxParallelEngineCalls?: number;
  readOnlyPort?: number;
  readOnlyPortTokenFile?: string;
  containerGCPeriod?: string;
  maxPerPodContainerCount?: number;
  maxContainerCount?: number;
  housekeepingInterval?: string;
  evictionHard?: Record<string, string>;
  imageGCEnabled?: boolean;
  imageGCPeriod?: string;
  imageGCHighThresholdPercent?: number;
  imageGCLowThresholdPercent?: number;
  imageMinimumGCAge?: string;
  crashLoopBackOff?: { initialDelay?: string; maxContainerRestartPeriod?: string };
  logging?: { format?: 'json' | 'text'; verbosity?: number; level?: 'debug' | 'info' | 'warn' | 'error' };
}

export type ConfigResult = { ok: true; config: PodrunConfiguration } | { ok: false; issues: ManifestIssue[] };

function segments(instancePath: string): PathSegment[] {
  return instancePath
    ? instancePath
        .slice(1)
        .split('/')
        .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    : [];
}

function describe(e: ErrorObject): { path: PathSegment[]; message: string; atKey?: boolean } {
  const path = segments(e.instancePath);
  const p = e.params as Record<string, unknown>;
  if (e.schemaPath.includes('/duration/')) return { path, message: 'must be a duration such as 20s, 1m30s or 500ms (units: ms, s, m, h)' };
  switch (e.keyword) {
    case 'additionalProperties': {
      // verbose: the object's schema names the fields there are (staticPodPth → staticPodPath).
      const meant = didYouMean(
        String(p.additionalProperty),
        Object.keys((e.parentSchema as { properties?: Record<string, unknown> } | undefined)?.properties ?? {}),
      );
      return {
        path: [...path, String(p.additionalProperty)],
        message: `unknown field: not part of a PodrunConfiguration${meant ? ` (did you mean "${meant}"?)` : ' (see schemas/config.schema.json)'}`,
        atKey: true,
      };
    }
    case 'required':
      return { path: [...path, String(p.missingProperty)], message: 'is required' };
    case 'const':
      return { path, message: `must be ${JSON.stringify(p.allowedValue)}` };
    case 'enum':
      return { path, message: `must be one of: ${(p.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}` };
    case 'anyOf':
      return { path, message: 'must be a string or a list of strings' };
    default:
      return { path, message: e.message ?? e.keyword };
  }
}

let validator: ReturnType<Ajv['compile']> | undefined;

/** Reads and checks a configuration file; never throws for what is in the file. */
export function loadConfigFile(path: string): ConfigResult {
  const read = readManifestFile(path);
  if (read.kind === 'gone')
    return { ok: false, issues: [{ file: path, line: 1, column: 1, field: '', message: 'cannot read: no such file', severity: 'error' }] };
  if (read.kind === 'issue') return { ok: false, issues: [read.issue] };
  const parsed = parseManifestText(read.text, path);
  if (!parsed.ok) return { ok: false, issues: [parsed.issue] };
  const [doc, extra] = parsed.documents;
  if (!doc)
    return { ok: false, issues: [{ file: path, line: 1, column: 1, field: '', message: 'is empty: a PodrunConfiguration is expected', severity: 'error' }] };
  const issues: ManifestIssue[] = [];
  const report = (path_: PathSegment[], message: string, atKey = false): void => {
    const pos = doc.positions.locate(path_, atKey);
    issues.push({ file: path, line: pos.line, column: pos.column, field: fieldPath(path_), message, severity: 'error' });
  };
  if (extra)
    issues.push({
      file: path,
      line: extra.line,
      column: 1,
      field: '',
      message: 'holds more than one document; a configuration file has one',
      severity: 'error',
    });
  validator ??= new Ajv({ allErrors: true, strict: false, verbose: true }).compile(JSON.parse(readPackageFile('schemas/config.schema.json')) as object);
  if (!validator(doc.value)) {
    const seen = new Set<string>();
    for (const e of validator.errors ?? []) {
      // anyOf reports each branch too; the anyOf line says it all.
      if (e.schemaPath.includes('/anyOf/')) continue;
      const d = describe(e);
      const key = `${fieldPath(d.path)}|${d.message}`;
      if (seen.has(key)) continue;
      seen.add(key);
      report(d.path, d.message, d.atKey);
    }
  }
  const c = doc.value as PodrunConfiguration;
  if (issues.length === 0) {
    if (c.nodeIP !== undefined && !isIP(c.nodeIP)) report(['nodeIP'], 'must be an IP address');
    const lo = c.imageGCLowThresholdPercent;
    const hi = c.imageGCHighThresholdPercent;
    if (lo !== undefined && hi !== undefined && lo > hi) report(['imageGCLowThresholdPercent'], `must not be above imageGCHighThresholdPercent (${hi})`);
  }
  return issues.length ? { ok: false, issues } : { ok: true, config: c };
}
