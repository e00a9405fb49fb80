export { BigQuerySink, type BigQuerySinkOptions } from './bigquery-sink.js';
export {
  BigQueryColumnConflictError,
  BigQueryJobTimeoutError,
  BigQueryLoadError,
  BigQueryLoadFileError,
  BigQueryProjectUnknownError,
  BigQueryPublishError,
  BigQueryRequestError,
  BigQuerySchemaMismatchError,
  BigQuerySinkStateError,
  BigQueryValueError,
} from './bigquery-errors.js';
export type { SchemaDiff } from './schema-contract.js';
export type { RetryLimits } from '../../retry.js';
export type { JobPolling } from './run-job.js';
