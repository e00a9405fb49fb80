import type { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';

const QUOTE = 0x22;
const LF = 0x0a;

/**
 * The data records of a CSV byte stream (the header record not counted), for the publish guard
 * when a file has no manifest: line feeds outside quoted fields, scanned byte by byte without
 * parsing a field (a doubled quote inside a field toggles twice, so the state stays right), plus a
 * last record without its line break. Exact for RFC 4180 as CSV_DIALECT writes it.
 */
export async function countCsvRecords(input: Readable, gzip: boolean): Promise<number> {
  const source = gzip ? input.pipe(createGunzip()) : input;
  input.on('error', (error: Error) => source.destroy(error));
  let records = 0;
  let quoted = false;
  let pending = false;
  try {
    for await (const chunk of source as AsyncIterable<Buffer>) {
      for (let index = 0; index < chunk.length; index++) {
        const byte = chunk[index]!;
        if (byte === QUOTE) quoted = !quoted;
        else if (byte === LF && !quoted) {
          records += 1;
          pending = false;
          continue;
        }
        pending = true;
      }
    }
  } finally {
    input.destroy();
  }
  if (pending) records += 1;
  return Math.max(0, records - 1);
}
