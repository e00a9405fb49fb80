import { randomUUID } from 'node:crypto';
import type { TypedRow, TypedValue } from '../../transform/column.js';
import type { ColumnType } from '../../value-types/column-types.js';
import { readParquetRows } from '../parquet/encoder/parquet-decoder.js';
import type { ParquetColumnSpec } from '../parquet/encoder/parquet-encoder.js';
import { COMPARES } from './column-metrics.js';
import { DataFileEncoder } from './data-file-encoder.js';
import { IcebergDataFileUnreadableError, IcebergKeyError, IcebergSchemaMismatchError } from './iceberg-errors.js';
import { childLocation, readLocation, removeLocation, writeNewFile } from './local-files.js';
import type { LiveDataFile } from './manifest-reading.js';
import type { AddedDataFile } from './manifests.js';
import { RunKeyValues } from './merge-key-bounds.js';

/**
 * `writeMode: merge`, copy-on-write: the run's rows go to one new data file (their keys checked as
 * they stream by: a null in a key column or a key twice refuses the run, as the BigQuery and
 * PostgreSQL sinks refuse it; with `latestBy`, of rows sharing a key the one with the highest
 * `latestBy` stays, as there), and each data file of the parent holding one of the run's keys is
 * rewritten without those rows. No delete files: every reader reads the result. A file whose
 * column bounds exclude the run's keys is not opened (merge-key-bounds.ts).
 */
export interface MergeKeyColumns {
  names: readonly string[];
  indexes: readonly number[];
  types: readonly ColumnType[];
  /** `latestBy`: the column whose highest value wins among a run's rows sharing a key. */
  latestBy?: { name: string; index: number; type: ColumnType };
}

export function mergeKeyColumns(
  table: string,
  columns: readonly { name: string; type: ColumnType }[],
  names: readonly string[] | undefined,
  latestBy?: string,
): MergeKeyColumns {
  if (!names || names.length === 0) throw new IcebergSchemaMismatchError(table, 'writeMode merge needs a key: one column or more');
  const indexOf = (name: string, what: string) => {
    const index = columns.findIndex((column) => column.name === name);
    if (index < 0) throw new IcebergSchemaMismatchError(table, `${what} ${JSON.stringify(name)} is not a column of the tile`);
    return index;
  };
  const indexes = names.map((name) => indexOf(name, 'key column'));
  const key: MergeKeyColumns = { names, indexes, types: indexes.map((index) => columns[index]!.type) };
  if (latestBy !== undefined) {
    const index = indexOf(latestBy, 'latestBy column');
    key.latestBy = { name: latestBy, index, type: columns[index]!.type };
  }
  return key;
}

/**
 * A key's text, the same for a value of the run and the value read back from a file: a NUMERIC
 * without trailing zeros, a TIMESTAMP in microseconds, an INT64's digits; a null as JSON's null
 * (a latestBy value may be null, and is then apart from the text "null").
 */
