// Regenerates docs/error-codes.md from src/error-codes.ts (test/error-codes.test.ts compares).
import { writeFile } from 'node:fs/promises';
import { ERROR_CODES_DOC, errorCodesDocument } from './lib/error-codes-doc.js';

await writeFile(ERROR_CODES_DOC, errorCodesDocument());
console.log(`wrote ${ERROR_CODES_DOC}`);
