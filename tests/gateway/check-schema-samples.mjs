// Checks what tests/grammar/schema_samples.cpp wrote with ajv (JSON Schema 2020-12, with
// ajv-formats for date, time, date-time, uuid, email, ipv4): every completed sample of an
// accepted schema parses and validates, most walks complete, and every refused schema is
// refused with a message that names its keyword and where it is.
//   node check-schema-samples.mjs SCHEMAS_JSON SAMPLES_JSONL
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

const [schemasPath, samplesPath] = process.argv.slice(2);
const corpus = JSON.parse(readFileSync(schemasPath, 'utf8'));
const lines = readFileSync(samplesPath, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
// draft-04/06/07 schemas: their $schema URI is known to ajv only with those meta-schemas;
// they are validated as 2020-12 after rewriting the older spellings: `id` (ajv refuses it),
// boolean exclusiveMinimum/Maximum, items as an array with additionalItems.
const maps = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'];
const singles = ['additionalProperties', 'additionalItems', 'not', 'if', 'then', 'else', 'contains', 'propertyNames',
  'unevaluatedProperties', 'unevaluatedItems'];
const lists = ['allOf', 'anyOf', 'oneOf', 'prefixItems'];
function modernize(s) {
  if (typeof s !== 'object' || s === null || Array.isArray(s)) return s;
  const out = { ...s };
  delete out.$schema;
  if (typeof out.id === 'string') delete out.id;
  for (const [flag, bound] of [['exclusiveMinimum', 'minimum'], ['exclusiveMaximum', 'maximum']]) {
    if (typeof out[flag] !== 'boolean') continue;
    if (out[flag] && bound in out) { out[flag] = out[bound]; delete out[bound]; } else delete out[flag];
  }
  for (const k of maps) if (out[k] && typeof out[k] === 'object') out[k] = Object.fromEntries(Object.entries(out[k]).map(([n, v]) => [n, modernize(v)]));
  if (out.dependencies && typeof out.dependencies === 'object') {
    out.dependencies = Object.fromEntries(Object.entries(out.dependencies).map(([n, v]) => [n, Array.isArray(v) ? v : modernize(v)]));
  }
  for (const k of singles) if (k in out) out[k] = modernize(out[k]);
  for (const k of lists) if (Array.isArray(out[k])) out[k] = out[k].map(modernize);
  if (Array.isArray(out.items)) {
    out.prefixItems = out.items.map(modernize);
    if ('additionalItems' in out) out.items = out.additionalItems; else delete out.items;
    delete out.additionalItems;
  } else if ('items' in out) out.items = modernize(out.items);
  return out;
}
const strip = modernize;
const validators = new Map(corpus.accepted.map((e) => [e.name, ajv.compile(strip(e.schema))]));

const failures = [];
const perSchema = new Map();
for (const line of lines.filter((l) => l.kind === 'sample')) {
  const stats = perSchema.get(line.name) ?? { walks: 0, complete: 0 };
  perSchema.set(line.name, stats);
  stats.walks++;
  if (line.invalid_utf8) {
    failures.push(`${line.name}: output is not UTF-8`);
    continue;
  }
  if (!line.complete) continue;  // cut by the step limit: a prefix, not a whole value
  stats.complete++;
  let value;
  try {
    value = JSON.parse(line.text);
  } catch (e) {
    failures.push(`${line.name}: not JSON: ${JSON.stringify(line.text)}`);
    continue;
  }
  const validate = validators.get(line.name);
  if (!validate(value)) failures.push(`${line.name}: ${line.text}: ${ajv.errorsText(validate.errors)}`);
}
for (const e of corpus.accepted) {
  const stats = perSchema.get(e.name);
  assert.ok(stats && stats.walks > 0, `${e.name}: no samples`);
  if (stats.complete * 2 < stats.walks) failures.push(`${e.name}: only ${stats.complete} of ${stats.walks} walks completed`);
}
const refusals = new Map(lines.filter((l) => l.kind === 'refused').map((l) => [l.name, l]));
for (const e of corpus.refused) {
  const r = refusals.get(e.name);
  assert.ok(r, `${e.name}: not tried`);
  if (r.compiled) failures.push(`${e.name}: compiled, but '${e.keyword}' is not supported`);
  else if (!r.message.includes(e.keyword) || !r.message.includes(e.path)) {
    failures.push(`${e.name}: message does not name '${e.keyword}' at '${e.path}': ${r.message}`);
  }
}
const total = [...perSchema.values()].reduce((a, s) => ({ walks: a.walks + s.walks, complete: a.complete + s.complete }),
  { walks: 0, complete: 0 });
console.log(`schema samples: ${total.complete} of ${total.walks} walks complete over ${perSchema.size} schemas, ` +
  `${corpus.refused.length} refusals; ${failures.length} failures`);
for (const f of failures) console.log(`  ${f}`);
process.exit(failures.length === 0 ? 0 : 1);
