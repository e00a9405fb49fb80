import { csvSinkSchema, type CsvSinkConfig } from '../../config/csv-sink-schema.js';
import type { SinkKind } from '../sink-kind.js';
import { fileSinkKind } from '../files/descriptor.js';
import { csvFormat } from './csv-format.js';
import { CsvSink } from './csv-sink.js';

/** The CSV sink (local files or objects in a bucket: stores/), as the rest of tilehouse sees it: the file sink kind of the CSV format. */
export const csvSinkKind: SinkKind = fileSinkKind<CsvSinkConfig>({
  format: csvFormat,
  configSchema: csvSinkSchema,
  // Where the file lands and its bytes; the guard only decides whether a run may publish.
  definitionSettings: { decides: ['type', 'path', 'gzip', 'manifest', 'writeMode'], decidesNot: ['guard'] },
  directory: (environment) => environment.sinks.csv.directory,
  guardDefaults: (environment) => environment.sinks.csv.guard,
  createSink: (options) => new CsvSink(options),
});
