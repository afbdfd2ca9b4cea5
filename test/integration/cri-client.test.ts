import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createServer as createHttp2Server } from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CriClient } from '../../src/runtime/cri/client.js';
import {
  CriExecTimeoutError,
  CriNotFoundError,
  CriNotRuntimeError,
  CriNotSupportedError,
  CriPluginDisabledError,
  CriRequestError,
  CriUnreachableError,
} from '../../src/runtime/cri/errors.js';
import { ContainerState, PodSandboxState, type PodSandboxConfigInput } from '../../src/runtime/cri/messages.js';
import { CRI_TEST_IMAGE, PrivateContainerd } from './cri-engine.js';
import { TEST_IMAGE, unique, until } from './helpers.js';
import { LocalRegistry } from './registry-helpers.js';

const ctrd = new PrivateContainerd();
const scratch = mkdtempSync(join(tmpdir(), 'podrun-cri-test-'));
const timings: Record<string, number> = {};

beforeAll(async () => {
  await ctrd.start();
  ctrd.importTestImages();
}, 60_000);

afterAll(async () => {
  await ctrd.destroy();
  rmSync(scratch, { recursive: true, force: true });
  // The measured figures of this run, beside the reference's (sandbox ~90 ms, container ~90 ms).
  console.log(`CRI timings on containerd 1.6 (ms): ${JSON.stringify(timings)}`);
}, 60_000);

function sandboxConfig(name: string, uid: string): PodSandboxConfigInput {
  return {
    metadata: { name, uid, namespace: 'default', attempt: 0 },
    hostname: name,
    logDirectory: join(ctrd.logDir, `default_${name}_${uid}`),
    labels: { 'io.kubernetes.pod.name': name, 'io.kubernetes.pod.namespace': 'default', 'io.kubernetes.pod.uid': uid, 'podrun.io/test': 'cri-client' },
    annotations: { 'podrun.io/spec-hash': 'abc123', 'kubernetes.io/config.source': 'file' },
    linux: { securityContext: { namespaceOptions: { pid: 1 } } },
  };
}

/** A sandbox with one running `sleep 300` container. */
async function runSleeper(prefix: string): Promise<{ sandbox: string; id: string }> {
  const config = sandboxConfig(unique(prefix), unique('uid'));
  const sandbox = await ctrd.client.runPodSandbox(config);
  const id = await ctrd.client.createContainer(
    sandbox,
    { metadata: { name: 'c' }, image: { image: CRI_TEST_IMAGE }, command: ['sleep', '300'], logPath: 'c/0.log' },
    config,
  );
  await ctrd.client.startContainer(id);
  return { sandbox, id };
}

async function timed<T>(what: string, f: () => Promise<T>): Promise<T> {
  const t = performance.now();
  const v = await f();
  timings[what] = Math.round(performance.now() - t);
  return v;
}

