import { parquetSinkSchema, type ParquetSinkConfig } from '../../config/parquet-sink-schema.js';
import type { SinkKind } from '../sink-kind.js';
import { fileSinkKind } from '../files/descriptor.js';
import { FileSink } from '../files/file-sink.js';
import { parquetFormat } from './parquet-format.js';

/** The Parquet sink (local files or objects in a bucket: stores/), as the rest of tilehouse sees it: the file sink kind of the Parquet format. */
export const parquetSinkKind: SinkKind = fileSinkKind<ParquetSinkConfig>({
  format: parquetFormat,
  configSchema: parquetSinkSchema,
  // Where the file lands and its bytes (the codec); the guard only decides whether a run may publish.
  definitionSettings: { decides: ['type', 'path', 'compression', 'gzip', 'manifest', 'writeMode'], decidesNot: ['guard'] },
  directory: (environment) => environment.sinks.parquet.directory,
  guardDefaults: (environment) => environment.sinks.parquet.guard,
  createSink: (options) => new FileSink(parquetFormat, options),
});
