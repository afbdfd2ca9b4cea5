import { describe, expect, it } from 'vitest';
import { statusWord } from '../../src/cli/get.js';
import { loadManifestText } from '../../src/manifest/load.js';
import { OPEN_POLICY } from '../../src/manifest/policy.js';
import { refusals, refusedV1Pod } from '../../src/status/refusal.js';
import type { V1Pod } from '../../src/status/v1.js';

const load = (text: string, policy = OPEN_POLICY): ReturnType<typeof refusals> =>
  refusals(loadManifestText({ file: '/m.yaml', source: 'file:/m.yaml', text }, policy).issues);

describe('refusals: the pods a source names but will not run', () => {
  it('names the pod, with the kubelet-style reason for each kind of refusal', () => {
    const sysctl = `apiVersion: v1
kind: Pod
metadata: {name: tuned, namespace: kube-system}
spec:
  securityContext: {sysctls: [{name: kernel.msgmax, value: "1"}]}
  containers: [{name: c, image: busybox:1.36}]
`;
    const privileged = `apiVersion: v1
kind: Pod
metadata: {name: root}
spec: {containers: [{name: c, image: busybox:1.36, securityContext: {privileged: true}}]}
`;
    const invalid = `apiVersion: v1
kind: Pod
metadata: {name: broken}
spec: {containers: [{name: c}]}
`;
    const shut = { ...OPEN_POLICY, allowPrivileged: false };
    expect(load(sysctl).map((r) => [r.key, r.reason, r.issue.field])).toEqual([
      ['kube-system/tuned', 'SysctlForbidden', 'spec.securityContext.sysctls[0].name'],
    ]);
    expect(load(privileged, shut).map((r) => [r.key, r.reason, r.issue.line])).toEqual([['default/root', 'Forbidden', 4]]);
    expect(load(invalid).map((r) => [r.key, r.reason])).toEqual([['default/broken', 'FailedValidation']]);
    // A document with no name cannot be shown as a pod: only the source's error says it.
    expect(load('apiVersion: v1\nkind: Pod\nmetadata: {}\nspec: {containers: [{name: c, image: x}]}\n')).toEqual([]);
  });

  it("shows a refused pod as kubectl shows an admission failure: Failed, the reason as STATUS, kubelet's message", () => {
    const [r] = load(
      `apiVersion: v1
kind: Pod
metadata: {name: root}
spec: {containers: [{name: c, image: busybox:1.36, securityContext: {privileged: true}}]}
`,
      { ...OPEN_POLICY, allowPrivileged: false },
    );
    const pod = refusedV1Pod(r!, '10.0.0.1') as unknown as V1Pod;
    expect(statusWord(pod)).toBe('Forbidden');
    expect(pod.status.message).toMatch(
      /^Pod was rejected: \/m\.yaml:4:\d+ spec\.containers\[0\]\.securityContext\.privileged: privileged containers are not allowed/,
    );
  });
});
