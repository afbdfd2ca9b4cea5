import Docker from 'dockerode';

/**
 * Every run needs the real engine and the locally built test images (scripts/setup makes both).
 * A missing engine fails the run, in CI and out of it: integration tests are never skipped.
 */
export default async function setup(): Promise<void> {
  const docker = new Docker();
  try {
    await docker.ping();
  } catch (err) {
    throw new Error(`the Docker engine does not answer (${(err as Error).message}); run scripts/setup first`);
  }
  for (const image of ['podrun-test/busybox:1', 'podrun-test/pause:1']) {
    try {
      await docker.getImage(image).inspect();
    } catch {
      throw new Error(`test image ${image} is missing; run scripts/setup first`);
    }
  }
}
