// What a manifest may cost. The engine and the kernel have hard limits that a manifest can
// exceed while being perfectly valid YAML; podrun refuses such a pod at validation, naming the
// field, instead of failing at create time (or worse, running out of memory on the way).

/** A file or URL body, read whole: the kubelet's cap for static pod manifests. */
export const MAX_MANIFEST_BYTES = 10 * 1024 * 1024;

/**
 * One YAML document once its aliases are expanded: the apiserver's request body limit
 * (3 MiB). A 118 KB file of aliases can otherwise expand to gigabytes (a "billion laughs").
 */
export const MAX_EXPANDED_DOCUMENT_BYTES = 3 * 1024 * 1024;

/**
 * One pod as JSON, defaulted. The engine refuses a create request whose labels come near 1 MiB
 * (431 Request Header Fields Too Large, measured on Docker 20.10) and the sandbox label carries
 * the pod; half of that leaves room for everything else. Far above any real pod (kubeadm's
 * kube-apiserver is about 4 KiB).
 */
export const MAX_POD_BYTES = 512 * 1024;

/** One command, argument or env string after $(VAR) expansion: the kernel's MAX_ARG_STRLEN. */
export const MAX_ARG_BYTES = 128 * 1024;

/** A container's command, args and environment together: well under the kernel's ARG_MAX (2 MiB). */
export const MAX_EXEC_BYTES = 1024 * 1024;

/** Annotations of one pod together, as the apiserver counts them (keys and values). */
export const MAX_ANNOTATION_BYTES = 256 * 1024;

/** Bytes in human terms for messages. */
export function size(n: number): string {
  if (n >= 1024 * 1024) return `${(n / (1024 * 1024)).toFixed(n % (1024 * 1024) ? 2 : 0)} MiB`;
  if (n >= 1024) return `${(n / 1024).toFixed(n % 1024 ? 1 : 0)} KiB`;
  return `${n} bytes`;
}
