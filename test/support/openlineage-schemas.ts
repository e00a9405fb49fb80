import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

/**
 * The OpenLineage spec's own JSON Schemas (schema/openlineage/: the core RunEvent and every facet
 * tilehouse sends, draft 2020-12) and tilehouse's facet, loaded by their `$id`s so each facet's
 * `$ref` to the core schema resolves here, never over the network. `openLineageProblems` checks an
 * event against the RunEvent and each facet it carries against that facet's schema, found by the
 * facet's key; a facet key no schema here declares is a problem too.
 */

const ROOT = path.resolve(import.meta.dirname, '../../schema/openlineage');
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

interface SchemaFile {
  $id: string;
  properties?: Record<string, { $ref?: string }>;
}

const files = [
  path.join(ROOT, 'OpenLineage.json'),
  path.join(ROOT, 'TilehouseRunFacet.json'),
  ...readdirSync(path.join(ROOT, 'facets')).map((name) => path.join(ROOT, 'facets', name)),
];
const schemas = files.map((file) => JSON.parse(readFileSync(file, 'utf8')) as SchemaFile);
const ajv = addFormats(new Ajv2020({ strict: false, allErrors: true }));
for (const schema of schemas) ajv.addSchema(schema as object);

const CORE = schemas.find((schema) => schema.$id.endsWith('/OpenLineage.json'))!.$id;
const runEvent = ajv.getSchema(`${CORE}#/$defs/RunEvent`)!;

/** Facet key → its validator (`schema` → SchemaDatasetFacet...), from each facet file's `properties`. */
const facetValidators = new Map<string, ValidateFunction>();
for (const schema of schemas) {
  for (const [key, property] of Object.entries(schema.properties ?? {})) {
    if (property.$ref?.startsWith('#/$defs/')) facetValidators.set(key, ajv.getSchema(`${schema.$id}${property.$ref}`)!);
  }
}

function problemsOf(validate: ValidateFunction, value: unknown, where: string): string[] {
  if (validate(value)) return [];
  return (validate.errors ?? []).map((error) => `${where}${error.instancePath}: ${error.message}`);
}

type Facets = Record<string, unknown> | undefined;

/** Every way `event` breaks the spec's schemas, as `where: message` lines; empty when it is valid. */
export function openLineageProblems(event: unknown): string[] {
  const problems = problemsOf(runEvent, event, 'RunEvent');
  const typed = event as {
    run?: { facets?: Facets };
    job?: { facets?: Facets };
    inputs?: Array<{ facets?: Facets; inputFacets?: Facets }>;
    outputs?: Array<{ facets?: Facets; outputFacets?: Facets }>;
  };
  const groups: Array<[string, Facets]> = [
    ['run.facets', typed.run?.facets],
    ['job.facets', typed.job?.facets],
    ...(typed.inputs ?? []).flatMap(
      (input, index): Array<[string, Facets]> => [
        [`inputs[${index}].facets`, input.facets],
        [`inputs[${index}].inputFacets`, input.inputFacets],
      ],
    ),
    ...(typed.outputs ?? []).flatMap(
      (output, index): Array<[string, Facets]> => [
        [`outputs[${index}].facets`, output.facets],
        [`outputs[${index}].outputFacets`, output.outputFacets],
      ],
    ),
  ];
  for (const [where, facets] of groups) {
    for (const [key, value] of Object.entries(facets ?? {})) {
      const validate = facetValidators.get(key);
      if (validate === undefined) problems.push(`${where}.${key}: no schema in schema/openlineage declares this facet`);
      else problems.push(...problemsOf(validate, value, `${where}.${key}`));
    }
  }
  return problems;
}
