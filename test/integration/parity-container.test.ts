import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { LABEL } from '../../src/runtime/labels.js';
import { AgentSuite } from './agent-helpers.js';
import { docker, PAUSE_IMAGE, podContainers, TEST_IMAGE, unique, until } from './helpers.js';

// The container the kubelet would make (issue 18): resolver, hosts file, swap, downward API
// volumes, hooks and log rotation, read back from inside the containers.
const suite = new AgentSuite('parity-ctr');
const { world, ns } = suite;

async function cat(name: string, path: string, container = 'c'): Promise<string> {
  const r = await world.cli('exec', '-n', ns, name, '-c', container, '--', 'cat', path);
  expect(r.code, r.err).toBe(0);
  return r.out;
}

describe('what a container sees of the node', () => {
  it("adds dnsConfig to the node's resolver, gives no swap, and writes downwardAPI volumes read-only", async () => {
    const resolv = world.write('resolv.conf', 'nameserver 192.0.2.10\nsearch node.example\noptions ndots:2\n');
    const name = unique('node-view');
    const r = await world.cli(
      '--resolv-conf',
      resolv,
      'apply',
      '--timeout',
      '20s',
      world.write(
        `${name}.yaml`,
        `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}, labels: {app: web, tier: front}, annotations: {note: 'say "hi"'}}
spec:
  terminationGracePeriodSeconds: 1
  dnsConfig: {nameservers: [192.0.2.53], searches: [pod.example], options: [{name: ndots, value: "5"}]}
  containers:
  - name: c
    image: ${TEST_IMAGE}
    command: [sh, -c, 'exec sleep 3600']
    resources: {limits: {memory: 64Mi, cpu: 500m}}
    volumeMounts: [{name: info, mountPath: /info}, {name: proj, mountPath: /proj}]
  volumes:
  - name: info
    downwardAPI:
      items:
      - {path: labels, fieldRef: {fieldPath: metadata.labels}}
      - {path: annotations, fieldRef: {fieldPath: metadata.annotations}}
      - {path: sub/name, fieldRef: {fieldPath: metadata.name}}
      - {path: cpu, resourceFieldRef: {containerName: c, resource: limits.cpu, divisor: 1m}, mode: 0400}
  - name: proj
    projected: {sources: [{downwardAPI: {items: [{path: ns, fieldRef: {fieldPath: metadata.namespace}}]}}]}
`,
      ),
    );
    expect(r.code, r.err).toBe(0);
    // The kubelet's appendDNSConfig: the node's servers and search paths, then the pod's; the pod's options win.
    const conf = await cat(name, '/etc/resolv.conf');
    expect(conf.match(/^nameserver .*/gm)).toEqual(['nameserver 192.0.2.10', 'nameserver 192.0.2.53']);
    expect(conf).toMatch(/^search node\.example pod\.example$/m);
    expect(conf).toMatch(/^options ndots:5$/m);
    // NoSwap: memory+swap is the memory limit (cgroup v1), or no swap at all (v2).
    const v1 = await world.cli('exec', '-n', ns, name, '--', 'cat', '/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes');
    if (v1.code === 0) expect(v1.out.trim()).toBe(String(64 * 1024 * 1024));
    else expect((await cat(name, '/sys/fs/cgroup/memory.swap.max')).trim()).toBe('0');
    const id = (await podContainers(ns, name, world.instance)).find((c) => c.Labels[LABEL.containerName] === 'c')!.Id;
    const host = (await docker.getContainer(id).inspect()).HostConfig;
    expect(host.MemorySwap).toBe(host.Memory);
    // downwardAPI files as the kubelet writes them (fieldpath.FormatMap), read-only.
    expect(await cat(name, '/info/labels')).toBe('app="web"\ntier="front"');
    expect(await cat(name, '/info/annotations')).toBe('note="say \\"hi\\""');
    expect(await cat(name, '/info/sub/name')).toBe(name);
    expect(await cat(name, '/info/cpu')).toBe('500');
    expect(await cat(name, '/proj/ns')).toBe(ns);
    const mode = await world.cli('exec', '-n', ns, name, '--', 'stat', '-c', '%a', '/info/cpu');
    expect(mode.out.trim()).toBe('400');
    const write = await world.cli('exec', '-n', ns, name, '--', 'touch', '/info/x');
    expect(write.code).not.toBe(0);
    expect(write.err).toContain('Read-only file system');
  });

  it("keeps the node's /etc/hosts for a hostNetwork pod with hostAliases, adding the aliases", async () => {
    const name = unique('hosts');
    const r = await world.cli(
      'apply',
      '--timeout',
      '20s',
      world.write(
        `${name}.yaml`,
        `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  hostNetwork: true
  hostAliases: [{ip: 10.1.2.3, hostnames: [alias.example, a2.example]}]
  containers:
  - name: c
    image: ${TEST_IMAGE}
    command: [sh, -c, 'exec sleep 3600']
`,
      ),
    );
    expect(r.code, r.err).toBe(0);
    const hosts = await cat(name, '/etc/hosts');
    for (const line of readFileSync('/etc/hosts', 'utf8')
      .split('\n')
      .filter((l) => l.trim() && !l.startsWith('#')))
      expect(hosts).toContain(line);
    expect(hosts).toContain('# Entries added by HostAliases.\n10.1.2.3\talias.example\ta2.example\n');
  });

  it('fails a tcpSocket postStart hook as the kubelet does: the container is killed with FailedPostStartHook', async () => {
    const dir = join(world.dir, unique('hook'));
    mkdirSync(dir);
    const name = unique('tcphook');
    writeFileSync(
      join(dir, 'pod.yaml'),
      `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: ${TEST_IMAGE}
    command: [sh, -c, 'exec nc -lk -p 8080 -e true']
    lifecycle: {postStart: {tcpSocket: {port: 8080}}}
`,
    );
    suite.run(['--manifest-dir', dir]);
    const d = await until('the hook failure in describe', async () => {
      const out = (await world.cli('describe', 'pod', '-n', ns, name)).out;
      return out.includes('FailedPostStartHook') ? out : undefined;
    });
    expect(d).toContain('invalid handler: tcpSocket');
  });
});

