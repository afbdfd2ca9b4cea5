import { readFileSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { parseResolvConf, type ResolvConf } from './dns.js';

// What the runtime reads of the node it runs on, once, when it is made.

/**
 * Lowering a process's oom_score_adj takes CAP_SYS_RESOURCE. Where the node lacks it (some VMs
 * and nested containers), the engine fails to start a container asked for a negative value, so
 * podrun asks for 0 at the lowest there. Only a local engine can be judged from here.
 */
export function oomScoreFloor(endpoint: string): number {
  if (!endpoint.startsWith('unix://') && !endpoint.startsWith('/')) return -1000;
  try {
    const eff = /^CapEff:\s*([0-9a-f]+)$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
    const CAP_SYS_RESOURCE = 24n;
    return eff !== undefined && (BigInt(`0x${eff}`) >> CAP_SYS_RESOURCE) & 1n ? -1000 : 0;
  } catch {
    return -1000;
  }
}

/** The node's resolver configuration; one that cannot be read counts as empty, as the kubelet takes it. */
export function nodeResolvConf(path: string): ResolvConf {
  try {
    return parseResolvConf(readFileSync(path, 'utf8'));
  } catch {
    return { nameservers: [], searches: [], options: [] };
  }
}

export function defaultHostIP(): string {
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return '127.0.0.1';
}
