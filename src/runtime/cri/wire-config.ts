import type { ContainerConfig, NamespaceOption, PodSandboxConfig } from '../kuberuntime/cri-types.js';
import {
  MountPropagation,
  NamespaceMode,
  ProfileType,
  Protocol,
  type ContainerConfigInput,
  type NamespaceOptionInput,
  type PodSandboxConfigInput,
} from './messages.js';

// podrun's CRI configs (kuberuntime/cri-types.ts, enums by name) as runtime.v1 sends them (enums
// by number): the one place the two meet.

const PROPAGATION = {
  PROPAGATION_PRIVATE: MountPropagation.PRIVATE,
  PROPAGATION_HOST_TO_CONTAINER: MountPropagation.HOST_TO_CONTAINER,
  PROPAGATION_BIDIRECTIONAL: MountPropagation.BIDIRECTIONAL,
} as const;

function namespaces(n: NamespaceOption): NamespaceOptionInput {
  return { network: NamespaceMode[n.network], pid: NamespaceMode[n.pid], ipc: NamespaceMode[n.ipc] };
}

export function sandboxConfigMessage(c: PodSandboxConfig): PodSandboxConfigInput {
  return {
    ...c,
    portMappings: c.portMappings.map((p) => ({ ...p, protocol: Protocol[p.protocol] })),
    linux: { ...c.linux, securityContext: { ...c.linux.securityContext, namespaceOptions: namespaces(c.linux.securityContext.namespaceOptions) } },
  };
}

export function containerConfigMessage(c: ContainerConfig): ContainerConfigInput {
  const s = c.linux.securityContext;
  return {
    ...c,
    mounts: c.mounts.map((m) => ({ ...m, propagation: PROPAGATION[m.propagation] })),
    linux: {
      resources: c.linux.resources,
      securityContext: { ...s, namespaceOptions: namespaces(s.namespaceOptions), seccomp: { profileType: ProfileType[s.seccomp.profileType] } },
    },
  };
}
