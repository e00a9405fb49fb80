import { createGzip } from 'node:zlib';
import { defaultCsvPathTemplate, type CsvSinkConfig } from '../../config/csv-sink-schema.js';
import { FileTargetUnreadableError } from '../files/file-errors.js';
import type { FileFormat, StoredFile } from '../files/file-format.js';
import { encodedChunks, headerRecord } from './csv-chunks.js';
import { CsvRecordEncoder } from './csv-record-encoder.js';
import { countStoredCsvRecords } from './count-records.js';
import { readCsvHeaderFrom } from './read-header.js';

/**
 * CSV as a file format (CSV_DIALECT): a header record, then the rows through csv-stringify in
 * chunks of ROWS_PER_CHUNK; gzip, when asked, wraps the whole file. Everything else a CSV sink
 * does (paths, two-phase publish, temp files, manifests, gs://) is the file machinery's (files/).
 */
export const csvFormat: FileFormat<CsvSinkConfig> = {
  name: 'csv',
  label: 'CSV',
  contentType: (config) => (config.gzip ? 'application/gzip' : 'text/csv; charset=utf-8'),
  defaultPathTemplate: (config, windowed) => defaultCsvPathTemplate(config, windowed),
  wrapper: (config) => (config.gzip ? createGzip() : undefined),
  gzipped: (config) => config.gzip,
  createEncoder(columns) {
    const encoder = new CsvRecordEncoder(columns);
    return {
      start: () => [headerRecord(columns)],
      encode: (rows) => encodedChunks(encoder, rows),
      end: () => [],
    };
  },
  columnNames: (columns) => columns.map((column) => column.header),
  // CSV declares no types: every value is text, written as its column's type prints it (csv-chunks.ts).
  storedType: (column) => column.type,
  // A line-oriented format: the header is the first record, read from the start (gunzipped when the file is gzip).
  readColumns: (file, config) => readingGzip(file, config.gzip, () => readCsvHeaderFrom(file.read(), config.gzip)),
  // No row count in a CSV file: its records are counted, the whole file read once.
  countRows: (file, config) => readingGzip(file, config.gzip, () => countStoredCsvRecords(file, config.gzip)),
};

/**
 * Reads a stored file; one that claims gzip and is not (zlib's `Z_*` errors) is a target that
 * cannot be read, named, not zlib's bare "incorrect header check". A failed read (a download cut
 * off) stays what it was.
 */
async function readingGzip<T>(file: StoredFile, gzip: boolean, read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException | null)?.code;
    if (gzip && typeof code === 'string' && code.startsWith('Z_'))
      throw new FileTargetUnreadableError(csvFormat, file.location, `it is not gzip (${(error as Error).message})`, error);
    throw error;
  }
}