describe('apply says what the kubelet would refuse or could not give', () => {
  it('refuses an unsafe sysctl unless the node allows it, and warns when a critical pod loses its OOM protection here', async () => {
    const name = unique('sysctl');
    const file = world.write(
      `${name}.yaml`,
      `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  priorityClassName: system-node-critical
  securityContext: {sysctls: [{name: kernel.msgmax, value: "65536"}]}
  containers: [{name: c, image: ${TEST_IMAGE}, command: [sh, -c, 'cat /proc/sys/kernel/msgmax; exec sleep 3600']}]
`,
    );
    const refused = await world.cli('apply', '--timeout', '20s', file);
    expect(refused.code).toBe(1);
    expect(refused.err).toContain('"kernel.msgmax" is not a safe sysctl; the node must allow it (--allowed-unsafe-sysctls=kernel.msgmax)');
    expect(await podContainers(ns, name, world.instance)).toEqual([]);
    const allowed = await world.cli('--allowed-unsafe-sysctls', 'kernel.msg*', 'apply', '--timeout', '20s', file);
    expect(allowed.code, allowed.err).toBe(0);
    expect((await cat(name, '/proc/sys/kernel/msgmax')).trim()).toBe('65536');
    // This VM cannot lower oom_score_adj (no CAP_SYS_RESOURCE): apply says what the pod loses.
    const floor = /^CapEff:\s*([0-9a-f]+)$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
    if (floor !== undefined && ((BigInt(`0x${floor}`) >> 24n) & 1n) === 0n) {
      expect(allowed.err).toContain(`warning: pod/${ns}/${name}: runs at oom_score_adj 0, not the -997 a system-node-critical pod gets`);
    } else {
      expect(allowed.err).not.toContain('oom_score_adj');
    }
  });
});