function keyText(values: readonly TypedValue[], types: readonly ColumnType[]): string {
  return JSON.stringify(
    values.map((value, index) => {
      if (value === null) return null;
      switch (types[index]) {
        case 'INT64':
          return String(BigInt(value as bigint));
        case 'NUMERIC': {
          const text = String(value);
          const trimmed = text.includes('.') ? text.replace(/0+$/, '').replace(/\.$/, '') : text;
          return trimmed === '-0' ? '0' : trimmed;
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

/**
 * Whether `candidate` beats `holder` as a key's row by latestBy: the higher value wins, any value
 * beats null (PostgreSQL's DESC NULLS LAST, BigQuery's MAX ignoring NULL).
 */
function beats(type: ColumnType, candidate: TypedValue, holder: TypedValue): boolean {
  if (candidate === null) return false;
  if (holder === null) return true;
  return COMPARES[type](candidate, holder) > 0;
}

/** The run's rows as one data file, with the lineage values appended; its keys, each checked. */
export async function writeMergeFile(options: {
  table: string;
  tableLocation: string;
  runId: string;
  key: MergeKeyColumns;
  columns: readonly (ParquetColumnSpec & { fieldId: number })[];
  rows: AsyncIterable<readonly TypedRow[]> | Iterable<readonly TypedRow[]>;
  lineage: readonly TypedValue[];
  written: string[];
}): Promise<{ file: AddedDataFile; keys: Set<string>; values: RunKeyValues }> {
  const { key } = options;
  const keys = new Set<string>();
  const values = new RunKeyValues(key.types);
  const latestBy = key.latestBy;
  // With latestBy: each key's winning row (its value and its place in the file), the pairs (key, latestBy) seen, the rows beaten.
  const winners = new Map<string, { value: TypedValue; ordinal: number }>();
  const pairs = new Set<string>();
  const beaten = new Set<number>();
  const pairTypes = latestBy ? [...key.types, latestBy.type] : key.types;
  let ordinal = 0;
  const encoder = new DataFileEncoder(options.columns);
  async function* pieces(): AsyncGenerator<Uint8Array> {
    for await (const batch of options.rows) {
      for (const row of batch) {
        const keyValues = key.indexes.map((index) => row[index] ?? null);
        const nullAt = keyValues.indexOf(null);
        if (nullAt >= 0) throw new IcebergKeyError(options.table, 'null', key.names[nullAt]!, key.names);
        const text = keyText(keyValues, key.types);
        if (!latestBy) {
          if (keys.has(text)) throw new IcebergKeyError(options.table, 'duplicate', shownKey(keyValues), key.names);
        } else {
          // Rows that share the key and the latestBy value (nulls alike) are a tie latestBy cannot break, whichever row wins.
          const latest = row[latestBy.index] ?? null;
          const pair = keyText([...keyValues, latest], pairTypes);
          if (pairs.has(pair)) throw new IcebergKeyError(options.table, 'duplicate', shownKey(keyValues), key.names, latestBy.name);
          pairs.add(pair);
          const holder = winners.get(text);
          if (holder === undefined) winners.set(text, { value: latest, ordinal });
          else if (beats(latestBy.type, latest, holder.value)) {
            beaten.add(holder.ordinal);
            winners.set(text, { value: latest, ordinal });
          } else beaten.add(ordinal);
        }
        ordinal++;
        if (!keys.has(text)) values.add(keyValues);
        keys.add(text);
      }
      yield* encoder.addRows(batch.map((row) => [...row, ...options.lineage]));
    }
    yield* encoder.finish();
  }
  const path = newDataPath(options.tableLocation, options.runId, '');
  options.written.push(path);
  const size = await writeNewFile(path, pieces());
  const file: AddedDataFile = { path, recordCount: BigInt(encoder.rowCount), sizeInBytes: BigInt(size), metrics: encoder.metrics() };
  if (beaten.size === 0) return { file, keys, values };
  // Rows latestBy beat were written as they streamed by: the file is written again with the winners alone.
  const kept = (await readDataFile(options.table, file.path, options.columns)).filter((_, index) => !beaten.has(index));
  const latest = await writeDataFile(options.tableLocation, options.runId, '', kept, options.columns, options.written, {});
  options.written.splice(options.written.indexOf(path), 1);
  await removeLocation(path);
  return { file: latest, keys, values };
}

function newDataPath(tableLocation: string, runId: string, label: string): string {
  return childLocation(tableLocation, `data/${runId.replaceAll(/[^\w.-]/g, '_')}-${label}${randomUUID()}.parquet`);
}

async function readDataFile(table: string, path: string, columns: readonly (ParquetColumnSpec & { fieldId: number })[]): Promise<TypedRow[]> {
  try {
    return readParquetRows(await readLocation(path), columns, path);
  } catch (error) {
    throw new IcebergDataFileUnreadableError(table, path, (error as Error).message, { cause: error });
  }
}

/** `rows` as a new data file of the table (its path in `written` before its first byte), with its metrics. */
async function writeDataFile(
  tableLocation: string,
  runId: string,
  label: string,
  rows: readonly TypedRow[],
  columns: readonly (ParquetColumnSpec & { fieldId: number })[],
  written: string[],
  extra: Pick<AddedDataFile, 'partition'>,
): Promise<AddedDataFile> {
  const encoder = new DataFileEncoder(columns);
  const path = newDataPath(tableLocation, runId, label);
  written.push(path);
  const size = await writeNewFile(path, [...encoder.addRows(rows), ...encoder.finish()]);
  return { path, recordCount: BigInt(encoder.rowCount), sizeInBytes: BigInt(size), metrics: encoder.metrics(), ...extra };
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
  const rows = await readDataFile(options.table, file.path, options.columns);
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
  return writeDataFile(options.tableLocation, options.runId, 'rewrite-', kept, options.columns, options.written, { partition: file.partition });
}
