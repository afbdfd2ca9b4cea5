// The subset of the Kubernetes v1 Pod that podrun understands. Field names and shapes are the
// Kubernetes API's own, so a manifest moves to a cluster unchanged.

export type IntOrString = number | string;
export type Quantity = string | number;

export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  [ignored: string]: unknown;
}

export interface ObjectFieldSelector {
  fieldPath: string;
  apiVersion?: string;
}
export interface ResourceFieldSelector {
  containerName?: string;
  resource: string;
  divisor?: Quantity;
}
export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { fieldRef?: ObjectFieldSelector; resourceFieldRef?: ResourceFieldSelector };
}

export interface ContainerPort {
  name?: string;
  containerPort: number;
  hostPort?: number;
  hostIP?: string;
  protocol?: 'TCP' | 'UDP' | 'SCTP';
}

export interface ExecAction {
  command: string[];
}
export interface HTTPHeader {
  name: string;
  value: string;
}
export interface HTTPGetAction {
  path?: string;
  port: IntOrString;
  host?: string;
  scheme?: 'HTTP' | 'HTTPS';
  httpHeaders?: HTTPHeader[];
}
export interface TCPSocketAction {
  port: IntOrString;
  host?: string;
}
export interface GRPCAction {
  port: number;
  service?: string;
}

export interface Probe {
  exec?: ExecAction;
  httpGet?: HTTPGetAction;
  tcpSocket?: TCPSocketAction;
  grpc?: GRPCAction;
  initialDelaySeconds?: number;
  timeoutSeconds?: number;
  periodSeconds?: number;
  successThreshold?: number;
  failureThreshold?: number;
  terminationGracePeriodSeconds?: number;
}

export interface LifecycleHandler {
  exec?: ExecAction;
  httpGet?: HTTPGetAction;
  tcpSocket?: TCPSocketAction;
  sleep?: { seconds: number };
}
export interface Lifecycle {
  postStart?: LifecycleHandler;
  preStop?: LifecycleHandler;
}

export interface ResourceRequirements {
  limits?: Record<string, Quantity>;
  requests?: Record<string, Quantity>;
}

export interface SeccompProfile {
  type: 'RuntimeDefault' | 'Unconfined' | 'Localhost';
  localhostProfile?: string;
}
export interface Capabilities {
  add?: string[];
  drop?: string[];
}
export interface SecurityContext {
  privileged?: boolean;
  runAsUser?: number;
  runAsGroup?: number;
  runAsNonRoot?: boolean;
  readOnlyRootFilesystem?: boolean;
  allowPrivilegeEscalation?: boolean;
  capabilities?: Capabilities;
  seccompProfile?: SeccompProfile;
}
export interface PodSecurityContext {
  runAsUser?: number;
  runAsGroup?: number;
  runAsNonRoot?: boolean;
  supplementalGroups?: number[];
  seccompProfile?: SeccompProfile;
  sysctls?: { name: string; value: string }[];
}

export interface VolumeMount {
  name: string;
  mountPath: string;
  readOnly?: boolean;
  subPath?: string;
  mountPropagation?: 'None' | 'HostToContainer' | 'Bidirectional';
}

export interface Container {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  workingDir?: string;
  ports?: ContainerPort[];
  env?: EnvVar[];
  resources?: ResourceRequirements;
  volumeMounts?: VolumeMount[];
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  startupProbe?: Probe;
  lifecycle?: Lifecycle;
  terminationMessagePath?: string;
  terminationMessagePolicy?: 'File' | 'FallbackToLogsOnError';
  imagePullPolicy?: 'Always' | 'IfNotPresent' | 'Never';
  securityContext?: SecurityContext;
  stdin?: boolean;
  stdinOnce?: boolean;
  tty?: boolean;
  /** Only on init containers: `Always` makes a sidecar. */
  restartPolicy?: 'Always';
}

export type HostPathType = '' | 'DirectoryOrCreate' | 'Directory' | 'FileOrCreate' | 'File' | 'Socket' | 'CharDevice' | 'BlockDevice';

/** One file of a downwardAPI volume: a field of the pod, or a resource of one of its containers. */
export interface DownwardAPIVolumeFile {
  path: string;
  fieldRef?: { apiVersion?: string; fieldPath: string };
  resourceFieldRef?: { containerName?: string; resource: string; divisor?: Quantity };
  mode?: number;
}

export interface DownwardAPIVolumeSource {
  items?: DownwardAPIVolumeFile[];
  defaultMode?: number;
}

export interface Volume {
  name: string;
  hostPath?: { path: string; type?: HostPathType };
  emptyDir?: { medium?: '' | 'Memory'; sizeLimit?: Quantity };
  downwardAPI?: DownwardAPIVolumeSource;
  /** Static pods may project the downward API only (the kubelet refuses the other sources). */
  projected?: { sources?: { downwardAPI?: { items?: DownwardAPIVolumeFile[] } }[]; defaultMode?: number };
}

export interface PodDNSConfig {
  nameservers?: string[];
  searches?: string[];
  options?: { name: string; value?: string }[];
}

export interface HostAlias {
  ip: string;
  hostnames?: string[];
}

export interface PodSpec {
  containers: Container[];
  initContainers?: Container[];
  volumes?: Volume[];
  restartPolicy?: 'Always' | 'OnFailure' | 'Never';
  terminationGracePeriodSeconds?: number;
  activeDeadlineSeconds?: number;
  dnsPolicy?: 'ClusterFirst' | 'ClusterFirstWithHostNet' | 'Default' | 'None';
  dnsConfig?: PodDNSConfig;
  os?: { name: string };
  hostUsers?: boolean;
  hostNetwork?: boolean;
  hostPID?: boolean;
  hostIPC?: boolean;
  shareProcessNamespace?: boolean;
  hostname?: string;
  subdomain?: string;
  hostAliases?: HostAlias[];
  securityContext?: PodSecurityContext;
  readinessGates?: { conditionType: string }[];
  /** system-node-critical pods get the kubelet's strongest OOM protection. */
  priorityClassName?: string;
  [ignored: string]: unknown;
}

export interface Pod {
  apiVersion: 'v1';
  kind: 'Pod';
  metadata: ObjectMeta;
  spec: PodSpec;
  [ignored: string]: unknown;
}

/** Where a pod came from, for errors, conflicts and `--prune`. */
export interface PodOrigin {
  /** `file:/abs/path`, `url:https://...`, `apply:<set>` */
  source: string;
  file: string;
  /** 1-based line of the document that declared the pod. */
  line: number;
  /** Where people gave it from, when `source` is podrun's own (an applied set): `file:/abs/path`, `url:…`, `stdin`. */
  shown?: string;
}

/** A validated, defaulted pod with its identity: what the desired set holds. */
export interface DesiredPod {
  key: string;
  uid: string;
  pod: Pod;
  origin: PodOrigin;
}

/** A pod's containers, init containers first, in spec order. */
export function allContainers(pod: Pod): Container[] {
  return [...(pod.spec.initContainers ?? []), ...pod.spec.containers];
}
