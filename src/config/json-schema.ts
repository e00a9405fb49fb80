import { z } from 'zod';
import { environmentSchema } from './environment-schema.js';
import { jobSchema } from './job-schema.js';

/**
 * JSON Schemas generated from the zod schemas, committed under `schema/` so editors can validate
 * YAML as it is typed (yaml-language-server). `io: 'input'` describes what a person writes:
 * fields with defaults are optional.
 */
export function jsonSchemas(): Record<'job' | 'environment', Record<string, unknown>> {
  const render = (schema: z.ZodType, title: string, id: string) => ({
    ...z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }),
    $id: id,
    title,
  });
  return {
    job: render(jobSchema, 'tilehouse job (one tile)', 'https://tilehouse.dev/schema/job.schema.json'),
    environment: render(environmentSchema, 'tilehouse environment config', 'https://tilehouse.dev/schema/environment.schema.json'),
  };
}

export function jsonSchemaFiles(): Array<{ file: string; text: string }> {
  const schemas = jsonSchemas();
  return [
    { file: 'schema/job.schema.json', text: `${JSON.stringify(schemas.job, null, 2)}\n` },
    { file: 'schema/environment.schema.json', text: `${JSON.stringify(schemas.environment, null, 2)}\n` },
  ];
}
