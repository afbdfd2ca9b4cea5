import { closeSync, constants, fstatSync, openSync, readFileSync, statSync, type Stats } from 'node:fs';
import { basename, extname } from 'node:path';
import type { ManifestIssue } from './errors.js';
import { MAX_MANIFEST_BYTES, size } from './limits.js';
import { decodeManifest } from './parse.js';

const EXTENSIONS = new Set(['.yaml', '.yml', '.json']);

/**
 * Whether a directory entry is a manifest. Unlike the kubelet (which reads every non-dot file, so
 * a `.bak` copy silently overrides the real manifest: kubernetes #136962, #83708), only YAML and
 * JSON files count, and editor swap/backup/probe files never do.
 */
export function isManifestFileName(path: string): boolean {
  const name = basename(path);
  if (name.startsWith('.') || name.startsWith('#')) return false;
  if (name.endsWith('~') || name === '4913') return false;
  return EXTENSIONS.has(extname(name).toLowerCase());
}

export type FileRead = { kind: 'text'; text: string; bytes: Buffer } | { kind: 'gone' } | { kind: 'issue'; issue: ManifestIssue };

function fileIssue(file: string, message: string): FileRead {
  return { kind: 'issue', issue: { file, line: 1, column: 1, field: '', message, severity: 'error' } };
}

function kindOf(st: Stats): string {
  if (st.isDirectory()) return 'a directory';
  if (st.isFIFO()) return 'a FIFO';
  if (st.isSocket()) return 'a socket';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'a device';
  return 'not a regular file';
}

/**
 * Reads one manifest file, never blocking and never throwing: a FIFO, a device, a directory named
 * `*.yaml`, a symlink loop, a file over the size cap or with invalid UTF-8 becomes an issue with
 * the reason; a file that vanished is `gone`. The file is opened non-blocking and checked through
 * its descriptor, so one swapped for a FIFO after a stat cannot hang the reader.
 */
export function readManifestFile(path: string): FileRead {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'ENOENT') return { kind: 'gone' };
    if (e.code === 'ELOOP') return fileIssue(path, 'cannot read: too many levels of symbolic links (a symlink loop)');
    if (e.code === 'EACCES') return fileIssue(path, 'cannot read: permission denied');
    if (e.code === 'ENXIO') return fileIssue(path, 'cannot read: is a socket or a FIFO with no writer, not a regular file');
    return fileIssue(path, `cannot read: ${e.code ?? e.message}`);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return fileIssue(path, `is ${kindOf(st)}, not a manifest file`);
    if (st.size > MAX_MANIFEST_BYTES) return fileIssue(path, `is larger than ${size(MAX_MANIFEST_BYTES)} (${size(st.size)})`);
    const bytes = readFileSync(fd);
    const decoded = decodeManifest(bytes, path);
    return decoded.ok ? { kind: 'text', text: decoded.text, bytes } : { kind: 'issue', issue: decoded.issue };
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    return fileIssue(path, `cannot read: ${e.code === 'EISDIR' ? 'is a directory' : (e.code ?? e.message)}`);
  } finally {
    closeSync(fd);
  }
}

/**
 * Why a manifest directory or file may not be trusted, or undefined: it must belong to root or to
 * the agent's own user, and no one else may write to it (a file in a world-writable directory,
 * or a group-writable file, is a root shell for whoever can write there).
 */
export function writableByOthers(path: string): string | undefined {
  let st;
  try {
    st = statSync(path);
  } catch {
    return undefined;
  }
  const me = process.getuid?.() ?? 0;
  const what = st.isDirectory() ? 'directory' : 'file';
  if (st.uid !== 0 && st.uid !== me) return `${what} belongs to uid ${st.uid}, not root or the agent's user; refusing it (fix: chown root ${path})`;
  if (st.mode & 0o022)
    return `${what} is writable by ${st.mode & 0o002 ? 'everyone' : 'its group'} (mode ${(st.mode & 0o7777).toString(8).padStart(4, '0')}); refusing it (fix: chmod go-w ${path})`;
  return undefined;
}

/** Identifies one write of a file (inode, size, change time in ns): any write changes it. */
export function stampOf(path: string): string {
  try {
    const st = statSync(path, { bigint: true });
    return `${st.ino}:${st.size}:${st.ctimeNs}:${st.mtimeNs}`;
  } catch {
    return 'gone';
  }
}
