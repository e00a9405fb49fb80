export { BigQuerySink, type BigQuerySinkOptions } from './bigquery-sink.js';
export { createBigQuerySink } from './create-bigquery-sink.js';
export {
  BigQueryColumnConflictError,
  BigQueryConfigError,
  BigQueryLoadError,
  BigQueryRequestError,
  BigQuerySchemaMismatchError,
  BigQuerySinkStateError,
  BigQueryValueError,
} from './bigquery-errors.js';
export type { SchemaDiff } from './schema-contract.js';
export type { RetryPolicy } from './retry.js';
export type { JobPolling } from './load-job.js';
