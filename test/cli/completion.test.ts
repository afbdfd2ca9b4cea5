import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../../src/cli/program.js';
import { complete, FILES, type PodLister } from '../../src/cli/completion.js';

const quiet = new PassThrough();
const program = buildProgram({ out: () => undefined, err: () => undefined, stdout: quiet, stderr: quiet, isTTY: false }, () => undefined);

/** Pods by namespace; records what each listing was asked with. */
function lister(asked: { globals: string[]; ns: string | undefined }[]): PodLister {
  const all = [
    { name: 'web', namespace: 'default', containers: ['nginx', 'sidecar'] },
    { name: 'db', namespace: 'prod', containers: ['postgres'] },
  ];
  return {
    pods: async (globals, ns) => {
      asked.push({ globals, ns });
      return all.filter((p) => ns === undefined || p.namespace === ns);
    },
  };
}

const at = async (line: string, asked: { globals: string[]; ns: string | undefined }[] = []): Promise<string[]> =>
  complete(program, line.split(' '), lister(asked));

describe('completion', () => {
  it('offers commands, subcommands and flags', async () => {
    expect(await at('ge')).toContain('get');
    expect(await at('get ')).toEqual(['pods', 'pod', 'po', 'node', 'nodes', 'no']);
    expect(await at('logs --ta')).toEqual(['--tail']);
    expect(await at('logs --state')).toEqual(['--state-dir']);
  });

  it('offers the values of -o, -n, -c, --for and the shells', async () => {
    expect(await at('get pods -o ')).toEqual(['wide', 'json', 'yaml', 'name', 'jsonpath=']);
    expect(await at('get node --output ')).toEqual(['wide', 'json', 'yaml']);
    expect(await at('logs -n ')).toEqual(['default', 'prod']);
    expect(await at('logs web -c ')).toEqual(['nginx', 'sidecar']);
    expect(await at('exec -n prod pod/db -c ')).toEqual(['postgres']);
    expect(await at('wait --for ')).toContain('condition=Ready');
    expect(await at('completion ')).toEqual(['bash', 'zsh', 'fish']);
    expect(await at('apply -f ')).toEqual([FILES]);
    expect(await at('--state-dir ')).toEqual([FILES]);
  });

  it('lists pods with the state directory, engine and namespace of the line', async () => {
    const asked: { globals: string[]; ns: string | undefined }[] = [];
    expect(await at('--state-dir /s logs -n prod ', asked)).toEqual(['db']);
    expect(asked).toEqual([{ globals: ['--state-dir', '/s'], ns: 'prod' }]);
    asked.length = 0;
    expect(await at('describe pod --docker-host=tcp://127.0.0.1:2375 ', asked)).toEqual(['web']);
    expect(asked).toEqual([{ globals: ['--docker-host=tcp://127.0.0.1:2375'], ns: 'default' }]);
    expect(await at('get pods -A ')).toEqual(['web', 'db']);
    // One pod for logs and exec; after --, the command's words are files.
    expect(await at('logs web ')).toEqual([]);
    expect(await at('exec web -- ')).toEqual([FILES]);
  });
});
