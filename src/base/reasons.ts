/**
 * The kubelet's reasons for a container that waits, as a closed set: each is shown to people as
 * is, and code decides by the value, never by reading a message. The names are the kubelet's
 * (pkg/kubelet/container/sync_result.go, pkg/kubelet/images/types.go,
 * pkg/kubelet/kuberuntime/kuberuntime_container.go); podrun adds none of its own.
 */
export const IMAGE_REASONS = ['ErrImagePull', 'ImagePullBackOff', 'ErrImageNeverPull', 'InvalidImageName'] as const;
export const START_REASONS = [
  'CreateContainerConfigError',
  'CreateContainerError',
  'RunContainerError',
  'PreCreateHookError',
  'PreStartHookError',
  'PostStartHookError',
] as const;

export type ImageReason = (typeof IMAGE_REASONS)[number];
export type StartReason = (typeof START_REASONS)[number];
/** Why a container waits (the kubelet's ContainerStateWaiting.reason for what podrun imposes). */
export type WaitingReason = ImageReason | StartReason | 'CrashLoopBackOff';

/** What a step of a pod's sync did, and why, in the kubelet's terms (its SyncResult). */
export interface StepResult {
  action: 'StartContainer' | 'KillContainer' | 'CreatePodSandbox' | 'KillPodSandbox' | 'PullImage';
  container?: string;
  reason: WaitingReason | 'FailedCreatePodSandBox';
  /** For people: the engine's or registry's words. */
  message: string;
}

const IMAGE = new Set<string>(IMAGE_REASONS);

/** Whether a container waits on its image (only then does the image back-off hold it). */
export function isImageReason(reason: string | undefined): reason is ImageReason {
  return reason !== undefined && IMAGE.has(reason);
}