describe('CRI client against a private containerd 1.6', () => {
  it('Version names the runtime and the v1 API', async () => {
    const v = await ctrd.client.version();
    expect(v.runtimeName).toBe('containerd');
    expect(v.runtimeVersion).toMatch(/^v?1\.6\./);
    expect(v.runtimeApiVersion).toBe('v1');
  });

  it('runs a sandbox and a container: status, labels, log file, mounts, exec, list filters, stop and remove', async () => {
    const name = unique('cri');
    const uid = unique('uid');
    const config = sandboxConfig(name, uid);
    const sandbox = await timed('runPodSandbox', () => ctrd.client.runPodSandbox(config));
    const sst = await ctrd.client.podSandboxStatus(sandbox);
    expect(sst.state).toBe(PodSandboxState.READY);
    expect(sst.metadata).toEqual({ name, uid, namespace: 'default', attempt: 0 });
    expect(sst.labels['io.kubernetes.pod.uid']).toBe(uid);
    expect(sst.annotations['podrun.io/spec-hash']).toBe('abc123');
    expect(sst.network?.ip).toMatch(new RegExp(`^${ctrd.subnet.replace(/\./g, '\\.')}\\.\\d+$`));
    expect(sst.createdAt).toBeGreaterThan(1_600_000_000_000_000_000n);

    const hostDir = join(scratch, name);
    mkdirSync(hostDir);
    writeFileSync(join(hostDir, 'greeting'), 'hello from the host\n');
    const containerConfig = {
      metadata: { name: 'main', attempt: 0 },
      image: { image: CRI_TEST_IMAGE },
      command: ['sh', '-c'],
      args: ['cat /data/greeting; echo to-stderr >&2; sleep 300'],
      envs: [{ key: 'GREETING', value: 'hi' }],
      mounts: [{ containerPath: '/data', hostPath: hostDir, readonly: true }],
      labels: { 'io.kubernetes.container.name': 'main', 'io.kubernetes.pod.uid': uid },
      annotations: { 'io.kubernetes.container.restartCount': '0' },
      logPath: 'main/0.log',
    };
    const id = await timed('createAndStartContainer', async () => {
      const cid = await ctrd.client.createContainer(sandbox, containerConfig, config);
      await ctrd.client.startContainer(cid);
      return cid;
    });

    const st = await ctrd.client.containerStatus(id);
    expect(st.state).toBe(ContainerState.RUNNING);
    expect(st.metadata).toEqual({ name: 'main', attempt: 0 });
    expect(st.labels['io.kubernetes.container.name']).toBe('main');
    expect(st.annotations['io.kubernetes.container.restartCount']).toBe('0');
    expect(st.startedAt).toBeGreaterThanOrEqual(st.createdAt);
    expect(st.finishedAt).toBe(0n);
    expect(st.logPath).toBe(join(config.logDirectory ?? '', 'main/0.log'));
    expect(st.mounts).toEqual([expect.objectContaining({ containerPath: '/data', hostPath: hostDir, readonly: true })]);

    // The CRI log format, in the file the kubelet's layout names.
    const log = await until('the container log', async () => {
      const text = (() => {
        try {
          return readFileSync(st.logPath, 'utf8');
        } catch {
          return '';
        }
      })();
      return text.includes('to-stderr') ? text : undefined;
    });
    expect(log).toMatch(/^\S+Z stdout F hello from the host$/m);
    expect(log).toMatch(/^\S+Z stderr F to-stderr$/m);
    await ctrd.client.reopenContainerLog(id);

    const ok = await ctrd.client.execSync(id, ['sh', '-c', 'echo $GREETING; echo err >&2; exit 3'], 5);
    expect(Buffer.from(ok.stdout).toString()).toBe('hi\n');
    expect(Buffer.from(ok.stderr).toString()).toBe('err\n');
    expect(ok.exitCode).toBe(3);

    const url = await ctrd.client.exec(id, ['sh'], { stdin: true, stdout: true, stderr: true });
    expect(new URL(url).hostname).toBe('127.0.0.1');

    // Label filters select this pod's records only.
    const byUid = await ctrd.client.listContainers({ labelSelector: { 'io.kubernetes.pod.uid': uid } });
    expect(byUid.map((c) => c.id)).toEqual([id]);
    expect(byUid[0]?.podSandboxId).toBe(sandbox);
    expect(await ctrd.client.listContainers({ labelSelector: { 'io.kubernetes.pod.uid': 'nobody' } })).toEqual([]);
    const sandboxes = await ctrd.client.listPodSandbox({ labelSelector: { 'io.kubernetes.pod.uid': uid } });
    expect(sandboxes.map((s) => [s.id, s.state, s.annotations['kubernetes.io/config.source']])).toEqual([[sandbox, PodSandboxState.READY, 'file']]);

    await ctrd.client.stopContainer(id, 1);
    const stopped = await ctrd.client.containerStatus(id);
    expect(stopped.state).toBe(ContainerState.EXITED);
    // busybox sh as the container's pid 1 ends on SIGTERM within the grace (143); a kill would be 137.
    expect([143, 137]).toContain(stopped.exitCode);
    expect(stopped.finishedAt).toBeGreaterThan(stopped.startedAt);
    expect(await ctrd.client.listContainers({ state: { state: ContainerState.RUNNING }, podSandboxId: sandbox })).toEqual([]);

    await ctrd.client.removeContainer(id);
    await expect(ctrd.client.containerStatus(id)).rejects.toBeInstanceOf(CriNotFoundError);
    await ctrd.client.stopPodSandbox(sandbox);
    expect((await ctrd.client.podSandboxStatus(sandbox)).state).toBe(PodSandboxState.NOTREADY);
    await ctrd.client.removePodSandbox(sandbox);
    await expect(ctrd.client.podSandboxStatus(sandbox)).rejects.toBeInstanceOf(CriNotFoundError);
  });

  it('ExecSync ends a command at its timeout', async () => {
    const { sandbox, id } = await runSleeper('cri-exec');
    const t = Date.now();
    const err = await ctrd.client.execSync(id, ['sleep', '100'], 1).catch((e: unknown) => e);
    const took = Date.now() - t;
    // containerd answers DeadlineExceeded itself at the timeout, long before the call's own deadline.
    expect(err).toBeInstanceOf(CriExecTimeoutError);
    expect(took).toBeGreaterThanOrEqual(900);
    // The sleep is gone from the container, not left running.
    const ps = await ctrd.client.execSync(id, ['ps', '-o', 'args'], 5);
    expect(Buffer.from(ps.stdout).toString()).not.toMatch(/sleep 100/);
    await ctrd.client.removePodSandbox(sandbox).catch(async () => {
      await ctrd.client.stopPodSandbox(sandbox);
      await ctrd.client.removePodSandbox(sandbox);
    });
  });

  it('ImageService: ListImages, ImageStatus (absent is undefined), ImageFsInfo', async () => {
    const images = await ctrd.client.listImages();
    expect(images.some((i) => i.repoTags.includes(CRI_TEST_IMAGE))).toBe(true);
    const img = await ctrd.client.imageStatus(CRI_TEST_IMAGE);
    expect(img?.repoTags).toContain(CRI_TEST_IMAGE);
    expect(img?.id).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(img?.size).toBeGreaterThan(0n);
    expect(await ctrd.client.imageStatus('docker.io/podrun-test/absent:1')).toBeUndefined();
    const fs = await ctrd.client.imageFsInfo();
    expect(fs.imageFilesystems.length).toBeGreaterThan(0);
    expect(fs.imageFilesystems[0]?.fsId?.mountpoint).toContain(ctrd.dir);
    // containerd 1.6 measures snapshot usage in the background: the figure may still be 0 here.
    expect(typeof fs.imageFilesystems[0]?.usedBytes?.value).toBe('bigint');
    expect(fs.imageFilesystems[0]?.timestamp).toBeGreaterThan(1_600_000_000_000_000_000n);
  });

  it('PullImage with the node credentials (AuthConfig) from a registry with auth; RemoveImage is idempotent', async () => {
    const registry = await new LocalRegistry({ auth: { username: 'podrun', password: 'cri-secret' } }).start();
    try {
      ctrd.trustPlainHttpRegistry(registry.host);
      const ref = await registry.push(TEST_IMAGE, `cri/${unique('busybox')}:1`);
      const anonymous = await ctrd.client.pullImage(ref).catch((e: unknown) => e);
      expect(anonymous).toBeInstanceOf(CriRequestError);
      expect(String(anonymous)).toMatch(/unauthorized|401/i);
      const imageRef = await ctrd.client.pullImage(ref, { username: 'podrun', password: 'cri-secret', serverAddress: registry.host });
      expect(imageRef).toMatch(/^sha256:[0-9a-f]{64}$/);
      expect((await ctrd.client.imageStatus(ref))?.id).toBe(imageRef);
      await ctrd.client.removeImage(ref);
      expect(await ctrd.client.imageStatus(ref)).toBeUndefined();
      // containerd removes an image by its id: every name of it goes, the imported test image's too
      // (the same busybox), as the kubelet's image GC (which removes by id) expects.
      expect(await ctrd.client.imageStatus(CRI_TEST_IMAGE)).toBeUndefined();
      await ctrd.client.removeImage(ref);
    } finally {
      await registry.close();
      ctrd.importTestImages();
    }
  });

  it('containerd restarted under a client: unreachable while down, the same client answers after, the container ran on', async () => {
    const { sandbox, id } = await runSleeper('cri-restart');
    const before = await ctrd.client.containerStatus(id);
    await ctrd.stop();
    const down = await ctrd.client.version().catch((e: unknown) => e);
    expect(down).toBeInstanceOf(CriUnreachableError);
    await ctrd.start();
    await until('the same client to reach the restarted containerd', async () => (await ctrd.client.version().catch(() => undefined)) ?? undefined, 15_000);
    const after = await ctrd.client.containerStatus(id);
    expect(after.state).toBe(ContainerState.RUNNING);
    expect(after.startedAt).toBe(before.startedAt);
    await ctrd.client.stopPodSandbox(sandbox);
    await ctrd.client.removePodSandbox(sandbox);
  });

  it('GetContainerEvents on containerd 1.6 is a typed "not supported"', async () => {
    const events = ctrd.client.containerEvents();
    const err = await events.next().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(CriNotSupportedError);
    expect(String(err)).toMatch(/GetContainerEvents/);
  });
});

