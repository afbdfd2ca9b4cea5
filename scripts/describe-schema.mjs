// Writes the field descriptions into schemas/pod.schema.json, for editors (yaml-language-server
// shows them on hover) and `podrun explain`: the Kubernetes API's own description of each field,
// as the kubernetes-models package ships it (from the Kubernetes OpenAPI document, Apache-2.0),
// and, for the fields podrun does not honour, what podrun does with them. Run it after editing
// the schema: node scripts/describe-schema.mjs (a test checks that it changes nothing).
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const SCHEMA = 'schemas/pod.schema.json';
const SOURCES = ['node_modules/kubernetes-models/v1', 'node_modules/@kubernetes-models/apimachinery/apis/meta/v1'];

/** interface name (without the IIoK8s...V1 prefix) → property → { description, type } */
function readTypes() {
  const types = new Map();
  for (const dir of SOURCES) {
    for (const f of readdirSync(dir).filter((n) => n.endsWith('.d.ts'))) {
      const text = readFileSync(join(dir, f), 'utf8');
      for (const m of text.matchAll(/export interface I(\w+)(?: extends [\w, ]+)? \{([\s\S]*?)\n\}/g)) {
        const name = m[1];
        const props = new Map();
        for (const p of m[2].matchAll(/(?:\/\*\*\s*\n((?:\s*\*.*\n)+?)\s*\*\/\s*\n)?\s*"([\w$-]+)"\??: ([^;]+);/g)) {
          const description = (p[1] ?? '')
            .split('\n')
            .map((l) => l.replace(/^\s*\*\s?/, ''))
            .join(' ')
            .replace(/\s+/g, ' ')
            .trim();
          const ref = /IIoK8s\w+?V1(\w+)/.exec(p[3])?.[1];
          props.set(p[2], { description, type: ref });
        }
        if (!types.has(name)) types.set(name, props);
      }
    }
  }
  return types;
}

const NOTES = {
  ignored: 'podrun: accepted and ignored; validate and apply print a warning that says why.',
  unsupported: 'podrun: refused. podrun cannot honour this field on the Docker engine.',
  staticRule: 'podrun: refused, as the kubelet refuses it in a static pod.',
  serverSet: 'podrun: accepted and ignored, as the kubelet ignores it in a static pod (the apiserver sets it).',
};

function noteOf(schema) {
  const ref = /^#\/\$defs\/(ignored|unsupported|staticRule|serverSet)$/.exec(schema.$ref ?? '')?.[1];
  return ref ? NOTES[ref] : undefined;
}

const schema = JSON.parse(readFileSync(SCHEMA, 'utf8'));
const types = readTypes();
const seen = new Set();

function describe(node, type) {
  if (!node || typeof node !== 'object') return;
  if (node.$ref?.startsWith('#/$defs/')) {
    const name = node.$ref.slice(8);
    const key = `${name}:${type}`;
    if (seen.has(key)) return;
    seen.add(key);
    describe(schema.$defs[name], type);
    return;
  }
  if (node.type === 'array' && node.items) describe(node.items, type);
  for (const k of ['oneOf', 'anyOf', 'allOf']) for (const s of node[k] ?? []) describe(s, type);
  if (!node.properties) return;
  const props = types.get(type);
  for (const [name, sub] of Object.entries(node.properties)) {
    const k8s = props?.get(name);
    const note = noteOf(sub);
    const text = [k8s?.description, note].filter(Boolean).join('\n\n');
    if (text) sub.description = text;
    else delete sub.description;
    describe(sub, k8s?.type);
  }
}

schema.$comment =
  'Field descriptions: the Kubernetes API reference (via kubernetes-models, Apache-2.0), with what podrun does where it differs; written by scripts/describe-schema.mjs.';
describe({ properties: schema.properties }, 'Pod');
// A ResourceList is a map in the API; its keys are described in the resource docs.
const RESOURCES = {
  cpu: "CPU, in cores or millicores (500m). Requests set the container's CPU shares; limits set its CPU quota.",
  memory: "Memory, in bytes or with a suffix (64Mi, 1Gi). Limits set the container's memory limit; requests count for its QoS class.",
  'ephemeral-storage': 'Local ephemeral storage (the writable layer, logs, emptyDirs on disk).',
};
for (const [k, v] of Object.entries(schema.$defs.ResourceList?.properties ?? {})) {
  const note =
    k === 'ephemeral-storage'
      ? '\n\npodrun: accepted and not enforced, with a warning: the kubelet enforces it by evicting the pod, and never evicts a static pod.'
      : '';
  v.description = `${RESOURCES[k] ?? ''}${note}`;
}
// sizeLimit sizes a memory emptyDir's tmpfs; on disk nothing enforces it for a static pod.
const sizeLimit = schema.$defs.Volume.properties.emptyDir.properties.sizeLimit;
sizeLimit.description = `${sizeLimit.description}\n\npodrun: the size of a medium: Memory emptyDir's tmpfs. On disk it is accepted and not enforced, with a warning: the kubelet enforces it by evicting the pod, and never evicts a static pod.`;
// What podrun does where the kubelet's own rules narrow or add to the API's words (issue 18).
const FIELD_NOTES = [
  [['PodSpec', 'hostUsers'], 'true (the default) runs in the host user namespace; false is refused: podrun cannot give a user namespace on the Docker engine.'],
  [['PodSpec', 'os'], 'linux runs; any other OS is refused, as the kubelet refuses a pod for another OS.'],
  [
    ['PodSpec', 'dnsConfig'],
    "added to the node's resolver (--resolv-conf), as the kubelet's appendDNSConfig does; with dnsPolicy None it is the whole resolver.",
  ],
  [['PodSpec', 'hostAliases'], "added to the pod's /etc/hosts; on the host network, to a copy of the node's /etc/hosts."],
  [
    ['PodSecurityContext', 'sysctls'],
    "the kubelet's safe set; others only when the node allows them (--allowed-unsafe-sysctls), never a node-wide one, and no net.* with hostNetwork.",
  ],
  [
    ['VolumeMount', 'subPath'],
    'opened once and mounted from what was opened: a symlink in the volume never leads out of it (CreateContainerConfigError). Not on a medium: Memory emptyDir.',
  ],
  [['VolumeMount', 'mountPropagation'], 'Bidirectional only for privileged containers, as the apiserver requires.'],
  [['LifecycleHandler', 'tcpSocket'], 'accepted with a warning; the hook fails, as the kubelet fails it (it runs exec, httpGet and sleep hooks only).'],
];
for (const [[def, prop], note] of FIELD_NOTES) {
  const field = schema.$defs[def].properties[prop];
  field.description = `${field.description ?? ''}\n\npodrun: ${note}`.replace(/^\n\n/, '');
}
// TypeMeta's fields carry no description in the models.
schema.properties.apiVersion.description = 'The API version of the object: always v1 for a Pod.';
schema.properties.kind.description = 'The kind of object: Pod (a file may also hold a PodList, see manifest.schema.json).';
const out = `${JSON.stringify(schema, null, 2)}\n`;
if (process.argv.includes('--check')) {
  if (out !== readFileSync(SCHEMA, 'utf8')) {
    process.stderr.write(`${SCHEMA} is not up to date: run node scripts/describe-schema.mjs\n`);
    process.exit(1);
  }
} else {
  writeFileSync(SCHEMA, out);
}
