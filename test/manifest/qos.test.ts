import { describe, expect, it } from 'vitest';
import { cpuShares, oomScoreAdj, qosClass } from '../../src/manifest/qos.js';
import { desired } from '../fixtures/pods.js';

// pkg/apis/core/v1/helper/qos and pkg/kubelet/qos/policy.go, as a table.
const GiB = 1024 ** 3;

function pod(resources: string, extra = ''): ReturnType<typeof desired>['pod'] {
  return desired(`apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
${extra}  containers:
  - name: a
    image: busybox
${resources}`).pod;
}

describe('QoS classes and OOM scores', () => {
  const cases: [string, string, string, 'Guaranteed' | 'Burstable' | 'BestEffort', number, number][] = [
    ['nothing set', '', '', 'BestEffort', 1000, 2],
    ['limits only (requests default to them)', '    resources: {limits: {cpu: 500m, memory: 1Gi}}\n', '', 'Guaranteed', -997, 512],
    ['requests equal limits', '    resources: {requests: {cpu: 1, memory: 2Gi}, limits: {cpu: 1, memory: 2Gi}}\n', '', 'Guaranteed', -997, 1024],
    ['memory request of a quarter of the node', '    resources: {requests: {memory: 2Gi}}\n', '', 'Burstable', 750, 2],
    ['a tiny request stays below BestEffort', '    resources: {requests: {memory: 1Ki}}\n', '', 'Burstable', 999, 2],
    ['a request past the node stays above Guaranteed', '    resources: {requests: {memory: 16Gi}}\n', '', 'Burstable', 3, 2],
    ['cpu only', '    resources: {requests: {cpu: 250m}}\n', '', 'Burstable', 999, 256],
    ['system-node-critical without resources (kubeadm etcd)', '', '  priorityClassName: system-node-critical\n', 'BestEffort', -997, 2],
  ];
  it.each(cases)('%s', (_what, resources, extra, qos, adj, shares) => {
    const p = pod(resources, extra);
    expect(qosClass(p)).toBe(qos);
    expect(oomScoreAdj(p, p.spec.containers[0]!, 8 * GiB)).toBe(adj);
    expect(cpuShares(p.spec.containers[0]!)).toBe(shares);
  });

  it('gives a sidecar no higher a score than the containers it serves', () => {
    const p = desired(`apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  initContainers: [{name: side, image: busybox, restartPolicy: Always}]
  containers: [{name: a, image: busybox, resources: {requests: {memory: 4Gi}}}]
`).pod;
    expect(oomScoreAdj(p, p.spec.containers[0]!, 8 * GiB)).toBe(500);
    expect(oomScoreAdj(p, p.spec.initContainers![0]!, 8 * GiB)).toBe(500);
  });
});
