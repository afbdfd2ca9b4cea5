import { applyDefaults } from './defaults.js';
import { ManifestError, type ManifestIssue } from './errors.js';
import { MAX_POD_BYTES, size } from './limits.js';
import { derivedUid, keyOf } from './identity.js';
import { parseManifestText, type Position } from './parse.js';
import { OPEN_POLICY, type PodPolicy } from './policy.js';
import type { DesiredPod, Pod } from './types.js';
import { validateDocument } from './validate.js';

/** The text of one manifest source: a file's content or a URL's body. */
export interface ManifestText {
  /** Name used in errors: a path or URL. */
  file: string;
  /** Where pods from it are said to come from, e.g. `file:/etc/podrun/web.yaml`. */
  source: string;
  text: string;
}

export interface LoadResult {
  pods: DesiredPod[];
  /** Errors and warnings, in file order. */
  issues: ManifestIssue[];
}

/** A text's result, and where each pod's metadata.name is, for an error about it across a set. */
interface TextResult extends LoadResult {
  /**
   * Found when asked (positions are indexed on the first question). Not kept on the pods: the
   * agent holds its pods for long, and this holds the file's text and parse.
   */
  nameAt: (key: string) => Position | undefined;
}

/** What one text loaded to, as a cache keeps it: its pods (defaulted, with their uids) and its warnings. */
export interface LoadedText {
  pods: { pod: Pod; line: number }[];
  issues: ManifestIssue[];
}

/**
 * Texts already loaded by this build under this policy (src/cli/manifest-cache.ts): a text it
 * knows is not parsed or validated again. Only texts with no error are put in it.
 */
export interface TextCache {
  get(input: ManifestText): LoadedText | undefined;
  put(input: ManifestText, loaded: LoadedText): void;
}

/**
 * Gives the pod its uid (metadata.uid, where every reader finds it), derived on first read: the
 * derivation hashes, and `validate`, which reads no uid, then never loads `node:crypto` (3-4 ms of
 * its start). The property stands where an assignment here would have put it, so the pod's JSON
 * (its sandbox's label, its version hash) is the same byte for byte.
 */
function identifyLazily(pod: Pod): void {
  if (pod.metadata.uid) return;
  const meta = pod.metadata;
  // The key now: the uid is of the pod as loaded, whatever is done to its metadata later.
  const key = keyOf(pod);
  let uid: string | undefined;
  Object.defineProperty(meta, 'uid', {
    enumerable: true,
    configurable: true,
    get: () => (uid ??= derivedUid(key)),
    // Whoever sets it (none today) makes it a plain value again.
    set: (v: string) => Object.defineProperty(meta, 'uid', { value: v, enumerable: true, configurable: true, writable: true }),
  });
}

/** Parses, validates, defaults and identifies the pods in one text. Pure: no I/O. */
export function loadManifestText(input: ManifestText, policy: PodPolicy = OPEN_POLICY): LoadResult {
  const { pods, issues } = loadText(input, policy);
  return { pods, issues };
}

function loadText(input: ManifestText, policy: PodPolicy): TextResult {
  const parsed = parseManifestText(input.text, input.file);
  if (!parsed.ok) return { pods: [], issues: [parsed.issue], nameAt: () => undefined };
  const pods: DesiredPod[] = [];
  const issues: ManifestIssue[] = [];
  const seen = new Map<string, () => Position>();
  for (const doc of parsed.documents) {
    const result = validateDocument(input.file, doc, policy);
    issues.push(...result.issues);
    for (const found of result.pods) {
      const defaulted = applyDefaults(found.pod);
      // What the engine must hold is the defaulted pod (its sandbox carries it as a label).
      const bytes = Buffer.byteLength(JSON.stringify(defaulted));
      if (bytes > MAX_POD_BYTES) {
        const at = doc.positions.locate(found.prefix);
        issues.push({
          file: input.file,
          line: at.line,
          column: at.column,
          field: '',
          severity: 'error',
          message: `pod ${keyOf(defaulted)} is ${size(bytes)} as JSON with its defaults; podrun takes pods up to ${size(MAX_POD_BYTES)} (the engine refuses a container whose configuration nears 1 MiB)`,
        });
        continue;
      }
      identifyLazily(defaulted);
      const key = keyOf(defaulted);
      const first = seen.get(key);
      // A duplicate is pointed at by its name, the line that makes it one. Found only when asked
      // for (a duplicate here or across the set): positions are indexed on the first question.
      const namePath = [...found.prefix, 'metadata', 'name'];
      let named: Position | undefined;
      const nameAt = (): Position => (named ??= doc.positions.locate(namePath, true));
      if (first !== undefined) {
        // One file is one source: the same pod twice in it is a mistake, for apply and the agent alike.
        issues.push({
          file: input.file,
          ...nameAt(),
          field: 'metadata.name',
          severity: 'error',
          message: `pod ${key} is also declared at line ${first().line} of this file`,
        });
        continue;
      }
      seen.set(key, nameAt);
      pods.push(desiredOf(input, defaulted, found.line));
    }
  }
  const nameAt = (key: string): Position | undefined => seen.get(key)?.();
  if (issues.some((i) => i.severity === 'error')) return { pods: [], issues, nameAt };
  return { pods, issues, nameAt };
}

/**
 * Loads a whole set (what one `apply` names): every text must be valid and no pod may be declared
 * twice, else nothing is accepted. Throws ManifestError with every problem found.
 */
export function loadManifestSet(inputs: ManifestText[], policy: PodPolicy = OPEN_POLICY, cache?: TextCache): LoadResult {
  const pods: DesiredPod[] = [];
  const issues: ManifestIssue[] = [];
  const seen = new Map<string, { pod: DesiredPod; nameAt: TextResult['nameAt'] }>();
  let hits = 0;
  for (const input of inputs) {
    const known = cache?.get(input);
    if (known) hits++;
    const r = known ? fromCache(input, known) : loadText(input, policy);
    if (!known && cache && !r.issues.some((i) => i.severity === 'error'))
      cache.put(input, { pods: r.pods.map((p) => ({ pod: p.pod, line: p.origin.line })), issues: r.issues });
    issues.push(...r.issues);
    for (const p of r.pods) {
      const first = seen.get(p.key);
      if (first) {
        const at = r.nameAt(p.key);
        issues.push({
          file: p.origin.file,
          line: at?.line ?? p.origin.line,
          column: at?.column ?? 1,
          field: 'metadata.name',
          severity: 'error',
          message: `pod ${p.key} is also declared at ${first.pod.origin.file}:${first.nameAt(p.key)?.line ?? first.pod.origin.line}`,
        });
        continue;
      }
      seen.set(p.key, { pod: p, nameAt: r.nameAt });
      pods.push(p);
    }
  }
  if (issues.some((i) => i.severity === 'error')) {
    // A known text keeps no positions: loaded again whole, every error points where it would have.
    if (hits > 0) return loadManifestSet(inputs, policy);
    throw new ManifestError(issues);
  }
  return { pods, issues };
}

/** A known text's pods, as loadText would have made them (the uid is a plain value in the cache). */
function fromCache(input: ManifestText, known: LoadedText): TextResult {
  return { pods: known.pods.map(({ pod, line }) => desiredOf(input, pod, line)), issues: known.issues, nameAt: () => undefined };
}

/** A loaded pod as the sources hand it on: its uid read from its metadata, where identifyLazily put it. */
function desiredOf(input: ManifestText, pod: Pod, line: number): DesiredPod {
  return {
    key: keyOf(pod),
    get uid() {
      return pod.metadata.uid as string;
    },
    pod,
    origin: { source: input.source, file: input.file, line },
  };
}
