import { expect, it } from 'vitest';
import { vanished } from '../integration/vanished.js';

// The test beds read containers straight from the engine while podrun removes a restarting pod's
// old instances: a container gone between the list and the look mounts nothing, on either engine.
// The errors are dockerode's, as Podman 4.3.1 answered an inspect racing `podman rm -f`.
const dockerode = (statusCode: number, message: string): Error =>
  Object.assign(new Error(`(HTTP code ${statusCode}) server error - ${message} `), { statusCode, json: { message } });

it('counts Docker 404 and Podman 500 "no such container" as gone, and nothing else', () => {
  expect(vanished(dockerode(404, 'No such container: c1'))).toBe(true);
  expect(vanished(dockerode(404, 'no container with name or ID "c1" found: no such container'))).toBe(true);
  // Podman found the container, then lost it to the removal: 500, not 404.
  expect(vanished(dockerode(500, 'container b36a87 does not exist in database: no such container'))).toBe(true);
  // Without a parsed body (a streamed answer), the message still says it.
  expect(
    vanished(Object.assign(new Error('(HTTP code 500) server error - container b36a87 does not exist in database: no such container'), { statusCode: 500 })),
  ).toBe(true);
  expect(vanished(dockerode(500, 'runtime error: something else'))).toBe(false);
  expect(vanished(dockerode(409, 'no such container'))).toBe(false);
  expect(vanished(new Error('connect ENOENT'))).toBe(false);
  expect(vanished(undefined)).toBe(false);
});
