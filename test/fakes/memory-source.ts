import type { ManifestIssue } from '../../src/manifest/errors.js';
import { loadManifestText } from '../../src/manifest/load.js';
import type { PodPolicy } from '../../src/manifest/policy.js';
import type { DesiredPod } from '../../src/manifest/types.js';
import type { OriginPods } from '../../src/sources/merge.js';
import type { PodSource } from '../../src/sources/source.js';

/** A source whose pods a test sets directly: the agent's view of a source, without files or timers. */
export class MemorySource implements PodSource {
  readonly name: string;
  ready = false;
  private pods: DesiredPod[] = [];
  private issues: ManifestIssue[] = [];
  private onChange: () => void = () => undefined;

  /** `slow`: not loaded at start (a URL that has not answered yet) until `load()`. */
  constructor(
    readonly origin = 'memory:test',
    private readonly slow = false,
  ) {
    this.name = origin;
  }

  /** Declares these manifests (YAML), replacing what was declared. */
  declare(...manifests: string[]): void {
    this.pods = manifests.flatMap((text, i) => {
      const r = loadManifestText({ file: `m${i}.yaml`, source: this.origin, text });
      if (!r.pods.length) throw new Error(r.issues.map((x) => x.message).join('; '));
      return r.pods;
    });
    this.issues = [];
    this.onChange();
  }

  /** Declares these pods, already loaded, replacing what was declared. */
  declarePods(...pods: DesiredPod[]): void {
    this.pods = pods;
    this.issues = [];
    this.onChange();
  }

  snapshot(): OriginPods[] {
    return [{ origin: this.origin, pods: this.pods }];
  }

  /** Reads these manifests as a directory source under `policy` would: a refused one declares nothing and shows in errors(). */
  declareUnder(policy: PodPolicy, ...manifests: string[]): void {
    const loaded = manifests.map((text, i) => loadManifestText({ file: `/etc/podrun/m${i}.yaml`, source: this.origin, text }, policy));
    this.pods = loaded.flatMap((r) => r.pods);
    this.issues = loaded.flatMap((r) => r.issues);
    this.onChange();
  }

  errors(): ManifestIssue[] {
    return this.issues;
  }

  owns(source: string): boolean {
    return source === this.origin;
  }

  canForget(): boolean {
    return this.ready;
  }

  async start(onChange: () => void): Promise<void> {
    this.onChange = onChange;
    this.ready = !this.slow;
  }

  /** A slow source's first load. */
  load(): void {
    this.ready = true;
    this.onChange();
  }

  async stop(): Promise<void> {
    this.onChange = () => undefined;
  }
}
