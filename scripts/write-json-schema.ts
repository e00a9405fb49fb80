// Regenerates schema/*.json from the zod schemas. A test fails when the committed files are stale.
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { jsonSchemaFiles } from '../src/config/json-schema.js';

for (const { file, text } of jsonSchemaFiles()) {
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, text);
  console.log(`wrote ${file}`);
}
