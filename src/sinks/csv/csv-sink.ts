import type { CsvSinkConfig } from '../../config/job-schema.js';
import { FileSink, type FileSinkOptions } from '../files/file-sink.js';
import { csvFormat } from './csv-format.js';

export type CsvSinkOptions = FileSinkOptions<CsvSinkConfig>;

/**
 * Writes each run of a tile to one CSV file (optionally gzip-compressed), replacing the previous
 * file atomically on commit: a FileSink (files/file-sink.ts: local file or gs:// object, two
 * phases, manifest) of the CSV format (csv-format.ts; see CSV_DIALECT for the exact bytes).
 */
export class CsvSink extends FileSink<CsvSinkConfig> {
  declare readonly kind: 'csv';

  /** Throws FilePathInvalidError (code path_invalid) for a bad path template, so configuration checks catch it. */
  constructor(options: CsvSinkOptions) {
    super(csvFormat, options);
  }
}
