import type Docker from 'dockerode';
import { describe, expect, it } from 'vitest';
import { LABEL, MANAGED_BY } from '../../src/runtime/labels.js';
import { groupObserved, listedFromInspect } from '../../src/runtime/observed.js';

function inspected(status: string, exitCode: number): Docker.ContainerInspectInfo {
  return {
    Id: 'c1',
    Name: '/podrun_web_app_default_abc_000000_2',
    Created: '2026-11-30T09:00:00.5Z',
    Path: 'sleep',
    Args: ['60'],
    Image: 'sha256:img',
    State: { Status: status, ExitCode: exitCode, Running: status === 'running' },
    Config: {
      Image: 'busybox:1',
      Labels: { [LABEL.managedBy]: MANAGED_BY, [LABEL.podUid]: 'u1', [LABEL.containerType]: 'app', [LABEL.containerName]: 'app', [LABEL.restartCount]: '2' },
    },
    HostConfig: { NetworkMode: 'container:s1' },
    NetworkSettings: { Networks: {} },
  } as unknown as Docker.ContainerInspectInfo;
}

describe('listedFromInspect', () => {
  it('reads as the list entry of the same container', () => {
    const [pod] = groupObserved([listedFromInspect(inspected('exited', 137))]);
    expect(pod?.containers[0]).toMatchObject({ id: 'c1', dockerName: 'podrun_web_app_default_abc_000000_2', state: 'exited', exitCode: 137, restartCount: 2, created: Date.parse('2026-11-30T09:00:00Z') / 1000, image: 'busybox:1' });
  });

  it('has no exit code while running', () => {
    const [pod] = groupObserved([listedFromInspect(inspected('running', 0))]);
    expect(pod?.containers[0]?.state).toBe('running');
    expect(pod?.containers[0]?.exitCode).toBeUndefined();
  });
});
