import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadManifestText } from '../../src/manifest/load.js';
import { OPEN_POLICY } from '../../src/manifest/policy.js';
import { sandboxHash } from '../../src/manifest/hash.js';
import { identityOf } from '../../src/runtime/labels.js';
import { podSandboxConfig } from '../../src/runtime/kuberuntime/sandbox-config.js';
import { sandboxConfigMessage } from '../../src/runtime/cri/wire-config.js';
import { PodSandboxState } from '../../src/runtime/cri/messages.js';
import type { ContainerdRelease } from './containerd-config.js';
import { CRI_TEST_IMAGE, PrivateContainerd } from './cri-engine.js';
import { unique, until, World } from './helpers.js';

// A sandbox whose network never came up, as containerd keeps it (issue 44: `get pods` showed
// creationTimestamp 1754-08-30, AGE 99444d). With no CNI configuration, RunPodSandbox fails and
// containerd 1.6 keeps the sandbox NOTREADY for its client to remove, its creation time Go's zero
// (containerd 2.1 removes it itself: there is nothing of podrun's to check there, so it has no runner).
// The sandbox is made through the CRI directly, with podrun's config, so this holds whatever
// podrun's own RunPodSandbox does after a failure.

export function zeroTimesSuite(tag: string, release?: ContainerdRelease): void {
  const ctrd = new PrivateContainerd(release ? { release } : {});
  const world = new World();
  beforeAll(async () => {
    await ctrd.start();
    ctrd.importTestImages();
  }, 90_000);
  afterAll(async () => {
    await ctrd.destroy();
    await world.cleanup();
  }, 90_000);
  const cli = (args: string[]) =>
    world.bin(['--container-runtime-endpoint', ctrd.endpoint, '--pod-logs-dir', join(world.dir, 'pod-logs'), ...args], {
      env: { DOCKER_HOST: 'unix:///nonexistent/docker.sock' },
    });

  describe(`zero times from the runtime [${tag}]`, () => {
    it('a sandbox that failed before its network: AGE <unknown>, no creationTimestamp, no Start Time', async () => {
      const ns = unique('zero');
      const name = unique('nonet');
      const r = loadManifestText(
        {
          file: 'p.yaml',
          source: 'file:/p.yaml',
          text: `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  containers: [{name: app, image: ${CRI_TEST_IMAGE}, command: [sleep, '3600']}]
`,
        },
        OPEN_POLICY,
      );
      const pod = r.pods[0]!.pod;
      const config = podSandboxConfig(pod, identityOf(pod, 'file:/p.yaml'), {
        instance: world.instance,
        attempt: 0,
        hash: sandboxHash(pod),
        logRoot: join(world.dir, 'pod-logs'),
      });
      const conflist = join(ctrd.dir, 'cni', '10-podrun.conflist');
      const network = readFileSync(conflist);
      rmSync(conflist);
      try {
        // containerd reloads its CNI configuration when the directory changes: poll until a sandbox fails.
        await until('RunPodSandbox to fail for want of a network', async () => {
          try {
            const id = await ctrd.client.runPodSandbox(sandboxConfigMessage(config));
            await ctrd.client.stopPodSandbox(id);
            await ctrd.client.removePodSandbox(id);
            return undefined;
          } catch {
            return true;
          }
        });
        const kept = (await ctrd.client.listPodSandbox()).filter((s) => s.metadata?.name === name);
        // containerd 1.6 keeps it NOTREADY with Go's zero time through UnixNano (1754-08-30).
        expect(kept.map((s) => [s.state, s.createdAt <= 0n])).toEqual([[PodSandboxState.NOTREADY, true]]);

        const get = await cli(['get', 'pods', '-n', ns]);
        expect(get.code, get.err).toBe(0);
        expect(get.out).toMatch(new RegExp(`^${name}\\s.*\\s<unknown>$`, 'm'));
        const json = await cli(['get', 'pods', '-n', ns, '-o', 'json']);
        expect(json.out).not.toContain('creationTimestamp');
        expect(json.out).not.toMatch(/"(0001|1677|1754|1969|1970)-/);
        const described = await cli(['describe', 'pod', name, '-n', ns]);
        expect(described.out).not.toContain('Start Time');
      } finally {
        // The network back, so the sandbox can be stopped and removed with the rest.
        writeFileSync(conflist, network);
      }
    });
  });
}
