import { stringify } from 'csv-stringify/sync';
import type { Column, TypedRow } from '../../transform/column.js';
import { CSV_DIALECT } from './csv-dialect.js';
import type { CsvRecordEncoder } from './csv-record-encoder.js';

/**
 * The CSV text of a run, the same wherever its bytes go (a local temp file, a Cloud Storage
 * upload): one header record, then the rows in chunks through the one CsvRecordEncoder.
 */

// Rows are encoded in slices of this many and handed to the stream as one chunk: one write
// per row would cost a stream round trip (and a gzip call) per row, while a whole page at once
// would make the chunk size depend on itemsPerPage. 250 rows of a typical tile stay below V8's
// large-object size (~128 KiB, or half as many characters once one is outside Latin-1), so the
// chunk's text dies young instead of being allocated straight into the old generation.
export const ROWS_PER_CHUNK = 250;

/** The header record of a run's CSV. */
export function headerRecord(columns: readonly Column[]): string {
  return stringify([columns.map((column) => column.header)], CSV_DIALECT);
}

/** The records of `rows` as chunks of up to ROWS_PER_CHUNK rows each. */
export function* encodedChunks(encoder: CsvRecordEncoder, rows: readonly TypedRow[]): Generator<string> {
  for (let start = 0; start < rows.length; start += ROWS_PER_CHUNK) {
    yield encoder.encode(start === 0 && rows.length <= ROWS_PER_CHUNK ? rows : rows.slice(start, start + ROWS_PER_CHUNK));
  }
}
