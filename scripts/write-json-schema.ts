// Regenerates schema/*.json from the zod schemas. Tests fail when the committed files are stale
// (test/config/json-schema.test.ts, test/pipeline/summary-schema.test.ts).
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { jsonSchemaFiles } from '../src/config/json-schema.js';
import { summaryJsonSchemaFile } from '../src/pipeline/summary-schema.js';

for (const { file, text } of [...jsonSchemaFiles(), summaryJsonSchemaFile()]) {
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, text);
  console.log(`wrote ${file}`);
}
