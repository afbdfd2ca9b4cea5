import { existsSync } from 'node:fs';
import { join } from 'node:path';

// Which containerd a private test runtime runs, and the config.toml each one takes. containerd
// 1.6 is the machine's (Debian bookworm's package); 2.x is Debian unstable's, unpacked by
// scripts/containerd2 into the test cache and run with bookworm's runc. 2.x takes a version-3
// config: its CRI plugin is split into images and runtime plugins (a version-2 file is migrated
// at every start, with a warning).

export interface ContainerdRelease {
  /** For test names and messages: `containerd 1.6`, `containerd 2`. */
  readonly name: string;
  readonly binary: string;
  /** The runc v2 shim of the same release (containerd looks one up on PATH before its own directory). */
  readonly shim: string;
  readonly configVersion: 2 | 3;
}

const CACHE = process.env['PODRUN_TEST_CACHE'] ?? '/var/cache/podrun-test';

export const CONTAINERD_1_6: ContainerdRelease = {
  name: 'containerd 1.6',
  binary: '/usr/bin/containerd',
  shim: '/usr/bin/containerd-shim-runc-v2',
  configVersion: 2,
};

export const CONTAINERD_2: ContainerdRelease = {
  name: 'containerd 2',
  binary: join(CACHE, 'containerd2/usr/bin/containerd'),
  shim: join(CACHE, 'containerd2/usr/bin/containerd-shim-runc-v2'),
  configVersion: 3,
};

/** Fails with what to run when a release's binary is not there (scripts/setup --test fetches 2.x). */
export function checkInstalled(r: ContainerdRelease): void {
  if (!existsSync(r.binary)) throw new Error(`${r.name} is not at ${r.binary}: run scripts/setup --test (it runs scripts/containerd2)`);
}

/** Where one private containerd keeps everything of its own. */
export interface ContainerdPaths {
  dir: string;
  socket: string;
  cniConf: string;
  pauseImage: string;
  criDisabled: boolean;
}

/** Debian's runc for bookworm (the one runc on the machine). */
const RUNC = existsSync('/usr/sbin/runc') ? '/usr/sbin/runc' : '/usr/bin/runc';

function common(p: ContainerdPaths, version: number, criPlugin: string): string[] {
  return [
    `version = ${version}`,
    `root = "${p.dir}/root"`,
    `state = "${p.dir}/state"`,
    p.criDisabled ? `disabled_plugins = ["${criPlugin}"]` : '',
    '[grpc]',
    `  address = "${p.socket}"`,
    '[ttrpc]',
    `  address = "${p.socket}.ttrpc"`,
    '[debug]',
    '  address = ""',
    '[metrics]',
    '  address = ""',
  ];
}

export function containerdConfig(r: ContainerdRelease, p: ContainerdPaths): string {
  const lines = r.configVersion === 2 ? version2(p) : version3(r, p);
  return lines.join('\n') + '\n';
}

function version2(p: ContainerdPaths): string[] {
  const cri = 'plugins."io.containerd.grpc.v1.cri"';
  return [
    ...common(p, 2, 'io.containerd.grpc.v1.cri'),
    `[${cri}]`,
    `  sandbox_image = "${p.pauseImage}"`,
    // This VM has no CAP_SYS_RESOURCE: runc would refuse the sandbox's oom_score_adj of -998.
    '  restrict_oom_score_adj = true',
    '  stream_server_address = "127.0.0.1"',
    '  stream_server_port = "0"',
    '  enable_selinux = false',
    // Registries' hosts.toml, read at each pull, so a test may add its registry after the start.
    `[${cri}.registry]`,
    `  config_path = "${p.dir}/certs.d"`,
    `[${cri}.cni]`,
    '  bin_dir = "/usr/lib/cni"',
    `  conf_dir = "${p.cniConf}"`,
    '  max_conf_num = 1',
    `[${cri}.containerd]`,
    '  snapshotter = "overlayfs"',
    '  default_runtime_name = "runc"',
    `[${cri}.containerd.runtimes.runc]`,
    '  runtime_type = "io.containerd.runc.v2"',
    `[${cri}.containerd.runtimes.runc.options]`,
    // runc's state of its own, so nothing lands in the machine's /run/containerd/runc.
    `  Root = "${p.dir}/runc"`,
  ];
}

function version3(r: ContainerdRelease, p: ContainerdPaths): string[] {
  const images = 'plugins."io.containerd.cri.v1.images"';
  const runtime = 'plugins."io.containerd.cri.v1.runtime"';
  return [
    ...common(p, 3, 'io.containerd.grpc.v1.cri'),
    '[plugins."io.containerd.grpc.v1.cri"]',
    '  stream_server_address = "127.0.0.1"',
    '  stream_server_port = "0"',
    `[${images}]`,
    '  snapshotter = "overlayfs"',
    `[${images}.pinned_images]`,
    `  sandbox = "${p.pauseImage}"`,
    `[${images}.registry]`,
    `  config_path = "${p.dir}/certs.d"`,
    `[${runtime}]`,
    // As for 1.6: no CAP_SYS_RESOURCE here.
    '  restrict_oom_score_adj = true',
    '  enable_selinux = false',
    `[${runtime}.cni]`,
    '  bin_dirs = ["/usr/lib/cni"]',
    `  conf_dir = "${p.cniConf}"`,
    '  max_conf_num = 1',
    `[${runtime}.containerd]`,
    '  default_runtime_name = "runc"',
    `[${runtime}.containerd.runtimes.runc]`,
    '  runtime_type = "io.containerd.runc.v2"',
    // This release's shim, not bookworm's 1.6 one that PATH finds first.
    `  runtime_path = "${r.shim}"`,
    `[${runtime}.containerd.runtimes.runc.options]`,
    `  Root = "${p.dir}/runc"`,
    `  BinaryName = "${RUNC}"`,
  ];
}
