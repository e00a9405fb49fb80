/** The CSV sink's public surface. */
export { CSV_DIALECT } from './csv-dialect.js';
export { CsvPathInvalidError, CsvWriteError, CsvWriterClosedError } from './csv-errors.js';
export { CsvPathTemplate, type CsvPathValues } from './csv-path.js';
export { CsvSink, type CsvSinkOptions } from './csv-sink.js';
export { removeStaleTempFiles } from './temp-files.js';
