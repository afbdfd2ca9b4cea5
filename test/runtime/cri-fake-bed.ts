import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { desired } from '../fixtures/pods.js';
import { CriEngine, type CriEngineOptions } from '../../src/runtime/cri/engine.js';
import { identityOf, type PodIdentity } from '../../src/runtime/labels.js';
import type { Container, DesiredPod } from '../../src/manifest/types.js';
import type { SandboxInfo, StartRequest } from '../../src/runtime/runtime-types.js';
import { containerHash, sandboxHash } from '../../src/manifest/hash.js';
import { FAKE_ENDPOINT, FakeCriRuntime } from '../fakes/fake-cri-runtime.js';

// The CRI engine on the in-memory runtime: its state and log directories in a scratch directory
// of the test's own, no node credentials, no resolver of the host's, and an endpoint that is not a
// unix socket, so nothing reads this host's cgroups or /proc as the runtime's.

export const PAUSE = 'registry.k8s.io/pause:3.9';
export const BUSYBOX = 'docker.io/library/busybox:1.36';

export interface CriBed {
  runtime: FakeCriRuntime;
  engine: CriEngine;
  /** Ids the engine told its created listeners of, with their pod. */
  created: { uid: string; id: string }[];
  dispose(): void;
}

/** `runtime`: one shared with another bed (two podrun instances on one runtime). */
export function criBed(o: Partial<CriEngineOptions> = {}, shared?: FakeCriRuntime): CriBed {
  const dir = mkdtempSync(join(tmpdir(), 'podrun-cri-fake-'));
  const runtime = shared ?? new FakeCriRuntime();
  if (!shared) runtime.addImage(BUSYBOX);
  const engine = new CriEngine(
    {
      runtimeEndpoint: FAKE_ENDPOINT,
      stateDir: join(dir, 'state'),
      podLogsDir: join(dir, 'logs'),
      pauseImage: PAUSE,
      nodeName: 'node-1',
      hostIP: '192.0.2.1',
      resolvConf: join(dir, 'no-resolv.conf'),
      credentialFiles: [],
      ...o,
    },
    runtime,
  );
  const created: { uid: string; id: string }[] = [];
  engine.onCreated((uid, id) => created.push({ uid, id }));
  return {
    runtime,
    engine,
    created,
    dispose: () => {
      engine.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A pod of one busybox container (`app`), by name. */
export function busyboxPod(name: string, extra = ''): DesiredPod {
  return desired(`
apiVersion: v1
kind: Pod
metadata: { name: ${name}, namespace: default }
spec:
  containers:
    - name: app
      image: ${BUSYBOX}
      command: [sleep, '3600']
${extra}`);
}

export function identity(d: DesiredPod): PodIdentity {
  return identityOf(d.pod, d.origin.source);
}

export function appOf(d: DesiredPod, name = 'app'): Container {
  const c = d.pod.spec.containers.find((x) => x.name === name);
  if (!c) throw new Error(`no container ${name}`);
  return c;
}

export function startRequest(d: DesiredPod, c: Container, sandbox: SandboxInfo, over: Partial<StartRequest> = {}): StartRequest {
  return { type: 'app', restartCount: 0, hash: containerHash(d.pod, c), sandbox, volumes: new Map(), engineRestarts: false, ...over };
}

/** The pod made as the executor makes it: its sandbox, then its app container started in it. */
export async function runPod(bed: CriBed, d: DesiredPod): Promise<{ sandbox: SandboxInfo; containerId: string }> {
  const id = identity(d);
  const sandbox = await bed.engine.createSandbox(d.pod, id, 0, sandboxHash(d.pod), false);
  const c = appOf(d);
  const containerId = await bed.engine.startContainer(d.pod, id, c, startRequest(d, c, sandbox));
  return { sandbox, containerId };
}