describe('CRI client errors', () => {
  it('a socket that does not exist: unreachable, saying so', async () => {
    const c = new CriClient({ endpoint: `unix://${join(scratch, 'nothing.sock')}`, timeoutMs: 5000 });
    const err = await c.version().catch((e: unknown) => e);
    c.close();
    expect(err).toBeInstanceOf(CriUnreachableError);
    expect(String(err)).toMatch(/no such socket/);
  });

  it('a socket that answers HTTP/1 but not gRPC: not a CRI runtime', async () => {
    const sock = join(scratch, 'http.sock');
    const server: Server = createServer((_req, res) => res.end('hello'));
    await new Promise<void>((r) => server.listen(sock, r));
    const c = new CriClient({ endpoint: `unix://${sock}`, timeoutMs: 5000 });
    try {
      const err = await c.version().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(CriNotRuntimeError);
      expect(err).not.toBeInstanceOf(CriPluginDisabledError);
      expect(String(err)).toMatch(/is not a CRI runtime/);
    } finally {
      c.close();
      server.close();
    }
  });

  it('an HTTP/2 server that is not gRPC (a page, a 404, a 500): not a CRI runtime, not "unsupported"', async () => {
    for (const code of [200, 404, 500]) {
      const sock = join(scratch, `h2-${code}.sock`);
      const server = createHttp2Server((_req, res) => {
        res.writeHead(code, { 'content-type': 'text/html' });
        res.end('<html>not a runtime</html>');
      });
      await new Promise<void>((r) => server.listen(sock, r));
      const c = new CriClient({ endpoint: `unix://${sock}`, timeoutMs: 5000 });
      try {
        const err = await c.version().catch((e: unknown) => e);
        expect(err, `HTTP ${code}`).toBeInstanceOf(CriNotRuntimeError);
        expect(String(err)).toMatch(/answers HTTP\/2 but not gRPC/);
      } finally {
        c.close();
        server.close();
      }
    }
  });

  it('containerd with its CRI plugin disabled: the message names disabled_plugins in /etc/containerd/config.toml', async () => {
    const off = new PrivateContainerd({ criDisabled: true });
    try {
      await off.start();
      const err = await off.client.version().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(CriPluginDisabledError);
      expect(String(err)).toMatch(/unknown service runtime\.v1\.RuntimeService/);
      expect(String(err)).toMatch(/disabled_plugins in \/etc\/containerd\/config\.toml/);
      expect(String(err)).toMatch(/containerd 1\.6\./);
    } finally {
      await off.destroy();
    }
  });

  it('an endpoint that is not a unix socket is refused before any connection', () => {
    expect(() => new CriClient({ endpoint: 'tcp://127.0.0.1:1' })).toThrow(CriUnreachableError);
  });
});
