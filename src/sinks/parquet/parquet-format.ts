// src/sinks/parquet/, module by module (ARCHITECTURE.md gives the folder one paragraph):
// the Parquet sink, one folder plus one registry line: `parquet-format.ts` (the `FileFormat`: typed OPTIONAL
// columns named by `Column.name`, the headers in the footer's `tilehouse.headers`, pages compressed inside the
// file so no wrapper, row groups handed to the writer as they fill and the footer from `end`; `readColumns`
// reads the footer with two ranged reads of the tail); `descriptor.ts` (`fileSinkKind` of the Parquet format);
// the default path and incremental rule are in `src/config/parquet-sink-schema.ts`. `encoder/`, apart from the
// sink and importing nothing of it: `encoder/parquet-encoder.ts` (`ParquetEncoder`: typed rows → row groups →
// a file: `column-buffers.ts` per-column typed-array buffers, PLAIN values, RLE/bit-packed definition levels,
// `column-chunk.ts` data pages V1 of ~1 MiB compressed as they are cut by `page-codecs.ts` (`snappy.ts`, our
// own; gzip/zstd from `node:zlib`), `byte-sink.ts` one reused buffer, row groups flushed at 32 MiB buffered;
// `parquet-schema.ts` the physical and logical types; `thrift-compact.ts` + `parquet-footer.ts` the footer,
// written and read back for `plan` (`readParquetColumns`); `parquet-decoder.ts` a flat file's rows read back (this
// encoder's and pyarrow's: dictionary pages, data pages V2; `snappy.ts` has the uncompressor) for an Iceberg merge;
// `parquet-errors.ts`, the `parquet_*` errors);
// tested against DuckDB, never against its own reader alone

import { buffer } from 'node:stream/consumers';
import { defaultParquetPathTemplate, type ParquetSinkConfig } from '../../config/parquet-sink-schema.js';
import type { Column } from '../../transform/column.js';
import { FileTargetUnreadableError } from '../files/file-errors.js';
import type { FileFormat, StoredFile } from '../files/file-format.js';
import { ParquetEncoder, parquetFooterLength, readParquetColumns, type ParquetCompression } from './encoder/parquet-encoder.js';
import { ParquetFileInvalidError, ParquetSchemaError } from './encoder/parquet-errors.js';
import { readParquetRowCount } from './encoder/parquet-footer.js';
import { parquetTypeName } from './encoder/parquet-schema.js';

/**
 * Parquet as a file format: one typed, OPTIONAL column per tile column (encoder/: types as
 * BigQuery reads them), pages compressed inside the file (so no wrapper), row groups handed to the
 * destination as they fill, the footer at the end. Everything else a Parquet sink does (paths,
 * two-phase publish, temp files, manifests, gs://) is the file machinery's (files/).
 *
 * Column names are the warehouse-safe `Column.name`s, not the headers: the files are for the lake,
 * and its readers want plain names. Spark refuses Parquet columns whose names hold ` ,;{}()\n\t=`,
 * BigQuery loads and external tables refuse or rename many characters a header may hold, and the
 * names are then the columns the BigQuery sink gives the same tile, so an external table over
 * these files and a loaded table agree. The headers stay in the footer's key-value metadata
 * (HEADERS_KEY, a JSON array in column order) for a reader that wants them back.
 *
 * No lineage columns, as in the CSV sink: a file is one whole run (replaced, never appended to),
 * so a per-row `_run_id` would repeat one value; the manifest names the run. (The BigQuery sink
 * adds `_run_id`/`_extracted_at` only in append and merge modes, where runs share a table.)
 */
export const parquetFormat: FileFormat<ParquetSinkConfig> = {
  name: 'parquet',
  label: 'Parquet',
  contentType: () => 'application/vnd.apache.parquet',
  defaultPathTemplate: (_config, windowed) => defaultParquetPathTemplate(windowed),
  wrapper: () => undefined,
  gzipped: () => false,
  createEncoder(columns, config) {
    // Parquet has no file without columns (CSV writes an empty header record): say why, before any byte.
    if (columns.length === 0)
      throw new ParquetSchemaError('the tile has no visible columns, and a Parquet file needs at least one: make an item visible or use a CSV sink');
    const encoder = new ParquetEncoder(
      columns.map((column) => ({ name: column.name, type: column.type })),
      { compression: encoderCompression(config.compression), keyValueMetadata: { [HEADERS_KEY]: JSON.stringify(columns.map((column) => column.header)) } },
    );
    return {
      start: () => [],
      encode: (rows) => encoder.addRows(rows),
      end: () => encoder.finish(),
    };
  },
  columnNames: (columns: readonly Column[]) => columns.map((column) => column.name),
  storedType: (column: Column) => parquetTypeName(column.type),
  readColumns: (file) => readingFooter(file, async () => (await readFooterColumns(file)).map((column) => column.name)),
  // The footer's num_rows: two ranged reads, however large the file.
  countRows: (file) => readingFooter(file, async () => readParquetRowCount(...(await footerTail(file)))),
};

/** The footer's key holding the tile's headers, in column order (a JSON array of strings). */
const HEADERS_KEY = 'tilehouse.headers';

/**
 * Reads a stored file's footer; bytes that are not a Parquet file tilehouse reads are a target
 * that cannot be read (`target_unreadable`, as a CSV target's), which the sink names the job in. A
 * failed read (a download cut off) stays what it was.
 */
async function readingFooter<T>(file: StoredFile, read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (error) {
    if (error instanceof ParquetFileInvalidError) throw new FileTargetUnreadableError(parquetFormat, file.location, error.reason, error);
    throw error;
  }
}

/** Parquet's smallest file: "PAR1", a footer length and "PAR1". */
const MIN_FILE_BYTES = 12;

function encoderCompression(compression: ParquetSinkConfig['compression']): ParquetCompression {
  return compression === 'none' ? 'uncompressed' : compression;
}

/** The columns a stored Parquet file declares: its last 8 bytes, then its footer, two ranged reads (no more of it is read). */
export async function readFooterColumns(file: StoredFile): Promise<ReturnType<typeof readParquetColumns>> {
  return readParquetColumns(...(await footerTail(file)));
}

/** A stored file's footer and trailer, and its location for messages. */
async function footerTail(file: StoredFile): Promise<[Uint8Array, string]> {
  const size = await file.size();
  if (size < MIN_FILE_BYTES) throw new ParquetFileInvalidError(file.location, `${size} bytes, a Parquet file has at least ${MIN_FILE_BYTES}`);
  const footerLength = parquetFooterLength(await buffer(file.read({ start: size - 8, end: size - 1 })), file.location);
  if (footerLength + MIN_FILE_BYTES > size) {
    throw new ParquetFileInvalidError(file.location, `its footer is ${footerLength} bytes but the file is ${size}`);
  }
  return [await buffer(file.read({ start: size - 8 - footerLength, end: size - 1 })), file.location];
}
