import type { Container, Pod, Probe, LifecycleHandler, HTTPGetAction } from './types.js';

export const DEFAULT_NAMESPACE = 'default';

/** The kubelet's rule: pull always for `:latest` or an untagged image, else only when missing. */
export function defaultPullPolicy(image: string): 'Always' | 'IfNotPresent' {
  if (image.includes('@')) return 'IfNotPresent';
  const lastSegment = image.slice(image.lastIndexOf('/') + 1);
  const colon = lastSegment.lastIndexOf(':');
  if (colon < 0) return 'Always';
  return lastSegment.slice(colon + 1) === 'latest' ? 'Always' : 'IfNotPresent';
}

function defaultHttpGet(h: HTTPGetAction): HTTPGetAction {
  return { ...h, path: h.path ?? '/', scheme: h.scheme ?? 'HTTP' };
}

function defaultHandler<T extends Probe | LifecycleHandler>(h: T): T {
  return h.httpGet ? { ...h, httpGet: defaultHttpGet(h.httpGet) } : h;
}

function defaultProbe(p: Probe | undefined): Probe | undefined {
  if (!p) return undefined;
  return {
    ...defaultHandler(p),
    timeoutSeconds: p.timeoutSeconds ?? 1,
    periodSeconds: p.periodSeconds ?? 10,
    successThreshold: p.successThreshold ?? 1,
    failureThreshold: p.failureThreshold ?? 3,
  };
}

function defaultContainer(c: Container, hostNetwork: boolean): Container {
  const out: Container = {
    ...c,
    // Plain (non-pointer) booleans in the API: false and unset are the same value.
    stdin: c.stdin ?? false,
    stdinOnce: c.stdinOnce ?? false,
    tty: c.tty ?? false,
    imagePullPolicy: c.imagePullPolicy ?? defaultPullPolicy(c.image),
    terminationMessagePath: c.terminationMessagePath ?? '/dev/termination-log',
    terminationMessagePolicy: c.terminationMessagePolicy ?? 'File',
  };
  if (c.volumeMounts) out.volumeMounts = c.volumeMounts.map((m) => ({ ...m, readOnly: m.readOnly ?? false }));
  if (c.ports) {
    out.ports = c.ports.map((p) => ({
      ...p,
      protocol: p.protocol ?? 'TCP',
      // As the apiserver does: on the host network the container port is the host port.
      ...(hostNetwork && !p.hostPort ? { hostPort: p.containerPort } : {}),
    }));
  }
  for (const k of ['livenessProbe', 'readinessProbe', 'startupProbe'] as const) {
    const p = defaultProbe(c[k]);
    if (p) out[k] = p;
  }
  if (c.lifecycle) {
    out.lifecycle = {
      ...(c.lifecycle.postStart ? { postStart: defaultHandler(c.lifecycle.postStart) } : {}),
      ...(c.lifecycle.preStop ? { preStop: defaultHandler(c.lifecycle.preStop) } : {}),
    };
  }
  return out;
}

/** The pod as the apiserver and kubelet would default it; the input is not modified. */
export function applyDefaults(pod: Pod): Pod {
  const spec = pod.spec;
  const hostNetwork = spec.hostNetwork === true;
  return {
    ...pod,
    metadata: { ...pod.metadata, namespace: pod.metadata.namespace ?? DEFAULT_NAMESPACE },
    spec: {
      ...spec,
      hostNetwork,
      hostPID: spec.hostPID ?? false,
      hostIPC: spec.hostIPC ?? false,
      restartPolicy: spec.restartPolicy ?? 'Always',
      terminationGracePeriodSeconds: spec.terminationGracePeriodSeconds ?? 30,
      dnsPolicy: spec.dnsPolicy ?? 'ClusterFirst',
      containers: spec.containers.map((c) => defaultContainer(c, hostNetwork)),
      ...(spec.initContainers ? { initContainers: spec.initContainers.map((c) => defaultContainer(c, hostNetwork)) } : {}),
      ...(spec.volumes
        ? {
            volumes: spec.volumes.map((v) =>
              v.hostPath
                ? { ...v, hostPath: { ...v.hostPath, type: v.hostPath.type ?? '' } }
                : // A volume with no source is an emptyDir, as in Kubernetes.
                  { ...v, emptyDir: v.emptyDir ?? {} },
            ),
          }
        : {}),
    },
  };
}
