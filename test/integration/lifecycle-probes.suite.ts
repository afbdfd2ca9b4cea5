import { describe, expect, it } from 'vitest';
import { existsSync, lstatSync, mkdirSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createServer as createH2Server, type Http2Server } from 'node:http2';
import { bareId, type EngineBed } from './engine-beds.js';
import { agentGetText, freePort, TEST_IMAGE, unique, until } from './helpers.js';
import { container, supervisedDirectory, untilPod } from './lifecycle-helpers.js';
import type { V1Pod } from '../../src/status/v1.js';

/** Probes (httpGet, tcpSocket, exec, gRPC; liveness, readiness, startup) and postStart, on one engine bed. */
export function probesSuite(bed: EngineBed): void {
  const world = bed;
  // Short backoff so restarts can be watched.
  const { ns, write } = supervisedDirectory(bed, 'probes', ['--crash-backoff-initial', '1s', '--crash-backoff-max', '2s']);

  /** Runs `cmd` in the container and waits for it to end (not a guess of how long it takes). */
  async function execIn(p: V1Pod, name: string, cmd: string): Promise<void> {
    const id = bareId(container(p, name)?.containerID);
    if (!id) throw new Error(`no container ${name}`);
    const r = await bed.exec(id, ['sh', '-c', cmd]);
    expect(r.exitCode, `${cmd}: ${r.output}`).toBe(0);
  }

  /**
   * How many results of a probe kind the agent counted for a container (its /metrics/probes): what a
   * test waits on, instead of sleeping for as many periods and hoping the probe ran in them.
   */
  async function probeResults(name: string, c: string, type: 'Liveness' | 'Readiness' | 'Startup', result: 'successful' | 'failed'): Promise<number> {
    const text = (await agentGetText(bed.world.stateDir, '/metrics/probes')) ?? '';
    const line = text
      .split('\n')
      .find(
        (l) =>
          l.startsWith('prober_probe_total{') &&
          l.includes(`container="${c}",namespace="${ns}",pod="${name}",probe_type="${type}"`) &&
          l.includes(`result="${result}"`),
      );
    return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
  }

  /** Waits until the probe has had `n` results of this kind. */
  function probed(name: string, c: string, type: 'Liveness' | 'Readiness' | 'Startup', result: 'successful' | 'failed', n: number): Promise<number> {
    return until(`${n} ${result} ${type} probes of ${c}`, async () => {
      const have = await probeResults(name, c, type, result);
      return have >= n ? have : undefined;
    });
  }

  const restarts = (p: V1Pod, c: string): number => container(p, c)?.restartCount ?? 0;
  const ready = (p: V1Pod): boolean => p.status.conditions?.find((c) => c.type === 'Ready')?.status === 'True';

  const HTTPD = `mkdir -p /www && echo ok > /www/healthz && echo ok > /www/ready && exec httpd -f -p 8080 -h /www`;

  describe(`${bed.tag} probes run by the agent`, () => {
    it('httpGet liveness: a failing check kills and restarts the container', async () => {
      const name = unique('live');
      write(
        name,
        `  containers:
  - name: web
    image: ${TEST_IMAGE}
    command: [sh, -c, '${HTTPD}']
    livenessProbe: {httpGet: {path: /healthz, port: 8080}, periodSeconds: 1, failureThreshold: 2}
`,
      );
      const p = await untilPod(world, ns, name, 'web to run', (x) => container(x, 'web')?.state.running !== undefined && ready(x));
      // Passing: three checks passed (more than the failure threshold), and no restart. (The first
      // check may come before httpd listens: one failure is below the threshold.)
      await probed(name, 'web', 'Liveness', 'successful', 3);
      expect(restarts(await untilPod(world, ns, name, 'status', () => true), 'web')).toBe(0);
      await execIn(p, 'web', 'rm /www/healthz');
      const after = await untilPod(world, ns, name, 'the liveness restart', (x) => restarts(x, 'web') >= 1 && container(x, 'web')?.state.running !== undefined);
      expect(container(after, 'web')?.lastState?.terminated).toBeDefined();
      const d = await world.cli('describe', 'pod', '-n', ns, name);
      expect(d.out).toMatch(/Warning\s+Unhealthy\s+.*Liveness probe failed: HTTP probe failed with statuscode: 404/);
      expect(d.out).toMatch(/Normal\s+Killing\s+.*Stopping container web: failed liveness probe, will be restarted/);
    });

    it('httpGet and exec readiness flip Ready without restarting anything', async () => {
      const name = unique('ready');
      write(
        name,
        `  containers:
  - name: web
    image: ${TEST_IMAGE}
    command: [sh, -c, '${HTTPD}']
    readinessProbe: {httpGet: {path: /ready, port: 8080}, periodSeconds: 1, failureThreshold: 1}
  - name: worker
    image: ${TEST_IMAGE}
    command: [sleep, '3600']
    readinessProbe: {exec: {command: [test, -f, /tmp/ready]}, periodSeconds: 1}
`,
      );
      let p = await untilPod(
        world,
        ns,
        name,
        'web ready, worker not',
        (x) => container(x, 'web')?.ready === true && container(x, 'worker')?.state.running !== undefined,
      );
      expect(container(p, 'worker')?.ready).toBe(false);
      expect(ready(p)).toBe(false);
      await execIn(p, 'worker', 'touch /tmp/ready');
      p = await untilPod(world, ns, name, 'the pod to be Ready', ready);
      expect(p.status.conditions?.find((c) => c.type === 'ContainersReady')?.status).toBe('True');
      await execIn(p, 'web', 'rm /www/ready');
      p = await untilPod(world, ns, name, 'web to be unready', (x) => container(x, 'web')?.ready === false && !ready(x));
      await execIn(p, 'web', 'echo ok > /www/ready');
      p = await untilPod(world, ns, name, 'Ready again', ready);
      expect([restarts(p, 'web'), restarts(p, 'worker')]).toEqual([0, 0]);
    });

    it('tcpSocket liveness passes while the port listens and restarts when it stops', async () => {
      const name = unique('tcp');
      write(
        name,
        `  containers:
  - name: srv
    image: ${TEST_IMAGE}
    command: [sh, -c, 'mkdir -p /www; httpd -p 9000 -h /www; exec sleep 3600']
    livenessProbe: {tcpSocket: {port: 9000}, periodSeconds: 1, failureThreshold: 2}
`,
      );
      const p = await untilPod(world, ns, name, 'srv to run', (x) => container(x, 'srv')?.state.running !== undefined);
      await probed(name, 'srv', 'Liveness', 'successful', 3);
      expect(restarts(await untilPod(world, ns, name, 'status', () => true), 'srv')).toBe(0);
      await execIn(p, 'srv', 'killall httpd');
      await untilPod(world, ns, name, 'the tcp liveness restart', (x) => restarts(x, 'srv') >= 1);
    });

    it('a hung exec liveness probe: every failure is an Unhealthy event, one line with its count in describe', async () => {
      const name = unique('hung');
      // Never: the kill ends the container, so no probe of a replacement adds to the count.
      write(
        name,
        `  restartPolicy: Never
  containers:
  - name: app
    image: ${TEST_IMAGE}
    command: [sleep, '3600']
    livenessProbe: {exec: {command: [sleep, '30']}, periodSeconds: 1, timeoutSeconds: 2, failureThreshold: 3}
`,
      );
      await untilPod(world, ns, name, 'the liveness kill', (x) => container(x, 'app')?.state.terminated !== undefined);
      expect(await probeResults(name, 'app', 'Liveness', 'failed')).toBe(3);
      const d = await world.cli('describe', 'pod', '-n', ns, name);
      expect(d.out).toMatch(/Warning\s+Unhealthy\s+\S+ \(x3 over \S+\)\s+podrun\s+Liveness probe failed: command timed out after 2s/);
    });

    it('startup probe gates liveness', async () => {
      const name = unique('startup');
      write(
        name,
        `  containers:
  - name: slow
    image: ${TEST_IMAGE}
    command: [sleep, '3600']
    startupProbe: {exec: {command: [test, -f, /tmp/started]}, periodSeconds: 1, failureThreshold: 60, timeoutSeconds: 10}
    livenessProbe: {exec: {command: ['false']}, periodSeconds: 1, failureThreshold: 1, timeoutSeconds: 10}
`,
      );
      const p = await untilPod(world, ns, name, 'slow to run', (x) => container(x, 'slow')?.state.running !== undefined);
      // Three startup checks failed (the file is not there yet), and the liveness probe, which fails
      // at its first run, has not run once: it waits for startup.
      await probed(name, 'slow', 'Startup', 'failed', 3);
      expect(await probeResults(name, 'slow', 'Liveness', 'failed')).toBe(0);
      const before = await untilPod(world, ns, name, 'status', () => true);
      expect([restarts(before, 'slow'), container(before, 'slow')?.started]).toEqual([0, false]);
      await execIn(p, 'slow', 'touch /tmp/started');
      await untilPod(world, ns, name, 'liveness to kill it once started', (x) => restarts(x, 'slow') >= 1, 60_000);
    });

    it('gRPC health: SERVING is ready, NOT_SERVING is not', async () => {
      const port = await freePort();
      let serving = true;
      const server: Http2Server = createH2Server((req, res) => {
        req.resume();
        req.on('end', () => {
          res.writeHead(200, { 'content-type': 'application/grpc' });
          // HealthCheckResponse{status} in a gRPC frame: 1 = SERVING, 2 = NOT_SERVING.
          res.write(Buffer.from([0, 0, 0, 0, 2, 0x08, serving ? 1 : 2]));
          res.addTrailers({ 'grpc-status': '0' });
          res.end();
        });
      });
      await new Promise<void>((r) => server.listen(port, '127.0.0.1', () => r()));
      try {
        const name = unique('grpc');
        write(
          name,
          `  hostNetwork: true
  containers:
  - name: app
    image: ${TEST_IMAGE}
    command: [sleep, '3600']
    readinessProbe: {grpc: {port: ${port}}, periodSeconds: 1, failureThreshold: 1}
`,
        );
        await untilPod(world, ns, name, 'gRPC ready', ready);
        serving = false;
        const p = await untilPod(world, ns, name, 'gRPC unready', (x) => !ready(x));
        expect(restarts(p, 'app')).toBe(0);
        const d = await world.cli('describe', 'pod', '-n', ns, name);
        expect(d.out).toContain('Readiness probe failed: service unhealthy (responded with "NOT_SERVING")');
      } finally {
        server.close();
      }
    });

    it('gRPC health on the pod network: the probe goes to the pod IP', async () => {
      // A gRPC health server inside the pod, on the bridge: the host's own node, run in the pod's
      // network namespace through chroot into read-only binds of what it needs (the test image has
      // no gRPC server). It answers NOT_SERVING while the flag file exists.
      const dir = join(bed.world.dir, unique('grpc-bridge'));
      mkdirSync(dir);
      const flag = join(dir, 'not-serving');
      const script = join(dir, 'health.mjs');
      writeFileSync(
        script,
        `import { createServer } from 'node:http2';
import { existsSync } from 'node:fs';
createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/grpc' });
    res.write(Buffer.from([0, 0, 0, 0, 2, 0x08, existsSync(${JSON.stringify(flag)}) ? 2 : 1]));
    res.addTrailers({ 'grpc-status': '0' });
    res.end();
  });
}).listen(50051, '0.0.0.0');
`,
      );
      const name = unique('grpcbr');
      // Only what node needs: /usr (and /lib, /lib64 where they are not links into it) and the script.
      const libs = ['/lib', '/lib64'].filter((l) => existsSync(l));
      const links = libs.filter((l) => lstatSync(l).isSymbolicLink());
      const dirs = ['/usr', ...libs.filter((l) => !links.includes(l)), dir];
      const setup = links.map((l) => `ln -s ${readlinkSync(l)} /host${l}`).join('; ');
      write(
        name,
        `  containers:
  - name: app
    image: ${TEST_IMAGE}
    command: [sh, -c, '${setup ? `${setup}; ` : ''}exec chroot /host ${process.execPath} ${script}']
    readinessProbe: {grpc: {port: 50051}, periodSeconds: 1, failureThreshold: 1}
    volumeMounts:
${dirs.map((d, i) => `    - {name: h${i}, mountPath: /host${d}, readOnly: true}`).join('\n')}
  volumes:
${dirs.map((d, i) => `  - {name: h${i}, hostPath: {path: ${d}}}`).join('\n')}
`,
      );
      const p = await untilPod(world, ns, name, 'gRPC ready over the bridge', ready).catch(async (e: Error) => {
        const d = await world.cli('describe', 'pod', '-n', ns, name);
        throw new Error(`${e.message}\n${d.out}`);
      });
      expect(p.status.podIP).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
      expect(p.status.podIP).not.toBe('127.0.0.1');
      writeFileSync(flag, '');
      await untilPod(world, ns, name, 'gRPC unready over the bridge', (x) => !ready(x));
    });

    it('a failing postStart hook kills the container', async () => {
      const name = unique('poststart');
      write(
        name,
        `  containers:
  - name: c
    image: ${TEST_IMAGE}
    command: [sleep, '3600']
    lifecycle: {postStart: {exec: {command: [sh, -c, 'echo nope; exit 4']}}}
`,
      );
      await untilPod(world, ns, name, 'the hook kill and restart', (x) => restarts(x, 'c') >= 1);
      const d = await world.cli('describe', 'pod', '-n', ns, name);
      expect(d.out).toMatch(/Warning\s+FailedPostStartHook\s+.*PostStart hook for container c failed: command exited with 4: nope/);
    });
  });
}
