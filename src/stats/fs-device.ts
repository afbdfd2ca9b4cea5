import { readFileSync } from 'node:fs';

// cAdvisor labels a container's filesystem series with the device its files live on: for Docker,
// the filesystem holding the engine's root directory (its layers and its container logs).

/** mountinfo escapes a space, tab, newline and backslash in a path as octal. */
const unescape = (p: string): string => p.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));

/** The source (device) of the mount that holds `path`, from /proc/<pid>/mountinfo's text: the deepest mount point above it. */
export function deviceOf(mountinfo: string, path: string): string | undefined {
  let best: { point: string; source: string } | undefined;
  for (const line of mountinfo.split('\n')) {
    const sep = line.indexOf(' - ');
    if (sep < 0) continue;
    const point = unescape(line.slice(0, sep).split(' ')[4] ?? '');
    const source = unescape(line.slice(sep + 3).split(' ')[1] ?? '');
    if (!point || !source) continue;
    const holds = point === '/' || path === point || path.startsWith(`${point}/`);
    if (holds && (!best || point.length >= best.point.length)) best = { point, source };
  }
  return best?.source;
}

/** The device under `path` on this machine, or undefined when it cannot be told. */
export function localDeviceOf(path: string): string | undefined {
  try {
    return deviceOf(readFileSync('/proc/self/mountinfo', 'utf8'), path);
  } catch {
    return undefined;
  }
}
