// Plain data, no engine: a unit test reads it too (test/runtime/bed-vanished.test.ts).

/**
 * Whether an engine's answer says the container is gone. Docker answers 404; Podman 4.3 answers
 * 500 "container <id> does not exist in database: no such container" to an inspect that races the
 * removal (it found the container, then lost it), and 404 only after.
 */
export function vanished(e: unknown): boolean {
  const err = e as { statusCode?: number; json?: { message?: string }; message?: string } | undefined;
  if (err?.statusCode === 404) return true;
  return err?.statusCode === 500 && /no such container/i.test(err.json?.message ?? err.message ?? '');
}
