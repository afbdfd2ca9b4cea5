/**
 * How the configuration file meets the flags: each file field names the flag it stands for, and
 * the file fills only what neither a flag nor an environment variable set (flags > environment >
 * file > defaults). The same table prints the effective configuration back in the file's form.
 */
import { resolve } from 'node:path';
import { formatDuration, parseDuration } from '../base/duration.js';
import type { PodrunConfiguration } from './config-file.js';

/** What of a parsed command this needs (commander's Command has it). */
export interface OptionHolder {
  getOptionValue(key: string): unknown;
  getOptionValueSource(key: string): string | undefined;
  setOptionValueWithSource(key: string, value: unknown, source: 'config'): unknown;
}

interface Field {
  /** Path in the file. */
  path: string[];
  /** The flag's attribute name (commander's camelCase of the long flag). */
  option: string;
  /** Options of every command (global) or of `podrun run` only. */
  scope: 'global' | 'run';
  toOption?: (v: unknown) => unknown;
  toFile?: (v: unknown) => unknown;
  /** Holds file paths: a relative one is taken from the file's own directory, as the kubelet does. */
  paths?: true;
}

const duration = { toOption: (v: unknown) => parseDuration(String(v)), toFile: (v: unknown) => (typeof v === 'number' ? formatDuration(v) : v) };
const list = { toOption: (v: unknown) => (Array.isArray(v) ? v : [v]), toFile: (v: unknown) => v };

const FIELDS: Field[] = [
  { path: ['containerRuntimeEndpoint'], option: 'containerRuntimeEndpoint', scope: 'global' },
  { path: ['imageServiceEndpoint'], option: 'imageServiceEndpoint', scope: 'global' },
  { path: ['podLogsDir'], option: 'podLogsDir', scope: 'global', paths: true },
  { path: ['stateDir'], option: 'stateDir', scope: 'global', paths: true },
  { path: ['runtimeRequestTimeout'], option: 'runtimeRequestTimeout', scope: 'global', ...duration },
  { path: ['podInfraContainerImage'], option: 'pauseImage', scope: 'global' },
  { path: ['network'], option: 'network', scope: 'global' },
  { path: ['nodeName'], option: 'nodeName', scope: 'global' },
  { path: ['nodeIP'], option: 'nodeIp', scope: 'global' },
  { path: ['allowPrivileged'], option: 'allowPrivileged', scope: 'global' },
  { path: ['allowHostNamespaces'], option: 'allowHostNamespaces', scope: 'global' },
  {
    path: ['allowedHostPaths'],
    option: 'allowedHostPaths',
    scope: 'global',
    toOption: (v) => (v as string[]).join(','),
    toFile: (v) =>
      String(v)
        .split(',')
        .map((p) => p.trim())
        .filter(Boolean),
  },
  {
    path: ['allowedUnsafeSysctls'],
    option: 'allowedUnsafeSysctls',
    scope: 'global',
    toOption: (v) => (v as string[]).join(','),
    toFile: (v) =>
      String(v)
        .split(',')
        .map((p) => p.trim())
        .filter(Boolean),
  },
  { path: ['containerLogMaxSize'], option: 'containerLogMaxSize', scope: 'global' },
  { path: ['containerLogMaxFiles'], option: 'containerLogMaxFiles', scope: 'global' },
  { path: ['resolvConf'], option: 'resolvConf', scope: 'global', paths: true },
  { path: ['podPidsLimit'], option: 'podMaxPids', scope: 'global' },
  { path: ['imageCredentialsFile'], option: 'imageCredentials', scope: 'global', paths: true },
  { path: ['serializeImagePulls'], option: 'serializeImagePulls', scope: 'global' },
  { path: ['maxParallelImagePulls'], option: 'maxParallelImagePulls', scope: 'global' },
  { path: ['staticPodPath'], option: 'manifestDir', scope: 'run', ...list, paths: true },
  { path: ['staticPodURL'], option: 'manifestUrl', scope: 'run', ...list },
  {
    path: ['staticPodURLHeader'],
    option: 'manifestUrlHeader',
    scope: 'run',
    toOption: (v) => Object.entries(v as Record<string, string[]>).flatMap(([name, values]) => values.map((x) => `${name}: ${x}`)),
    toFile: (v) => {
      const out: Record<string, string[]> = {};
      for (const h of v as string[]) {
        const i = h.indexOf(':');
        const name = h.slice(0, i).trim();
        (out[name] ??= []).push(h.slice(i + 1).trim());
      }
      return out;
    },
  },
  { path: ['staticPodURLCA'], option: 'manifestUrlCa', scope: 'run', paths: true },
  { path: ['staticPodURLVerifyKeys'], option: 'manifestUrlVerifyKey', scope: 'run', ...list, paths: true },
  { path: ['staticPodPathVerifyKeys'], option: 'manifestDirVerifyKey', scope: 'run', ...list, paths: true },
  { path: ['rollbackAfter'], option: 'rollbackAfter', scope: 'run', ...duration },
  { path: ['fileCheckFrequency'], option: 'resyncPeriod', scope: 'run', ...duration },
  { path: ['httpCheckFrequency'], option: 'urlPeriod', scope: 'run', ...duration },
  { path: ['httpCheckTimeout'], option: 'urlTimeout', scope: 'run', ...duration },
  { path: ['syncFrequency'], option: 'relistPeriod', scope: 'run', ...duration },
  { path: ['maxParallelEngineCalls'], option: 'maxParallel', scope: 'run' },
  { path: ['readOnlyPort'], option: 'httpPort', scope: 'run', toOption: (v) => (v === 0 ? undefined : v), toFile: (v) => v ?? 0 },
  { path: ['readOnlyPortTokenFile'], option: 'httpTokenFile', scope: 'run', paths: true },
  { path: ['containerGCPeriod'], option: 'gcPeriod', scope: 'run', ...duration },
  { path: ['maxPerPodContainerCount'], option: 'maximumDeadContainersPerContainer', scope: 'run' },
  { path: ['maxContainerCount'], option: 'maximumDeadContainers', scope: 'run' },
  { path: ['housekeepingInterval'], option: 'housekeepingInterval', scope: 'run', ...duration },
  { path: ['imageGCEnabled'], option: 'imageGc', scope: 'run' },
  { path: ['imageGCPeriod'], option: 'imageGcPeriod', scope: 'run', ...duration },
  { path: ['imageGCHighThresholdPercent'], option: 'imageGcHighThreshold', scope: 'run' },
  { path: ['imageGCLowThresholdPercent'], option: 'imageGcLowThreshold', scope: 'run' },
  { path: ['imageMinimumGCAge'], option: 'imageMinimumGcAge', scope: 'run', ...duration },
  { path: ['crashLoopBackOff', 'initialDelay'], option: 'crashBackoffInitial', scope: 'run', ...duration },
  { path: ['crashLoopBackOff', 'maxContainerRestartPeriod'], option: 'crashBackoffMax', scope: 'run', ...duration },
  {
    path: ['evictionHard'],
    option: 'evictionHard',
    scope: 'run',
    // KubeletConfiguration's map (signal: threshold), the flag's list.
    toOption: (v) =>
      Object.entries(v as Record<string, string>)
        .map(([signal, t]) => `${signal}<${t}`)
        .join(','),
    toFile: (v) =>
      Object.fromEntries(
        String(v)
          .split(',')
          .filter(Boolean)
          .map((p) => p.split('<') as [string, string]),
      ),
  },
  { path: ['logging', 'format'], option: 'logFormat', scope: 'run' },
  { path: ['logging', 'verbosity'], option: 'v', scope: 'run' },
  { path: ['logging', 'level'], option: 'logLevel', scope: 'run' },
];

