import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import type { TypedRow, TypedValue } from '../../../../src/transform/column.js';
import { ParquetEncoder, type ParquetColumnSpec, type ParquetEncoderOptions } from '../../../../src/sinks/parquet/encoder/parquet-encoder.js';

/**
 * Test support: files written by ParquetEncoder, read back by DuckDB (an independent reader),
 * values normalised to the encoder's TypedValue shapes so a test compares like with like.
 */

let connection: DuckDBConnection | undefined;
const directories: string[] = [];

export async function duckdb(): Promise<DuckDBConnection> {
  connection ??= await (await DuckDBInstance.create(':memory:')).connect();
  return connection;
}

export function cleanUpFiles(): void {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
}

/** Encodes `batches` of rows (each batch one addRows call) into a temporary .parquet file. */
export function writeParquet(
  columns: readonly ParquetColumnSpec[],
  batches: readonly TypedRow[][],
  options?: ParquetEncoderOptions,
): { path: string; pieces: Uint8Array[] } {
  const encoder = new ParquetEncoder(columns, options);
  const pieces: Uint8Array[] = [];
  for (const batch of batches) pieces.push(...encoder.addRows(batch));
  pieces.push(...encoder.finish());
  const directory = mkdtempSync(join(tmpdir(), 'tilehouse-parquet-'));
  directories.push(directory);
  const path = join(directory, 'file.parquet');
  writeFileSync(path, Buffer.concat(pieces));
  return { path, pieces };
}

export function sqlString(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

/** A column name as a DuckDB identifier. */
export function quoted(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** DuckDB's reading of each column, as the expression that gives the encoder's value back. */
function readExpression(column: ParquetColumnSpec): string {
  const name = quoted(column.name);
  switch (column.type) {
    case 'NUMERIC':
    case 'DATE':
      return `CAST(${name} AS VARCHAR)`;
    case 'TIMESTAMP':
      return `epoch_us(${name})`;
    default:
      return name;
  }
}

/** Every row of the file as DuckDB reads it, in file order, in the encoder's value shapes. */
export async function readBack(path: string, columns: readonly ParquetColumnSpec[]): Promise<TypedRow[]> {
  const db = await duckdb();
  const select = columns.map(readExpression).join(', ');
  const reader = await db.runAndReadAll(`SELECT ${select} FROM read_parquet(${sqlString(path)}, file_row_number = true) ORDER BY file_row_number`);
  return reader.getRows().map((row) => columns.map((column, index) => fromDuckDb(column, row[index] as unknown)));
}

function fromDuckDb(column: ParquetColumnSpec, value: unknown): TypedValue {
  if (value === null) return null;
  switch (column.type) {
    case 'NUMERIC':
      return canonicalDecimal(value as string);
    case 'TIMESTAMP':
      return wholeMillis(value as bigint);
    default:
      return value as TypedValue;
  }
}

/** DuckDB's epoch_us of a TIMESTAMP as epoch milliseconds: every timestamp the tests write is whole milliseconds. */
export function wholeMillis(micros: bigint): number {
  if (micros % 1000n !== 0n) throw new Error(`timestamp ${micros} µs is not whole milliseconds`);
  return Number(micros / 1000n);
}

/** "-12.500000000" → "-12.5"; "0.000000000" → "0": the canonical form transform produces. */
export function canonicalDecimal(text: string): string {
  let [integer = '', fraction = ''] = text.split('.');
  fraction = fraction.replace(/0+$/, '');
  const negative = integer.startsWith('-');
  integer = integer.replace('-', '').replace(/^0+(?=\d)/, '');
  const body = fraction ? `${integer}.${fraction}` : integer;
  return negative && body !== '0' ? `-${body}` : body;
}

/** parquet_schema() rows for the file's leaves, by column name. */
export async function parquetSchema(path: string): Promise<Map<string, Record<string, unknown>>> {
  const db = await duckdb();
  const reader = await db.runAndReadAll(`SELECT * FROM parquet_schema(${sqlString(path)})`);
  const rows = reader.getRowObjectsJS() as Record<string, unknown>[];
  return new Map(rows.slice(1).map((row) => [String(row['name']), row]));
}

/** The DuckDB column types of the file, by name. */
export async function duckTypes(path: string): Promise<Map<string, string>> {
  const db = await duckdb();
  const reader = await db.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet(${sqlString(path)})`);
  return new Map(reader.getRowObjectsJS().map((row) => [String(row['column_name']), String(row['column_type'])]));
}
