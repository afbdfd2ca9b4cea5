import { describe, expect, it } from 'vitest';
import { formatIssue } from '../../src/manifest/errors.js';
import { loadManifestText } from '../../src/manifest/load.js';
import { OPEN_POLICY, type PodPolicy } from '../../src/manifest/policy.js';
import { oomProtectionLost } from '../../src/manifest/qos.js';
import { desired } from '../fixtures/pods.js';

// What the kubelet refuses, podrun refuses; what it runs, podrun runs (issue 18).
function issues(spec: string, policy: PodPolicy = OPEN_POLICY): { errors: string[]; warnings: string[] } {
  const r = loadManifestText(
    { file: 'p.yaml', source: 'file:/p.yaml', text: `apiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: {app: a}}\nspec:\n${spec}` },
    policy,
  );
  const of = (s: string) => r.issues.filter((i) => i.severity === s).map(formatIssue);
  return { errors: of('error'), warnings: of('warning') };
}

const C = '  containers: [{name: c, image: busybox}]\n';

describe("the kubelet's refusals", () => {
  it('allows the safe sysctls, others only with --allowed-unsafe-sysctls, never a node-wide one, never net.* with hostNetwork', () => {
    const sys = (names: string, extra = '') =>
      `  securityContext: {sysctls: [${names
        .split(',')
        .map((n) => `{name: ${n}, value: "1"}`)
        .join(', ')}]}\n${extra}${C}`;
    expect(issues(sys('net.ipv4.tcp_syncookies,kernel.shm_rmid_forced,net.ipv4.ip_unprivileged_port_start')).errors).toEqual([]);
    expect(issues(sys('kernel.msgmax')).errors).toEqual([
      'p.yaml:5:38 spec.securityContext.sysctls[0].name: "kernel.msgmax" is not a safe sysctl; the node must allow it (--allowed-unsafe-sysctls=kernel.msgmax)',
    ]);
    expect(issues(sys('kernel.msgmax,net.core.somaxconn'), { ...OPEN_POLICY, allowedUnsafeSysctls: ['kernel.msg*', 'net.core.somaxconn'] }).errors).toEqual([]);
    expect(issues(sys('vm.swappiness'), { ...OPEN_POLICY, allowedUnsafeSysctls: ['*'] }).errors[0]).toContain('"vm.swappiness" is not a namespaced sysctl');
    expect(issues(sys('net.ipv4.tcp_syncookies', '  hostNetwork: true\n')).errors[0]).toContain('is not allowed with hostNetwork');
    expect(issues(sys('kernel.shm_rmid_forced', '  hostIPC: true\n')).errors[0]).toContain('is not allowed with hostIPC');
  });

  it('refuses Bidirectional propagation for an unprivileged container, windows pods, hostUsers false, hugepages, subPath on a Memory emptyDir', () => {
    const mount = (privileged: boolean) =>
      `  containers: [{name: c, image: busybox, securityContext: {privileged: ${privileged}}, volumeMounts: [{name: v, mountPath: /v, mountPropagation: Bidirectional}]}]\n  volumes: [{name: v, emptyDir: {}}]\n`;
    expect(issues(mount(false)).errors).toEqual([
      expect.stringContaining('mountPropagation: Bidirectional mount propagation is available only to privileged containers'),
    ]);
    expect(issues(mount(true)).errors).toEqual([]);
    expect(issues(`  os: {name: windows}\n${C}`).errors).toEqual(['p.yaml:5:14 spec.os.name: "windows": this node runs linux pods only']);
    expect(issues(`  os: {name: linux}\n${C}`)).toEqual({ errors: [], warnings: [] });
    expect(issues(`  hostUsers: true\n${C}`)).toEqual({ errors: [], warnings: [] });
    expect(issues(`  hostUsers: false\n${C}`).errors[0]).toContain('spec.hostUsers: false asks for a user namespace');
    expect(issues('  containers: [{name: c, image: busybox, resources: {limits: {hugepages-2Mi: 1Gi}}}]\n').errors[0]).toContain(
      '["hugepages-2Mi"]: is a Kubernetes field that podrun cannot honour',
    );
    expect(
      issues(
        '  containers: [{name: c, image: busybox, volumeMounts: [{name: m, mountPath: /m, subPath: x}]}]\n  volumes: [{name: m, emptyDir: {medium: Memory}}]\n',
      ).errors[0],
    ).toContain('podrun cannot mount a subPath of a medium: Memory emptyDir');
  });

  it('refuses .. in a hostPath and a subPath, and downwardAPI items that leave the volume or name what a volume cannot hold', () => {
    expect(issues(`${C}  volumes: [{name: h, hostPath: {path: /srv/app/../../etc}}]\n`).errors).toEqual([
      expect.stringContaining("spec.volumes[0].hostPath.path: must not contain '..'"),
    ]);
    expect(
      issues('  containers: [{name: c, image: busybox, volumeMounts: [{name: v, mountPath: /v, subPath: a/../../x}]}]\n  volumes: [{name: v}]\n').errors[0],
    ).toContain('subPath');
    const dw = (item: string) => issues(`${C}  volumes: [{name: d, downwardAPI: {items: [${item}]}}]\n`).errors;
    expect(dw('{path: ../x, fieldRef: {fieldPath: metadata.name}}')[0]).toContain("path: must be a relative path without '..'");
    expect(dw('{path: x, fieldRef: {fieldPath: status.podIP}}')[0]).toContain('a downwardAPI volume can hold metadata.name');
    expect(dw('{path: x, resourceFieldRef: {resource: limits.cpu}}')[0]).toContain('containerName: is required in a volume');
    expect(dw('{path: x, fieldRef: {fieldPath: "metadata.labels[\'app\']"}}')).toEqual([]);
    expect(issues(`${C}  volumes: [{name: d, projected: {sources: [{serviceAccountToken: {path: t}}]}}]\n`).errors[0]).toContain(
      'static pods may not reference ServiceAccounts',
    );
  });
});

