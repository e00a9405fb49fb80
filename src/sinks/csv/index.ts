/** The CSV sink's public surface. */
export { CsvSink } from './csv-sink.js';
