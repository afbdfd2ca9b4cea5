import { isIP } from '../base/ip.js';
import type { PodDNSConfig } from '../manifest/types.js';

// The kubelet's pod DNS (pkg/kubelet/network/dns/dns.go): with no cluster DNS, ClusterFirst falls
// back to Default, which is the node's resolv.conf; a pod's dnsConfig is appended to it
// (appendDNSConfig), never put in its place; dnsPolicy None is the dnsConfig alone. The engine
// replaces the node's servers when given any, so podrun hands it the merged lists.

/** The kubelet's limits (validation.MaxDNSNameservers, MaxDNSSearchPaths, MaxDNSSearchListChars). */
export const MAX_NAMESERVERS = 3;
export const MAX_SEARCHES = 32;
export const MAX_SEARCH_CHARS = 2048;

export interface ResolvConf {
  nameservers: string[];
  searches: string[];
  options: string[];
}

/** resolv.conf as the kubelet parses it (parseResolvConf): the last search/domain line wins. */
export function parseResolvConf(text: string): ResolvConf {
  const out: ResolvConf = { nameservers: [], searches: [], options: [] };
  for (const raw of text.split('\n')) {
    const line = raw.replace(/[#;].*$/, '').trim();
    const [key, ...fields] = line.split(/\s+/);
    if (key === 'nameserver' && fields[0]) out.nameservers.push(fields[0]);
    else if (key === 'search' || key === 'domain') out.searches = fields;
    else if (key === 'options') out.options.push(...fields);
  }
  return out;
}

function unique(xs: string[]): string[] {
  return [...new Set(xs)];
}

/** Search paths within the kubelet's limits: the first 32, and no more than 2048 characters in all. */
function limitSearches(xs: string[]): string[] {
  const out: string[] = [];
  let chars = 0;
  for (const s of xs.slice(0, MAX_SEARCHES)) {
    chars += s.length + (out.length ? 1 : 0);
    if (chars > MAX_SEARCH_CHARS) break;
    out.push(s);
  }
  return out;
}

/** Options by name, the pod's overriding the node's (the kubelet's mergeDNSOptions). */
function mergeOptions(node: string[], pod: string[]): string[] {
  const byName = new Map<string, string>();
  for (const o of [...node, ...pod]) byName.set(o.split(':')[0] ?? o, o);
  return [...byName.values()];
}

/**
 * The resolver a pod gets, as engine options. undefined: the node's file unchanged (the engine
 * copies it). A loopback server of the node (a local cache such as systemd-resolved) is dropped
 * for pods with their own network, where it would be the pod's own loopback, as the engine does.
 */
export function podDns(dnsPolicy: string | undefined, config: PodDNSConfig | undefined, node: ResolvConf, hostNetwork: boolean): ResolvConf | undefined {
  const pod = {
    nameservers: config?.nameservers ?? [],
    searches: config?.searches ?? [],
    options: (config?.options ?? []).map((x) => (x.value !== undefined ? `${x.name}:${x.value}` : x.name)),
  };
  if (dnsPolicy === 'None')
    return { nameservers: pod.nameservers.slice(0, MAX_NAMESERVERS), searches: limitSearches(unique(pod.searches)), options: pod.options };
  if (!pod.nameservers.length && !pod.searches.length && !pod.options.length) return undefined;
  const reachable = hostNetwork ? node.nameservers : node.nameservers.filter((n) => !isLoopback(n));
  return {
    nameservers: unique([...reachable, ...pod.nameservers]).slice(0, MAX_NAMESERVERS),
    searches: limitSearches(unique([...node.searches, ...pod.searches])),
    options: mergeOptions(node.options, pod.options),
  };
}

function isLoopback(ip: string): boolean {
  return isIP(ip) === 4 ? ip.startsWith('127.') : ip === '::1';
}
