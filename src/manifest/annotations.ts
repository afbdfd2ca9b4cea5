/**
 * podrun's own settings on a pod: annotations, so manifests stay plain Kubernetes and move to a
 * cluster unchanged (where they mean nothing).
 */

/** Opts a pod into health-gated updates: a Go duration (`2m`); `0` opts out of a `--rollback-after` default. */
export const ROLLBACK_ANNOTATION = 'podrun.io/rollback-after';
