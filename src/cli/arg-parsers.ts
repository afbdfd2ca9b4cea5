import { isIP } from '../base/ip.js';
import { InvalidArgumentError, Option } from 'commander';
import { formatDuration, parseDuration } from '../base/duration.js';
import { parseQuantity } from '../manifest/quantity.js';
import { parseEvictionThresholds } from '../stats/node.js';

// The flags' value parsers: each refuses a bad value with the reason, before anything runs.

export function duration(v: string): number {
  try {
    return parseDuration(v);
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
}

/** A duration flag whose help shows its default as it would be written (`20s`, not 20000). */
export function durationOption(flags: string, description: string, defaultMs: number): Option {
  return new Option(flags, description).argParser(duration).default(defaultMs, formatDuration(defaultMs));
}

export function evictionHard(v: string): string {
  try {
    parseEvictionThresholds(v);
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
  return v;
}

export function nonNegativeInt(v: string): number {
  if (!/^\d+$/.test(v)) throw new InvalidArgumentError('must be a whole number of seconds');
  return Number(v);
}

export function logSize(v: string): string {
  let bytes: number;
  try {
    bytes = parseQuantity(v);
  } catch {
    bytes = Number.NaN;
  }
  if (!Number.isFinite(bytes) || bytes < 1) throw new InvalidArgumentError('must be a size such as 10Mi or 500Ki');
  return v;
}

export function logFiles(v: string): number {
  if (!/^\d+$/.test(v) || Number(v) < 2) throw new InvalidArgumentError('must be a whole number, at least 2 (the file being written and one rotated)');
  return Number(v);
}

export function ip(v: string): string {
  if (!isIP(v)) throw new InvalidArgumentError('must be an IP address');
  return v;
}

export function bool(v: string): boolean {
  if (v !== 'true' && v !== 'false') throw new InvalidArgumentError('must be true or false');
  return v === 'true';
}

/** The kubelet's --pod-max-pids: a whole number, -1 (its default) or 0 for no limit. */
export function podMaxPids(v: string): number {
  if (!/^(-1|\d+)$/.test(v)) throw new InvalidArgumentError('must be a whole number of processes, or -1 for no limit');
  return Number(v);
}

export function positiveInt(v: string): number {
  if (!/^\d+$/.test(v) || Number(v) < 1) throw new InvalidArgumentError('must be a whole number, at least 1');
  return Number(v);
}
