import { randomUUID } from 'node:crypto';
import type { TypedRow, TypedValue } from '../../transform/column.js';
import type { ColumnType } from '../../value-types/column-types.js';
import { readParquetRows } from '../parquet/encoder/parquet-decoder.js';
import { ParquetEncoder, type ParquetColumnSpec } from '../parquet/encoder/parquet-encoder.js';
import { IcebergDataFileUnreadableError, IcebergKeyError, IcebergSchemaMismatchError } from './iceberg-errors.js';
import { childLocation, readLocation, writeNewFile } from './local-files.js';
import type { LiveDataFile } from './manifest-reading.js';
import type { AddedDataFile } from './manifests.js';

/**
 * `writeMode: merge`, copy-on-write: the run's rows go to one new data file (their keys checked as
 * they stream by: a null in a key column or a key twice refuses the run, as the BigQuery and
 * PostgreSQL sinks refuse it), and each data file of the parent holding one of the run's keys is
 * rewritten without those rows. No delete files: every reader reads the result.
 * Every file of the parent is read (no column bounds are written yet to skip one).
 */
export interface MergeKeyColumns {
  names: readonly string[];
  indexes: readonly number[];
  types: readonly ColumnType[];
}

export function mergeKeyColumns(table: string, columns: readonly { name: string; type: ColumnType }[], names: readonly string[] | undefined): MergeKeyColumns {
  if (!names || names.length === 0) throw new IcebergSchemaMismatchError(table, 'writeMode merge needs a key: one column or more');
  const indexes = names.map((name) => {
    const index = columns.findIndex((column) => column.name === name);
    if (index < 0) throw new IcebergSchemaMismatchError(table, `key column ${JSON.stringify(name)} is not a column of the tile`);
    return index;
  });
  return { names, indexes, types: indexes.map((index) => columns[index]!.type) };
}

/**
 * A key's text, the same for a value of the run and the value read back from a file: a NUMERIC
 * without trailing zeros, a TIMESTAMP in microseconds, an INT64's digits.
 */
function keyText(values: readonly TypedValue[], types: readonly ColumnType[]): string {
  return JSON.stringify(
    values.map((value, index) => {
      switch (types[index]) {
        case 'INT64':
          return String(BigInt(value as bigint));
        case 'NUMERIC': {
          const text = String(value);
          return text.includes('.') ? text.replace(/0+$/, '').replace(/\.$/, '') : text;
        }
        case 'TIMESTAMP':
          return String(Math.round(Number(value) * 1000));
        case 'FLOAT64':
          return String(Number(value));
        default:
          return String(value);
      }
    }),
  );
}

/** A key as a message shows it: `(v1, v2)`. */
function shownKey(values: readonly TypedValue[]): string {
  return `(${values.map((value) => String(value)).join(', ')})`;
}

/** The run's rows as one data file, with the lineage values appended; its keys, each checked. */
export async function writeMergeFile(options: {
  table: string;
  tableLocation: string;
  runId: string;
  key: MergeKeyColumns;
  columns: readonly ParquetColumnSpec[];
  rows: AsyncIterable<readonly TypedRow[]> | Iterable<readonly TypedRow[]>;
  lineage: readonly TypedValue[];
  written: string[];
}): Promise<{ file: AddedDataFile; keys: Set<string> }> {
  const { key } = options;
  const keys = new Set<string>();
  const encoder = new ParquetEncoder(options.columns);
  async function* pieces(): AsyncGenerator<Uint8Array> {
    for await (const batch of options.rows) {
      for (const row of batch) {
        const values = key.indexes.map((index) => row[index] ?? null);
        const nullAt = values.indexOf(null);
        if (nullAt >= 0) throw new IcebergKeyError(options.table, 'null', key.names[nullAt]!, key.names);
        const text = keyText(values, key.types);
        if (keys.has(text)) throw new IcebergKeyError(options.table, 'duplicate', shownKey(values), key.names);
        keys.add(text);
      }
      yield* encoder.addRows(batch.map((row) => [...row, ...options.lineage]));
    }
    yield* encoder.finish();
  }
  const path = childLocation(options.tableLocation, `data/${options.runId.replaceAll(/[^\w.-]/g, '_')}-${randomUUID()}.parquet`);
  options.written.push(path);
  const size = await writeNewFile(path, pieces());
  return { file: { path, recordCount: BigInt(encoder.rowCount), sizeInBytes: BigInt(size) }, keys };
}

/**
 * `file` without the rows whose key the run holds: undefined when it holds none (kept as it is),
 * `removed` when every row goes (the file is deleted and nothing replaces it), else the new file.
 */
export async function rewriteWithoutKeys(options: {
  table: string;
  tableLocation: string;
  runId: string;
  file: LiveDataFile;
  key: MergeKeyColumns;
  keys: ReadonlySet<string>;
  columns: readonly (ParquetColumnSpec & { fieldId: number })[];
  written: string[];
}): Promise<AddedDataFile | 'removed' | undefined> {
  const { file, key } = options;
  let rows: TypedRow[];
  try {
    rows = readParquetRows(await readLocation(file.path), options.columns, file.path);
  } catch (error) {
    throw new IcebergDataFileUnreadableError(options.table, file.path, (error as Error).message, { cause: error });
  }
  const kept = rows.filter(
    (row) =>
      !options.keys.has(
        keyText(
          key.indexes.map((index) => row[index] ?? null),
          key.types,
        ),
      ),
  );
  if (kept.length === rows.length) return undefined;
  if (kept.length === 0) return 'removed';
  const encoder = new ParquetEncoder(options.columns);
  const path = childLocation(options.tableLocation, `data/${options.runId.replaceAll(/[^\w.-]/g, '_')}-rewrite-${randomUUID()}.parquet`);
  options.written.push(path);
  const size = await writeNewFile(path, [...encoder.addRows(kept), ...encoder.finish()]);
  return { path, recordCount: BigInt(encoder.rowCount), sizeInBytes: BigInt(size), partition: file.partition };
}
