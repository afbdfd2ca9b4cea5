import { Ajv, type ValidateFunction } from 'ajv';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

// The JSON Schema validator of a Pod, compiled from schemas/pod.schema.json on first use. The
// bundle that bin/podrun runs replaces this module with the same validator compiled ahead of
// time (scripts/bundle.mjs), so a command does not spend its start-up compiling the schema.

export const SCHEMA_PATH = fileURLToPath(new URL('../../schemas/pod.schema.json', import.meta.url));

/** The options the validator is compiled with, here and ahead of time. */
export const AJV_OPTIONS = { allErrors: true, strict: false, verbose: true } as const;

let compiled: ValidateFunction | undefined;

export function podValidator(): ValidateFunction {
  if (!compiled) compiled = new Ajv(AJV_OPTIONS).compile(JSON.parse(readFileSync(SCHEMA_PATH, 'utf8')) as object);
  return compiled;
}
