import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { load } from 'js-yaml';
import { afterEach, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';

const dir = mkdtempSync(join(tmpdir(), 'podrun-config-'));

async function cli(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(['node', 'podrun', ...args], {
    out: (l) => out.push(l),
    err: (l) => err.push(l),
    stdout: new PassThrough(),
    stderr: new PassThrough(),
    isTTY: false,
  });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

function file(name: string, text: string): string {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
}

const touched: string[] = [];
function env(name: string, value: string): void {
  touched.push(name);
  process.env[name] = value;
}
afterEach(() => {
  for (const n of touched.splice(0)) delete process.env[n];
});

describe('the configuration file', () => {
  const config = file(
    'config.yaml',
    `apiVersion: podrun.io/v1alpha1
kind: PodrunConfiguration
stateDir: /srv/from-file
podInfraContainerImage: pause:from-file
staticPodPath: /etc/kubernetes/manifests
staticPodURL: [https://example.invalid/pods.yaml]
staticPodURLHeader: {Authorization: [Bearer t], X-Node: [a, b]}
syncFrequency: 1m30s
fileCheckFrequency: 500ms
readOnlyPort: 10255
imageGCHighThresholdPercent: 90
crashLoopBackOff: {maxContainerRestartPeriod: 2m}
logging: {format: text, verbosity: 4}
`,
  );

  it("takes relative paths in the file from the file's directory, as the kubelet does; flags stay relative to the working directory", async () => {
    const relative = file(
      'relative.yaml',
      `apiVersion: podrun.io/v1alpha1
kind: PodrunConfiguration
stateDir: state
staticPodPath: [manifests, /abs/manifests]
staticPodURLCA: certs/ca.pem
staticPodURLVerifyKeys: keys/allowed_signers
staticPodPathVerifyKeys: [keys/usb.pub]
`,
    );
    const r = await cli('run', '--config', relative, '--print-config');
    expect(r.err).toBe('');
    expect(load(r.out)).toMatchObject({
      stateDir: join(dir, 'state'),
      staticPodPath: [join(dir, 'manifests'), '/abs/manifests'],
      staticPodURLCA: join(dir, 'certs/ca.pem'),
      staticPodURLVerifyKeys: [join(dir, 'keys/allowed_signers')],
      staticPodPathVerifyKeys: [join(dir, 'keys/usb.pub')],
    });
    const flag = await cli('run', '--config', relative, '--print-config', '--manifest-dir', 'here');
    expect((load(flag.out) as { staticPodPath: string[] }).staticPodPath).toEqual(['here']);
  });

  it('fills what flags and PODRUN_* variables leave unset (flags > environment > file > defaults)', async () => {
    env('PODRUN_PAUSE_IMAGE', 'pause:from-env');
    env('PODRUN_RELIST_PERIOD', '45s');
    env('PODRUN_IMAGE_GC_HIGH_THRESHOLD', '95');
    const r = await cli('run', '--config', config, '--print-config', '--image-gc-high-threshold', '99', '--manifest-dir', '/from/flag');
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    const c = load(r.out) as Record<string, unknown>;
    expect(c).toMatchObject({
      apiVersion: 'podrun.io/v1alpha1',
      kind: 'PodrunConfiguration',
      stateDir: '/srv/from-file', // file over default
      podInfraContainerImage: 'pause:from-env', // environment over file
      syncFrequency: '45s', // environment over file
      imageGCHighThresholdPercent: 99, // flag over environment
      staticPodPath: ['/from/flag'], // flag over file
      staticPodURL: ['https://example.invalid/pods.yaml'],
      staticPodURLHeader: { Authorization: ['Bearer t'], 'X-Node': ['a', 'b'] },
      fileCheckFrequency: '500ms',
      readOnlyPort: 10255,
      httpCheckFrequency: '20s', // default
      crashLoopBackOff: { initialDelay: '10s', maxContainerRestartPeriod: '2m0s' },
      logging: { format: 'text', verbosity: 4 },
    });
    // What --print-config prints is itself a valid configuration file that means the same.
    for (const n of touched.splice(0)) delete process.env[n];
    const again = await cli('run', '--config', file('printed.yaml', r.out), '--print-config');
    expect(again.code).toBe(0);
    expect(load(again.out)).toEqual(c);
  });

  it("takes the pull settings by the kubelet's names, and refuses parallel pulls with serialized ones as its validation does", async () => {
    const cfg = file(
      'pulls.yaml',
      'apiVersion: podrun.io/v1alpha1\nkind: PodrunConfiguration\nserializeImagePulls: false\nmaxParallelImagePulls: 3\nimageCredentialsFile: creds/config.json\n',
    );
    const r = await cli('run', '--config', cfg, '--print-config');
    expect(r.err).toBe('');
    expect(load(r.out)).toMatchObject({ serializeImagePulls: false, maxParallelImagePulls: 3, imageCredentialsFile: join(dir, 'creds/config.json') });
    const bad = await cli('--max-parallel-image-pulls', '2', 'get', 'pods');
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('maxParallelImagePulls must be 1 when serializeImagePulls is true');
  });

  it("takes the kubelet's podPidsLimit, with --pod-max-pids over it, and refuses what is no number of processes", async () => {
    const cfg = file('pids.yaml', 'apiVersion: podrun.io/v1alpha1\nkind: PodrunConfiguration\npodPidsLimit: 1024\n');
    expect(load((await cli('run', '--config', cfg, '--print-config')).out)).toMatchObject({ podPidsLimit: 1024 });
    expect(load((await cli('run', '--config', cfg, '--print-config', '--pod-max-pids', '-1')).out)).toMatchObject({ podPidsLimit: -1 });
    expect(load((await cli('run', '--print-config')).out)).toMatchObject({ podPidsLimit: -1 });
    const bad = await cli('run', '--print-config', '--pod-max-pids', 'lots');
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('must be a whole number of processes, or -1 for no limit');
    const badFile = await cli(
      'run',
      '--config',
      file('pids-bad.yaml', 'apiVersion: podrun.io/v1alpha1\nkind: PodrunConfiguration\npodPidsLimit: -5\n'),
      '--print-config',
    );
    expect(badFile.code).toBe(2);
    expect(badFile.err).toContain('podPidsLimit');
  });

  it('refuses a bad file with file:line:column, the field and the reason, and exits 2', async () => {
    const bad = file(
      'bad.yaml',
      `apiVersion: podrun.io/v1alpha1
kind: PodrunConfiguration
syncFrequency: 60
fileCheckFrequency: 1m30
staticPodPth: /etc/kubernetes/manifests
readOnlyPort: http
logging:
  format: xml
crashLoopBackOff: {initialDelay: 10s, maxRestart: 1m}
nodeIP: not-an-ip
`,
    );
    const r = await cli('run', '--config', bad, '--print-config');
    expect(r.code).toBe(2);
    expect(r.err.split('\n').sort()).toEqual(
      [
        `podrun: ${bad}:3:16 syncFrequency: must be a duration such as 20s, 1m30s or 500ms (units: ms, s, m, h)`,
        `podrun: ${bad}:4:21 fileCheckFrequency: must be a duration such as 20s, 1m30s or 500ms (units: ms, s, m, h)`,
        `podrun: ${bad}:5:1 staticPodPth: unknown field: not part of a PodrunConfiguration (did you mean "staticPodPath"?)`,
        `podrun: ${bad}:6:15 readOnlyPort: must be integer`,
        `podrun: ${bad}:8:11 logging.format: must be one of: "json", "text"`,
        `podrun: ${bad}:9:39 crashLoopBackOff.maxRestart: unknown field: not part of a PodrunConfiguration (see schemas/config.schema.json)`,
      ].sort(),
    );
    const ip = await cli(
      'run',
      '--config',
      file('ip.yaml', 'apiVersion: podrun.io/v1alpha1\nkind: PodrunConfiguration\nnodeIP: not-an-ip\n'),
      '--print-config',
    );
    expect(ip.err).toBe(`podrun: ${join(dir, 'ip.yaml')}:3:9 nodeIP: must be an IP address`);
    const kind = await cli('run', '--config', file('kind.yaml', 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n'), '--print-config');
    expect(kind.err).toContain(`kind.yaml:1:13 apiVersion: must be "podrun.io/v1alpha1"`);
    const missing = await cli('get', 'pods', '--config', join(dir, 'nope.yaml'));
    expect(missing).toMatchObject({ code: 2, err: `podrun: ${join(dir, 'nope.yaml')}:1:1 cannot read: no such file` });
  });
});

describe('the engine the configuration chooses', () => {
  const stateDir = mkdtempSync(join(tmpdir(), 'podrun-engine-choice-'));
  const withEndpoint = (name: string, endpoint: string): string =>
    file(name, `apiVersion: podrun.io/v1alpha1\nkind: PodrunConfiguration\nstateDir: ${stateDir}\ncontainerRuntimeEndpoint: ${endpoint}\n`);

  it('a CRI socket in containerRuntimeEndpoint (or PODRUN_CONTAINER_RUNTIME_ENDPOINT) is a CRI runtime, as for the kubelet', async () => {
    const r = await cli('--config', withEndpoint('cri.yaml', 'unix:///nonexistent/containerd.sock'), 'get', 'pods');
    expect(r.code).toBe(3);
    expect(r.err).toMatch(/cannot reach the container runtime at unix:\/\/\/nonexistent\/containerd\.sock: no such socket/);
    env('PODRUN_CONTAINER_RUNTIME_ENDPOINT', '/nonexistent/crio.sock');
    expect((await cli('--state-dir', stateDir, 'get', 'pods')).err).toMatch(/container runtime at unix:\/\/\/nonexistent\/crio\.sock/);
  });

  it('a Docker socket there is still the Docker engine, as the field meant before CRI', async () => {
    const r = await cli('--config', withEndpoint('docker.yaml', 'unix:///nonexistent/docker.sock'), 'get', 'pods');
    expect(r.code).toBe(3);
    expect(r.err).toMatch(/cannot reach the Docker engine at unix:\/\/\/nonexistent\/docker\.sock/);
  });
});