function get(obj: unknown, path: string[]): unknown {
  let v = obj;
  for (const k of path) v = v && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined;
  return v;
}

function set(obj: Record<string, unknown>, path: string[], value: unknown): void {
  let o = obj;
  for (const k of path.slice(0, -1)) o = (o[k] ??= {}) as Record<string, unknown>;
  o[path[path.length - 1]!] = value;
}

/**
 * Fills, from the file, each option that no flag or environment variable set. Relative paths in
 * the file are taken from the file's directory (`fileDir`), as the kubelet's resolveRelativePaths
 * does (pkg/kubelet/kubeletconfig/configfiles): the file reads the same from any working directory.
 */
export function applyConfig(config: PodrunConfiguration, global: OptionHolder, run: OptionHolder | undefined, fileDir?: string): void {
  for (const f of FIELDS) {
    const holder = f.scope === 'global' ? global : run;
    if (!holder) continue;
    let v = get(config, f.path);
    if (v === undefined) continue;
    if (f.paths && fileDir !== undefined) {
      const from = (p: unknown): unknown => (typeof p === 'string' && p !== '' ? resolve(fileDir, p) : p);
      v = Array.isArray(v) ? v.map(from) : from(v);
    }
    const source = holder.getOptionValueSource(f.option);
    if (source === 'cli' || source === 'env') continue;
    holder.setOptionValueWithSource(f.option, f.toOption ? f.toOption(v) : v, 'config');
  }
}

/** The configuration in force, in the file's form: what `podrun run --print-config` shows. */
export function effectiveConfig(global: OptionHolder, run: OptionHolder): PodrunConfiguration {
  const out: Record<string, unknown> = { apiVersion: 'podrun.io/v1alpha1', kind: 'PodrunConfiguration' };
  for (const f of FIELDS) {
    const v = (f.scope === 'global' ? global : run).getOptionValue(f.option);
    if (v === undefined && f.option !== 'httpPort') continue;
    set(out, f.path, f.toFile ? f.toFile(v) : v);
  }
  return out as unknown as PodrunConfiguration;
}
