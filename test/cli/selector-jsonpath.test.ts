import { describe, expect, it } from 'vitest';
import { renderJsonPath } from '../../src/cli/jsonpath.js';
import { parseSelector } from '../../src/cli/selector.js';

describe('label selectors, as kubectl reads them', () => {
  const l = { app: 'web', tier: 'front', 'example.com/team': 'a' };
  const cases: [string, boolean][] = [
    ['', true],
    ['app=web', true],
    ['app==web', true],
    ['app=db', false],
    ['app!=db', true],
    ['missing!=x', true],
    ['app in (web,db)', true],
    ['app notin (web)', false],
    ['missing notin (x)', true],
    ['tier', true],
    ['!tier', false],
    ['!missing', true],
    ['app=web,tier=front', true],
    ['app=web,tier=back', false],
    ['example.com/team=a', true],
    ['app in (db, web) , !missing', true],
  ];
  for (const [sel, want] of cases) it(`${sel || '(empty)'} → ${String(want)}`, () => expect(parseSelector(sel)(l)).toBe(want));

  it('refuses what kubectl refuses, naming the selector', () => {
    for (const bad of ['app=(', 'a b', 'app in web', '-app=x', 'app=-x']) expect(() => parseSelector(bad), bad).toThrow(`invalid label selector "${bad}"`);
    expect(parseSelector('app')(undefined)).toBe(false);
  });
});

describe('JSONPath templates, as kubectl renders them', () => {
  const list = {
    kind: 'List',
    items: [
      { metadata: { name: 'a', labels: { 'app.kubernetes.io/name': 'x' } }, status: { phase: 'Running', restarts: 3 } },
      { metadata: { name: 'b', labels: {} }, status: { phase: 'Pending', restarts: 0 } },
    ],
  };
  const cases: [string, string][] = [
    ['{.kind}', 'List'],
    ['{.items[*].metadata.name}', 'a b'],
    ['{.items[0].status.phase}', 'Running'],
    ['{.items[-1].metadata.name}', 'b'],
    ['{.items[0:1].metadata.name}', 'a'],
    ['{..phase}', 'Running Pending'],
    ['{.items[?(@.status.phase=="Pending")].metadata.name}', 'b'],
    ['{.items[?(@.status.restarts>1)].metadata.name}', 'a'],
    ["{.items[0].metadata.labels['app.kubernetes.io/name']}", 'x'],
    ['{range .items[*]}{.metadata.name}{"\\t"}{.status.phase}{"\\n"}{end}', 'a\tRunning\nb\tPending\n'],
    ['names: {.items[*].metadata.name}!', 'names: a b!'],
    ['{.items[0].status}', '{"phase":"Running","restarts":3}'],
    ['{.nothing}', ''],
  ];
  for (const [t, want] of cases) it(t, () => expect(renderJsonPath(t, list)).toBe(want));

  it('refuses a template it cannot read', () => {
    for (const bad of ['{.items[', '{range .items[*]}{.x}', '{end}', '{.items[?(x)]}'])
      expect(() => renderJsonPath(bad, list), bad).toThrow(/invalid jsonpath/);
  });
});
