import type { DumpOptions } from 'js-yaml';
import { yamlLib } from '../manifest/yaml-lib.js';

/**
 * YAML as podrun prints it: never with anchors and aliases (`&ref_0`, `*ref_0`), which js-yaml
 * writes when one object appears twice (a node's capacity and allocatable) and which kubectl's
 * output never has. Every `-o yaml` and --print-config goes through here.
 */
export function yamlText(doc: unknown, o: DumpOptions = {}): string {
  return yamlLib()
    .dump(doc, { ...o, noRefs: true })
    .trimEnd();
}
