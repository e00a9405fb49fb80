import type { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { parse } from 'csv-parse';

/** The header record of a CSV byte stream (a file, a Cloud Storage object); destroys the stream after it. */
export async function readCsvHeaderFrom(input: Readable, gzip: boolean): Promise<string[]> {
  const parser = parse({ to: 1, bom: true });
  const source = gzip ? input.pipe(createGunzip()) : input;
  // pipe() does not forward errors: a corrupt gzip (or a failed download) must end the parse, not hang it.
  input.on('error', (error: Error) => parser.destroy(error));
  source.on('error', (error: Error) => parser.destroy(error));
  source.pipe(parser);
  try {
    for await (const record of parser) return record as string[];
    return [];
  } finally {
    input.destroy();
  }
}
