import { describe, expect, it } from 'vitest';
import { requestFailure } from '../../src/cli/main.js';
import { EXIT } from '../../src/cli/process-io.js';
import { boundedCall, createRefusal, DockerRequestError, engineError, kindOfStatus } from '../../src/runtime/docker/engine.js';
import { EngineRequestError, EngineUnavailableError, isNotFound, type EngineErrorKind } from '../../src/runtime/engine-errors.js';
import { criEngineError, isCriNotFound } from '../../src/runtime/cri/engine-errors.js';
import {
  CriDeadlineError,
  CriNotFoundError,
  CriNotSupportedError,
  CriRequestError,
  CriUnreachableError,
  kindOfGrpcCode,
} from '../../src/runtime/cri/errors.js';

// Engine errors are typed by kind, in gRPC's words, whichever engine refused: the Docker engine
// maps its HTTP statuses into them, the CRI engine its gRPC codes. Plain data in, kinds out; then
// what the CLI decides for each kind.

/** A dockerode failure as it arrives: the status on the error, the engine's words in its body. */
const dockerode = (statusCode: number, message: string): Error =>
  Object.assign(new Error(`(HTTP code ${statusCode}) x - ${message}`), { statusCode, json: { message } });

describe('engine error kinds', () => {
  it("maps Docker's HTTP statuses", () => {
    const statuses = [404, 409, 400, 403, 500, 501, 502, 503, 504, undefined];
    expect(statuses.map(kindOfStatus)).toEqual([
      'NotFound',
      'FailedPrecondition',
      'InvalidArgument',
      'InvalidArgument',
      'Internal',
      'Unimplemented',
      'Unavailable',
      'Unavailable',
      'DeadlineExceeded',
      'Unknown',
    ]);
    const err = engineError(dockerode(404, 'No such container: c1'), 'inspect container', 'unix:///x', 'Podman');
    expect(err).toBeInstanceOf(DockerRequestError);
    expect(err).toMatchObject({ kind: 'NotFound', engine: 'Podman', detail: 'No such container: c1', message: 'inspect container: No such container: c1' });
    expect(isNotFound(err)).toBe(true);
    // A create's 409 is a name in use.
    expect(createRefusal(engineError(dockerode(409, 'Conflict. The container name "/x" is already in use'), 'create container', 'unix:///x'))).toMatchObject({
      kind: 'AlreadyExists',
      status: 409,
    });
    expect(createRefusal(err)).toBe(err);
    const down = engineError(Object.assign(new Error('connect ENOENT'), { code: 'ENOENT' }), 'ping', 'unix:///x', 'Podman');
    expect(down).toBeInstanceOf(EngineUnavailableError);
    expect(down.message).toBe('cannot reach Podman at unix:///x: ENOENT (connect ENOENT)');
  });

  it("takes Docker's 304 (already started or stopped) as done, and names the engine that never answered", async () => {
    let calls = 0;
    const answered = await boundedCall('stop container', () => (calls++, Promise.reject(dockerode(304, ''))), 60_000, 'unix:///x', undefined);
    expect(answered).toBeUndefined();
    expect(calls).toBe(1);
    await expect(
      boundedCall('start container', () => Promise.reject(dockerode(409, 'removal in progress')), 60_000, 'unix:///x', undefined),
    ).rejects.toMatchObject({
      kind: 'FailedPrecondition',
    });
    const stuck = boundedCall(
      'stop container',
      () => new Promise<never>(() => undefined),
      1,
      'unix:///x',
      undefined,
      () => 'Podman',
    );
    await expect(stuck).rejects.toMatchObject({ kind: 'DeadlineExceeded', engine: 'Podman' });
    await expect(stuck).rejects.toThrow('Podman did not answer within 1ms: stop container');
  });

  it("maps a CRI runtime's gRPC codes, and names the runtime at its endpoint", () => {
    const codes = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, undefined];
    expect(Object.fromEntries(codes.map((c) => [String(c), kindOfGrpcCode(c)]))).toEqual({
      '0': 'Unknown',
      '1': 'Unknown',
      '2': 'Unknown',
      '3': 'InvalidArgument',
      '4': 'DeadlineExceeded',
      '5': 'NotFound',
      '6': 'AlreadyExists',
      '7': 'Unknown',
      '8': 'Unknown',
      '9': 'FailedPrecondition',
      '10': 'Unknown',
      '11': 'Unknown',
      '12': 'Unimplemented',
      '13': 'Internal',
      '14': 'Unavailable',
      '15': 'Unknown',
      '16': 'Unknown',
      undefined: 'Unknown',
    });
    const at = 'unix:///run/c.sock';
    const as = (err: Error): EngineRequestError => criEngineError(err, 'create container') as EngineRequestError;
    expect(as(new CriNotFoundError(at, 'ContainerStatus', 'c1'))).toMatchObject({ kind: 'NotFound', engine: `the container runtime at ${at}` });
    expect(as(new CriDeadlineError(at, 'StopContainer', 1000)).kind).toBe('DeadlineExceeded');
    expect(as(new CriNotSupportedError(at, 'GetContainerEvents', 'no')).kind).toBe('Unimplemented');
    expect(as(new CriRequestError(at, 'CreateContainer', 'name is reserved', 6)).kind).toBe('AlreadyExists');
    expect(as(new CriRequestError(at, 'CreateContainer', 'bad', 3)).kind).toBe('InvalidArgument');
    expect(isCriNotFound(new CriNotFoundError(at, 'ContainerStatus', 'c1'))).toBe(true);
    expect(isCriNotFound(as(new CriNotFoundError(at, 'ContainerStatus', 'c1')))).toBe(true);
    const unreachable = criEngineError(new CriUnreachableError(at, 'no socket', 'ENOENT'), 'list');
    expect(unreachable).toBeInstanceOf(EngineUnavailableError);
    expect(unreachable).toMatchObject({ kind: 'Unavailable', code: 'ENOENT' });
  });

  it("the CLI's decision for each kind: the engine's fault exits 3 naming it, the request's exits 1", () => {
    const decided = (kind: EngineErrorKind) => requestFailure(new EngineRequestError('stop container: x', kind, { engine: 'Podman' }));
    const faults: EngineErrorKind[] = ['Unavailable', 'DeadlineExceeded', 'Unimplemented', 'Internal'];
    const refusals: EngineErrorKind[] = ['NotFound', 'AlreadyExists', 'InvalidArgument', 'FailedPrecondition', 'Unknown'];
    for (const kind of faults) expect(decided(kind), kind).toEqual({ line: 'podrun: Podman is failing: stop container: x', exit: EXIT.engine });
    for (const kind of refusals) expect(decided(kind), kind).toEqual({ line: 'podrun: engine error: stop container: x', exit: EXIT.failed });
  });
});
