import type { ManifestIssue } from '../manifest/errors.js';
import type { OriginPods } from './merge.js';

export interface SetExpiry {
  origin: string;
  expires: Date;
  version?: number;
}

/** A place pods come from, for the agent: a watched directory, a polled URL, the applied sets. */
export interface PodSource {
  readonly name: string;
  /** Has it loaded once, so that its absence of a pod means the pod is not wanted? */
  readonly ready: boolean;
  /** Its origins' last good pods. */
  snapshot(): OriginPods[];
  /** Current problems (an invalid file keeps its last good pods and shows here). */
  errors(): ManifestIssue[];
  /** With signatures required: who signed what it serves now, `origin: key (signer)`, for the status. */
  signedBy?(): string[];
  /** The expiry of each signed set in force that has one: reported once passed, never enforced on what runs. */
  expiries?(): SetExpiry[];
  /** Whether a pod labelled with `source` came from here (to decide who may delete it). */
  owns(source: string): boolean;
  /**
   * Whether this source knows that a pod labelled `source` (one of its own) is no longer wanted.
   * False while it has not loaded, and for a file that exists but has never been read valid (a
   * truncated applied set after a restart, say): what cannot be read protects its pods.
   */
  canForget(source: string): boolean;
  /** Its files were just written by this process itself (the applied sets, by the agent): read them now, no settle wait. */
  readNow?(): void;
  start(onChange: () => void): Promise<void>;
  stop(): Promise<void>;
}