describe('numbers as Kubernetes reads them', () => {
  it('reads a leading-zero mode as octal (YAML 1.1 integers, as go-yaml under sigs.k8s.io/yaml)', () => {
    const d = desired(
      `apiVersion: v1\nkind: Pod\nmetadata: {name: m}\nspec:\n${C}  volumes: [{name: d, downwardAPI: {defaultMode: 0644, items: [{path: n, mode: 0400, fieldRef: {fieldPath: metadata.name}}]}}]\n`,
    ).pod;
    expect(d.spec.volumes?.[0]?.downwardAPI).toMatchObject({ defaultMode: 0o644, items: [{ mode: 0o400 }] });
    expect(
      desired(`apiVersion: v1\nkind: Pod\nmetadata: {name: m}\nspec:\n  terminationGracePeriodSeconds: 30\n${C}`).pod.spec.terminationGracePeriodSeconds,
    ).toBe(30);
  });
});

describe('warnings that say what is not done', () => {
  it('warns that ephemeral-storage and a disk emptyDir sizeLimit are not enforced, and that a tcpSocket hook fails', () => {
    const w = issues(
      '  containers: [{name: c, image: busybox, resources: {limits: {ephemeral-storage: 1Gi}}, lifecycle: {preStop: {tcpSocket: {port: 80}}}}]\n  volumes: [{name: d, emptyDir: {sizeLimit: 1Gi}}, {name: m, emptyDir: {medium: Memory, sizeLimit: 1Gi}}]\n',
    );
    expect(w.errors).toEqual([]);
    expect(w.warnings).toEqual([
      expect.stringContaining('spec.volumes[0].emptyDir.sizeLimit: not enforced on a disk emptyDir'),
      expect.stringContaining('lifecycle.preStop.tcpSocket: the kubelet does not run tcpSocket hooks'),
      expect.stringContaining('resources.limits["ephemeral-storage"]: not enforced'),
    ]);
  });

  it('says when a node cannot give a pod its OOM protection', () => {
    const critical = desired(`apiVersion: v1\nkind: Pod\nmetadata: {name: cp}\nspec:\n  priorityClassName: system-node-critical\n${C}`).pod;
    expect(oomProtectionLost(critical, -1000, 8 << 30)).toBeUndefined();
    expect(oomProtectionLost(critical, 0, 8 << 30)).toContain('runs at oom_score_adj 0, not the -997 a system-node-critical pod gets');
    const bestEffort = desired(`apiVersion: v1\nkind: Pod\nmetadata: {name: be}\nspec:\n${C}`).pod;
    expect(oomProtectionLost(bestEffort, 0, 8 << 30)).toBeUndefined();
  });
});
