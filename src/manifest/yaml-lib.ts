import * as jsYaml from 'js-yaml';

// js-yaml, asked for where a text is parsed or a document printed. The bundle that bin/podrun runs
// replaces this module with one that runs js-yaml's code-cached file on the first call
// (scripts/bundle.mjs), so a command that neither reads nor prints YAML, and an `apply` whose files
// are all known (src/cli/manifest-cache.ts), never load it (2-3 ms of a start).

export type YamlLib = typeof jsYaml;

export function yamlLib(): YamlLib {
  return jsYaml;
}
