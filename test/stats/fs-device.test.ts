import { describe, expect, it } from 'vitest';
import { deviceOf } from '../../src/stats/fs-device.js';

// The device cAdvisor names on a container's filesystem series: the mount holding the engine's root dir.

const MOUNTINFO = `22 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw
23 22 0:21 / /proc rw,nosuid shared:2 - proc proc rw
40 22 254:17 / /var/lib/docker rw,relatime shared:20 - xfs /dev/vdb1 rw
41 22 254:33 / /var/lib/docker2 rw,relatime shared:21 - ext4 /dev/vdc1 rw
42 22 254:49 / /srv/with\\040space rw shared:22 - ext4 /dev/vdd1 rw
`;

describe('deviceOf', () => {
  it('takes the deepest mount above the path, not one that only shares a prefix', () => {
    expect(deviceOf(MOUNTINFO, '/var/lib/docker')).toBe('/dev/vdb1');
    expect(deviceOf(MOUNTINFO, '/var/lib/docker/overlay2')).toBe('/dev/vdb1');
    expect(deviceOf(MOUNTINFO, '/var/lib/dockerish')).toBe('/dev/vda1');
    expect(deviceOf(MOUNTINFO, '/var/lib/docker2/x')).toBe('/dev/vdc1');
    expect(deviceOf(MOUNTINFO, '/srv/with space/docker')).toBe('/dev/vdd1');
    expect(deviceOf('', '/var/lib/docker')).toBeUndefined();
  });
});
