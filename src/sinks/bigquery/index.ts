/** The BigQuery sink's public surface. */
export { BigQuerySink } from './bigquery-sink.js';