describe('what the kubelet refuses, apply refuses; what it runs, apply runs', () => {
  it('refuses each pod the kubelet would, with the field and why, and runs hostUsers: true and os linux', { timeout: 60_000 }, async () => {
    const spec = (name: string, body: string) =>
      world.write(`${name}.yaml`, `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}, namespace: ${ns}}\nspec:\n  terminationGracePeriodSeconds: 1\n${body}`);
    const c = (extra = '') => `  containers: [{name: c, image: ${TEST_IMAGE}, command: [sleep, '3600']${extra}}]\n`;
    const cases: [string, string, string][] = [
      [
        'bidir',
        `${c(', volumeMounts: [{name: v, mountPath: /v, mountPropagation: Bidirectional}]')}  volumes: [{name: v, emptyDir: {}}]\n`,
        'Bidirectional mount propagation is available only to privileged containers',
      ],
      [
        'netsysctl',
        `  hostNetwork: true\n  securityContext: {sysctls: [{name: net.ipv4.tcp_syncookies, value: "1"}]}\n${c()}`,
        'is not allowed with hostNetwork',
      ],
      ['windows', `  os: {name: windows}\n${c()}`, 'this node runs linux pods only'],
      [
        'memsub',
        `${c(', volumeMounts: [{name: m, mountPath: /m, subPath: x}]')}  volumes: [{name: m, emptyDir: {medium: Memory}}]\n`,
        'podrun cannot mount a subPath of a medium: Memory emptyDir',
      ],
      ['userns', `  hostUsers: false\n${c()}`, 'asks for a user namespace'],
      ['huge', c(', resources: {limits: {hugepages-2Mi: 2Mi}}'), '["hugepages-2Mi"]: is a Kubernetes field that podrun cannot honour'],
    ];
    for (const [tag, body, message] of cases) {
      const name = unique(tag);
      const r = await world.cli('apply', '--timeout', '20s', spec(name, body));
      expect([tag, r.code]).toEqual([tag, 1]);
      expect(r.err).toContain(message);
      expect(await podContainers(ns, name, world.instance)).toEqual([]);
    }
    const ok = unique('hostusers');
    const r = await world.cli('apply', '--timeout', '20s', spec(ok, `  hostUsers: true\n  os: {name: linux}\n${c()}`));
    expect(r.code, r.err).toBe(0);
    expect(r.err).toBe('');
  });
});

