import { createGzip } from 'node:zlib';
import { defaultCsvPathTemplate, type CsvSinkConfig } from '../../config/csv-sink-schema.js';
import type { FileFormat } from '../files/file-format.js';
import { encodedChunks, headerRecord } from './csv-chunks.js';
import { CsvRecordEncoder } from './csv-record-encoder.js';
import { countCsvRecords } from './count-records.js';
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
  // A line-oriented format: the header is the first record, read from the start (gunzipped when the file is gzip).
  readColumns: (file, config) => readCsvHeaderFrom(file.read(), config.gzip),
  // No row count in a CSV file: its records are counted, the whole file read once.
  countRows: (file, config) => countCsvRecords(file.read(), config.gzip),
};
