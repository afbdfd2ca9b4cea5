import { describe, expect, it } from 'vitest';
import { normalizeArgv } from '../../src/cli/argv.js';

const shape = { globalValueOptions: new Set(['--state-dir', '--docker-host', '--pause-image']) };
const n = (line: string): string =>
  normalizeArgv(['node', 'podrun', ...line.split(' ').filter(Boolean)], shape)
    .slice(2)
    .join(' ');

describe('kubectl argument forms', () => {
  it('takes TYPE/NAME for get, describe and top', () => {
    expect(n('get pod/web')).toBe('get pods web');
    expect(n('get pods/web')).toBe('get pods web');
    expect(n('get po/web po/db')).toBe('get pods web db');
    expect(n('describe pod/web')).toBe('describe pod web');
    expect(n('describe pods/web -n prod')).toBe('describe pod web -n prod');
    expect(n('get node/this')).toBe('get node this');
  });

  it('moves a type given after options next to its verb', () => {
    expect(n('get -n prod pods')).toBe('get pods -n prod');
    expect(n('get -n prod pod/web -o wide')).toBe('get pods -n prod web -o wide');
    expect(n('get -o=wide pods')).toBe('get pods -o=wide');
  });

  it('skips global options and their values to find the verb', () => {
    expect(n('--state-dir /s get pod/web')).toBe('--state-dir /s get pods web');
    expect(n('--state-dir=/s get pod/web')).toBe('--state-dir=/s get pods web');
    // A global value that looks like a verb is a value.
    expect(n('--state-dir get get pod/web')).toBe('--state-dir get get pods web');
  });

  it('leaves alone what is not its business', () => {
    expect(n('get pods web')).toBe('get pods web');
    expect(n('get pods -l app=web/x')).toBe('get pods -l app=web/x');
    expect(n('get pods -n pod/x web')).toBe('get pods -n pod/x web');
    expect(n('delete pod/web')).toBe('delete pod/web');
    expect(n('logs pod/web')).toBe('logs pod/web');
    expect(n('get svc/web')).toBe('get svc/web');
    expect(n('describe default/web')).toBe('describe default/web');
    expect(n('exec web -- get pod/x')).toBe('exec web -- get pod/x');
    expect(n('get')).toBe('get');
    expect(n('')).toBe('');
  });

  it('never changes the array it was given', () => {
    const argv = ['node', 'podrun', 'get', 'pod/web'];
    normalizeArgv(argv, shape);
    expect(argv).toEqual(['node', 'podrun', 'get', 'pod/web']);
  });
});
