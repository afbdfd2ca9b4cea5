import { describe, expect, it } from 'vitest';
import { CriEngine } from '../../src/runtime/cri/engine.js';
import { identityOf } from '../../src/runtime/labels.js';
import { desired } from '../fixtures/pods.js';

// A CRI runtime restarts nothing by itself: the CRI engine says so in its capabilities, and a
// caller that asks for engine restarts anyway is refused before the runtime is asked anything,
// rather than the option dropped (the endpoint here answers nothing: any call would fail otherwise).

const POD = desired(`apiVersion: v1
kind: Pod
metadata: {name: caps, namespace: cri}
spec:
  containers: [{name: app, image: busybox:1}]
`);

describe('the CRI engine', () => {
  it('has no restart policy, and refuses to be asked for one', async () => {
    const rt = new CriEngine({ stateDir: '/nonexistent/podrun-cri-caps', pauseImage: 'pause', runtimeEndpoint: 'unix:///nonexistent/podrun-cri-caps.sock' });
    expect(rt.capabilities.restartPolicy).toBe(false);
    const id = identityOf(POD.pod, POD.origin.source);
    await expect(rt.createSandbox(POD.pod, id, 0, 'h', true)).rejects.toThrow('a CRI runtime restarts no container by itself');
    const sandbox = { id: 's', ip: '10.0.0.2' };
    const start = { type: 'app' as const, restartCount: 0, hash: 'h', sandbox, volumes: new Map(), engineRestarts: true, imageReady: true };
    await expect(rt.startContainer(POD.pod, id, POD.pod.spec.containers[0]!, start)).rejects.toThrow('a CRI runtime restarts no container by itself');
  });
});
