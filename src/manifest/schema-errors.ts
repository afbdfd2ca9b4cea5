import type { ErrorObject } from 'ajv';
import { didYouMean } from '../base/did-you-mean.js';
import type { PathSegment } from './parse.js';
import type { Report } from './report.js';

// The schema's errors (ajv) in the words of the apiserver's validation: one per field, at its line.

/** One error per field: an empty name breaks both minLength and pattern, and says one thing. */
export function dedupe(errors: ErrorObject[]): ErrorObject[] {
  const seen = new Set<string>();
  return errors.filter((e) => {
    const k = e.keyword === 'required' || e.keyword === 'additionalProperties' ? `${e.instancePath}|${JSON.stringify(e.params)}` : e.instancePath;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

function segments(instancePath: string): PathSegment[] {
  if (!instancePath) return [];
  return instancePath
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((s) => (/^(0|[1-9][0-9]*)$/.test(s) ? Number(s) : s));
}

export function describeSchemaError(e: ErrorObject, fail: Report): void {
  const path = segments(e.instancePath);
  const p = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'additionalProperties': {
      // The validator is verbose: the object's schema names the fields there are (command, memory).
      const known = Object.keys((e.parentSchema as { properties?: Record<string, unknown> } | undefined)?.properties ?? {});
      const meant = didYouMean(String(p.additionalProperty), known);
      fail([...path, String(p.additionalProperty)], `unknown field: not part of a Kubernetes v1 Pod${meant ? ` (did you mean "${meant}"?)` : ''}`, {
        atKey: true,
      });
      return;
    }
    case 'not':
      fail(path, 'is a Kubernetes field that podrun cannot honour; remove it', { atKey: true });
      return;
    case 'required':
      fail([...path, String(p.missingProperty)], 'is required');
      return;
    case 'enum':
      fail(path, `must be one of: ${(p.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`);
      return;
    case 'const':
      fail(path, `must be ${JSON.stringify(p.allowedValue)}`);
      return;
    case 'minLength':
      fail(path, p.limit === 1 ? 'must not be empty' : `must be at least ${String(p.limit)} characters`);
      return;
    case 'pattern': {
      const kind = /\$defs\/(\w+)\//.exec(e.schemaPath)?.[1];
      const shape = kind ? PATTERN_MEANS[kind] : undefined;
      fail(path, `${JSON.stringify(pathValue(e))} is not valid here (${shape ?? `must match ${String(p.pattern)}`})`);
      return;
    }
    default:
      fail(path, e.message ?? e.keyword);
  }
}

/** What the schema's shared patterns mean, in words, for the messages. */
const PATTERN_MEANS: Record<string, string> = {
  quantity: 'must be a quantity such as 500m, 2, 64Mi or 1.5Gi',
  dnsSubdomain: "must be a DNS subdomain: lower-case letters, digits, '-' and '.', starting and ending with a letter or digit, at most 253 characters",
  dnsLabel: "must be a DNS label: lower-case letters, digits and '-', starting and ending with a letter or digit, at most 63 characters",
};

function pathValue(e: ErrorObject): unknown {
  return e.data;
}
