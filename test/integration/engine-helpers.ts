import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { PAUSE_IMAGE, TEST_IMAGE, until } from './helpers.js';

function ip(...args: string[]): void {
  const r = spawnSync('ip', args, { encoding: 'utf8' });
  if (r.status !== 0 && !/File exists/.test(r.stderr)) throw new Error(`ip ${args.join(' ')}: ${r.stderr.trim()}`);
}

/**
 * A second, private Docker engine for tests that stop and start the engine, so the shared engine
 * the other test files use is never disturbed. It gets a bridge of its own: with `--bridge=none`
 * dockerd deletes the shared engine's docker0.
 */
export class PrivateEngine {
  readonly dir = mkdtempSync(join(tmpdir(), 'podrun-engine-'));
  readonly socket = join(this.dir, 'docker.sock');
  readonly bridge = `podrun${randomBytes(3).toString('hex')}`;
  private proc: ChildProcess | undefined;
  private bridgeMade = false;

  get host(): string {
    return `unix://${this.socket}`;
  }

  get docker(): Docker {
    return new Docker({ socketPath: this.socket });
  }

  async start(): Promise<void> {
    if (!this.bridgeMade) {
      ip('link', 'add', this.bridge, 'type', 'bridge');
      ip('addr', 'add', `10.213.${randomBytes(1)[0]}.1/24`, 'dev', this.bridge);
      ip('link', 'set', this.bridge, 'up');
      this.bridgeMade = true;
    }
    this.proc = spawn(
      'dockerd',
      ['-H', this.host, '--data-root', join(this.dir, 'data'), '--exec-root', join(this.dir, 'exec'), '--pidfile', join(this.dir, 'docker.pid'), `--bridge=${this.bridge}`, '--iptables=false', '--ip-masq=false'],
      { stdio: 'ignore' },
    );
    await until('the private engine to answer', async () => ((await this.docker.ping().catch(() => undefined)) ? true : undefined), 30_000);
  }

  /** Copies the test images over from the shared engine (nothing can be pulled here). */
  loadTestImages(): void {
    const save = spawnSync('sh', ['-c', `docker save ${TEST_IMAGE} ${PAUSE_IMAGE} | docker -H ${this.host} load`], { encoding: 'utf8' });
    if (save.status !== 0) throw new Error(`loading images into the private engine failed: ${save.stderr}`);
  }

  async stop(): Promise<void> {
    const p = this.proc;
    if (!p || p.exitCode !== null) return;
    const exited = new Promise((r) => p.on('exit', r));
    p.kill('SIGTERM');
    await exited;
  }

  async destroy(): Promise<void> {
    try {
      const list = await this.docker.listContainers({ all: true });
      await Promise.all(list.map((c) => this.docker.getContainer(c.Id).remove({ force: true }).catch(() => undefined)));
    } catch {
      // engine already down
    }
    await this.stop();
    if (this.bridgeMade) spawnSync('ip', ['link', 'del', this.bridge]);
    // Overlay mounts of the stopped engine can linger a moment; unmount them before removing.
    const mounts = readFileSync('/proc/mounts', 'utf8').split('\n').map((l) => l.split(' ')[1] ?? '').filter((m) => m.startsWith(this.dir));
    for (const m of mounts.reverse()) spawnSync('umount', ['-l', m]);
    rmSync(this.dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  }
}
