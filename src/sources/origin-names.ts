// The names of where pods come from, in one small module: the reconciler and the CLI read them
// without loading the sources themselves.

/** The origin of the pods of an applied set: `apply:<set id>`. */
export const APPLY_PREFIX = 'apply:';

/** The applied set an origin names, if it names one. */
export function appliedSetOf(origin: string): string | undefined {
  return origin.startsWith(APPLY_PREFIX) ? origin.slice(APPLY_PREFIX.length) : undefined;
}

/**
 * A pod's source as people wrote it: the path (`file:/etc/podrun/web.yaml` → `/etc/podrun/web.yaml`)
 * or URL (`url:https://…` → `https://…`); `stdin` and anything else as it is.
 */
export function shownSource(source: string): string {
  if (source.startsWith('file:')) return source.slice('file:'.length);
  if (source.startsWith('url:')) return source.slice('url:'.length);
  return source;
}
