/** The CSV sink's public surface. */
export { CSV_DIALECT } from './csv-dialect.js';
export { csvFormat } from './csv-format.js';
export { CsvSink, type CsvSinkOptions } from './csv-sink.js';
