import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { jsonSchemaFiles } from '../../src/config/json-schema.js';

describe('committed JSON Schemas', () => {
  it.each(jsonSchemaFiles())('$file matches the zod schema (run `npm run schema` after changing it)', async ({ file, text }) => {
    expect(await readFile(file, 'utf8')).toBe(text);
  });

  it('describe what a person writes: defaulted fields are optional', () => {
    const job = JSON.parse(jsonSchemaFiles()[0]!.text) as { required: string[] };
    expect(job.required).toEqual(expect.arrayContaining(['name', 'tile', 'query', 'sinks']));
    expect(job.required).not.toContain('onInvalidValue');
  });
});