describe('container logs as the kubelet rotates them', () => {
  it(
    'rotates at --container-log-max-size, keeps --container-log-max-files, and logs, --tail, -f and -p read across rotation',
    { timeout: 120_000 },
    async () => {
      const dir = join(world.dir, unique('logs'));
      mkdirSync(dir);
      const name = unique('chatty');
      // About 9 MB of json log lines in two bursts; then, when the test says, an exit, so a previous instance exists.
      writeFileSync(
        join(dir, 'pod.yaml'),
        `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: ${TEST_IMAGE}
    command: [sh, -c, 'seq 1 60000; echo DONE-1; sleep 4; seq 60001 120000; echo DONE-2; while [ ! -f /tmp/exit ]; do sleep 0.2; done; exit 1']
`,
      );
      suite.run(['--manifest-dir', dir], { PODRUN_CONTAINER_LOG_MAX_SIZE: '1Mi', PODRUN_CONTAINER_LOG_MAX_FILES: '2' });
      await until('the first burst', async () => ((await world.cli('logs', '-n', ns, name, '--tail', '1')).out.trim() === 'DONE-1' ? true : undefined), 30_000);
      const follow = world.spawnBin(['logs', '-f', '--tail', '1', '-n', ns, name]);
      let followed = '';
      follow.stdout.on('data', (c: Buffer) => (followed += c.toString()));
      try {
        await until('-f to follow the second burst across rotations', async () => (followed.includes('DONE-2') ? true : undefined), 30_000);
      } finally {
        follow.kill('SIGTERM');
      }
      const seen = followed
        .split('\n')
        .filter((l) => /^\d+$/.test(l))
        .map(Number);
      expect(seen.length).toBeGreaterThan(0);
      const disorder = seen.filter((n, i) => i > 0 && n <= seen[i - 1]!);
      const at = seen.findIndex((n, i) => i > 0 && n <= seen[i - 1]!);
      expect(disorder.slice(0, 5), `followed ${seen.length} lines, first ${seen[0]}, around: ${seen.slice(Math.max(0, at - 3), at + 3).join(',')}`).toEqual([]);

      const first = (await podContainers(ns, name, world.instance)).find((c) => c.Labels[LABEL.containerName] === 'c' && c.Labels[LABEL.restartCount] === '0')!;
      const logPath = (await docker.getContainer(first.Id).inspect()).LogPath;
      const files = readdirSync(dirname(logPath)).filter((f) => f.includes('-json.log'));
      expect(files.length).toBeLessThanOrEqual(2);
      for (const f of files) expect(statSync(join(dirname(logPath), f)).size).toBeLessThanOrEqual(1024 * 1024 + 200);

      // What is kept is whole and in order: the oldest lines are gone, the newest all there.
      const all = (await world.cli('logs', '-n', ns, name)).out.trim().split('\n');
      expect(all.at(-1)).toBe('DONE-2');
      const numbers = all.filter((l) => /^\d+$/.test(l)).map(Number);
      expect(numbers[0]).toBeGreaterThan(1);
      expect(numbers.at(-1)).toBe(120000);
      expect(numbers.every((n, i) => i === 0 || n === numbers[i - 1]! + 1)).toBe(true);
      expect((await world.cli('logs', '-n', ns, name, '--tail', '2')).out.trim()).toBe('120000\nDONE-2');

      // Now the instance may end, and be the previous one.
      expect((await world.cli('exec', '-n', ns, name, '--', 'touch', '/tmp/exit')).code).toBe(0);
      await until(
        'the restart',
        async () => (await podContainers(ns, name, world.instance)).find((c) => c.Labels[LABEL.containerName] === 'c' && c.Labels[LABEL.restartCount] === '1'),
        30_000,
      );
      // On failure, what logs -p said and the pod's instances (sandbox included) just before and after it.
      const instances = async (): Promise<string> =>
        (await podContainers(ns, name, world.instance))
          .map((c) => `${c.Labels[LABEL.containerName] ?? c.Labels[LABEL.containerType]}#${c.Labels[LABEL.restartCount]}:${c.State}`)
          .join(', ');
      const before = await instances();
      const prev = await world.cli('logs', '-p', '-n', ns, name, '--tail', '2');
      expect(prev.out.trim(), `logs -p: exit ${prev.code}, stderr ${JSON.stringify(prev.err)}; instances before: ${before}; after: ${await instances()}`).toBe(
        '120000\nDONE-2',
      );
    },
  );

  it("podrun logs streams a large log at the reader's pace, in constant memory", { timeout: 120_000 }, async () => {
    const name = unique('biglog');
    // 200,000 lines of 1,000 bytes: a 200 MB log, 214 MB of json-file on disk.
    const r = await world.cli(
      '--container-log-max-size',
      '500Mi',
      'apply',
      '--timeout',
      '20s',
      world.write(
        `${name}.yaml`,
        `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  containers: [{name: c, image: ${TEST_IMAGE}, command: [sh, -c, 'yes $(printf %0999d 0) | head -n 200000; echo END; exec sleep 3600']}]
`,
      ),
    );
    expect(r.code, r.err).toBe(0);
    await until('the whole log', async () => ((await world.cli('logs', '-n', ns, name, '--tail', '1')).out.trim() === 'END' ? true : undefined), 60_000);
    const p = world.spawnBin(['logs', '-n', ns, name]);
    let bytes = 0;
    let peakKb = 0;
    p.stdout.on('data', (c: Buffer) => (bytes += c.length));
    const sample = setInterval(() => {
      try {
        peakKb = Math.max(peakKb, Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${p.pid}/status`, 'utf8'))?.[1] ?? 0));
      } catch {
        // Exited.
      }
    }, 20);
    await new Promise((res) => p.on('close', res));
    clearInterval(sample);
    expect(bytes).toBe(200_000 * 1000 + 4);
    // Buffered whole, as before, a 28 MB json log already took about 240 MB.
    expect(peakKb).toBeGreaterThan(0);
    expect(peakKb).toBeLessThan(100 * 1024);
  });

  it('podrun logs into a reader that stops early ends quietly, as cat does', async () => {
    const name = unique('epipe');
    const r = await world.cli(
      'apply',
      '--timeout',
      '20s',
      world.write(
        `${name}.yaml`,
        `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  containers: [{name: c, image: ${TEST_IMAGE}, command: [sh, -c, 'seq 1 100000; exec sleep 3600']}]
`,
      ),
    );
    expect(r.code, r.err).toBe(0);
    await until('the log', async () => ((await world.cli('logs', '-n', ns, name, '--tail', '1')).out.trim() === '100000' ? true : undefined));
    const bin = fileURLToPath(new URL('../../bin/podrun', import.meta.url));
    const p = spawnSync(
      'sh',
      ['-c', `"${bin}" --state-dir "${world.stateDir}" --pause-image ${PAUSE_IMAGE} logs -n ${ns} ${name} | head -1; echo "exit=\${PIPESTATUS:-0}"`],
      { encoding: 'utf8' },
    );
    expect(p.stdout.split('\n')[0]).toBe('1');
    expect(p.stderr).toBe('');
  });
});
