// Writes V8's code cache of the YAML parser and the Pod validator (dist/bundle/NAME.cache), from a
// run that parses and validates manifests as podrun does, so the cache holds the functions such a
// command compiles and not only the top level. Run by scripts/bundle.mjs in a plain `node`, as
// bin/podrun runs: V8 takes a cache only under the flags it was made with.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { runCachedScript } from '../dist/base/cached-script.js';

const dir = resolve('dist/bundle');
const yaml = runCachedScript(dir, 'js-yaml');
const validator = runCachedScript(dir, 'pod-validator');
const { parseEvents, constructFromEvents, CORE_SCHEMA, intYaml11Tag, dump, YAMLException } = yaml.exports;
const validate = validator.exports;

const schema = CORE_SCHEMA.withTags(intYaml11Tag);
const texts = ['manifests', 'test/fixtures/static-pods']
  .flatMap((d) => readdirSync(d).filter((f) => /\.(ya?ml|json)$/.test(f)).map((f) => readFileSync(join(d, f), 'utf8')))
  .concat(readFileSync('test/fixtures/kitchen-sink.yaml', 'utf8'), 'a: [1, 2\n', 'kind: Pod\nspec: {containers: [{name: c, image: x, ports: [{containerPort: "80"}]}]}\n');
for (let round = 0; round < 3; round++) {
  for (const text of texts) {
    let docs = [];
    try {
      docs = constructFromEvents(parseEvents(text, { filename: 'x.yaml' }), { source: text, filename: 'x.yaml', schema });
    } catch (err) {
      if (!(err instanceof YAMLException)) throw err;
    }
    for (const d of docs) {
      validate(d);
      dump(d, { lineWidth: -1, noRefs: true });
    }
  }
}
for (const [name, s] of [['js-yaml', yaml], ['pod-validator', validator]]) writeFileSync(join(dir, `${name}.cache`), s.script.createCachedData());
