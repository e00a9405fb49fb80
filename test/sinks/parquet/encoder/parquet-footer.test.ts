import { afterAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ParquetEncoder, parquetFooterLength, readParquetColumns, type ParquetColumnSpec } from '../../../../src/sinks/parquet/encoder/parquet-encoder.js';
import { cleanUpFiles, duckdb, sqlString, writeParquet } from './duckdb-read-back.js';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { codeOf } from '../../../support/thrown-code.js';

afterAll(cleanUpFiles);

const COLUMNS: ParquetColumnSpec[] = [
  { name: 'id', type: 'INT64' },
  { name: 'score', type: 'FLOAT64' },
  { name: 'amount', type: 'NUMERIC' },
  { name: 'Title with spaces – ü', type: 'STRING' },
  { name: 'created', type: 'TIMESTAMP' },
  { name: 'day', type: 'DATE' },
];

function fileBytes(columns: readonly ParquetColumnSpec[], rows: (bigint | number | string | null)[][] = []): Buffer {
  return readFileSync(writeParquet(columns, [rows], { rowGroupBytes: 100 }).path);
}

describe('readParquetColumns', () => {
  it('reads the columns of a file the encoder wrote, from the whole file or just its tail', () => {
    const bytes = fileBytes(COLUMNS, [
      [1n, 1, '1', 'a', 1, '2020-01-01'],
      [2n, 2, '2', 'b', 2, '2020-01-02'],
    ]);
    expect(readParquetColumns(bytes)).toEqual(COLUMNS);
    const footerLength = parquetFooterLength(bytes.subarray(bytes.length - 8));
    expect(readParquetColumns(bytes.subarray(bytes.length - footerLength - 8))).toEqual(COLUMNS);
  });

  it('reads the columns of a zero-row file and of 5,000 columns', () => {
    expect(readParquetColumns(fileBytes(COLUMNS))).toEqual(COLUMNS);
    const wide = Array.from({ length: 5000 }, (_, index): ParquetColumnSpec => ({ name: `c${index}`, type: COLUMNS[index % COLUMNS.length]!.type }));
    expect(readParquetColumns(fileBytes(wide))).toEqual(wide);
  });

  it("reads another writer's file of the same types (DuckDB's COPY TO)", async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'tilehouse-parquet-duck-')), 'duck.parquet');
    const db = await duckdb();
    await db.run(
      `COPY (SELECT 1::BIGINT AS id, 1.5::DOUBLE AS score, 1.5::DECIMAL(38,9) AS amount, 'x' AS name, TIMESTAMPTZ '2020-01-01 00:00:00+00' AS created, DATE '2020-01-01' AS day) TO ${sqlString(path)} (FORMAT parquet)`,
    );
    expect(readParquetColumns(readFileSync(path))).toEqual([
      { name: 'id', type: 'INT64' },
      { name: 'score', type: 'FLOAT64' },
      { name: 'amount', type: 'NUMERIC' },
      { name: 'name', type: 'STRING' },
      { name: 'created', type: 'TIMESTAMP' },
      { name: 'day', type: 'DATE' },
    ]);
    await db.run(`COPY (SELECT true AS flag) TO ${sqlString(path)} (FORMAT parquet)`);
    expect(codeOf(() => readParquetColumns(readFileSync(path), path))).toBe('target_unreadable');
    expect(() => readParquetColumns(readFileSync(path), path)).toThrow(/duck\.parquet.*column "flag"/);
  });

  it('refuses bytes that are not Parquet, naming the source', () => {
    const csv = Buffer.from('id,name\n1,a\n2,b\n');
    expect(codeOf(() => readParquetColumns(csv))).toBe('target_unreadable');
    expect(() => readParquetColumns(csv, 'gs://bucket/t.parquet')).toThrow(/gs:\/\/bucket\/t\.parquet.*"2,b\\n"/);
    expect(() => parquetFooterLength(Buffer.from('PAR1'))).toThrow(/4 bytes, a Parquet file ends with 8/);
  });

  it('refuses a file cut short: at its end (no trailer) or before its footer', () => {
    const bytes = fileBytes(COLUMNS, [[1n, 1, '1', 'a', 1, '2020-01-01']]);
    expect(() => readParquetColumns(bytes.subarray(0, bytes.length - 3))).toThrow(/not "PAR1"/);
    const footerLength = parquetFooterLength(bytes.subarray(bytes.length - 8));
    expect(() => readParquetColumns(bytes.subarray(bytes.length - footerLength - 7))).toThrow(/its footer is \d+ bytes but only \d+ precede the trailer/);
  });

  it('refuses a footer that does not parse', () => {
    const bytes = Buffer.from(fileBytes(COLUMNS));
    const footerLength = parquetFooterLength(bytes.subarray(bytes.length - 8));
    // The footer's bytes, all but its first, replaced by an unknown compact type.
    bytes.fill(0x0d, bytes.length - 8 - footerLength + 1, bytes.length - 8);
    expect(() => readParquetColumns(bytes)).toThrow(/its footer does not parse/);
    const cut = Buffer.concat([bytes.subarray(0, 4), Buffer.from([0x15, 0x02, 0x19]), Buffer.from([3, 0, 0, 0]), Buffer.from('PAR1')]);
    expect(() => readParquetColumns(cut)).toThrow(/its footer does not parse/);
  });
});

describe('ParquetEncoder refusals', () => {
  const numeric: ParquetColumnSpec[] = [
    { name: 'n', type: 'INT64' },
    { name: 'amount', type: 'NUMERIC' },
  ];

  it('refuses a NUMERIC beyond DECIMAL(38,9), naming column and value, then refuses to go on', () => {
    const encoder = new ParquetEncoder(numeric);
    expect(encoder.addRows([[1n, '99999999999999999999999999999.999999999']])).toEqual([]);
    expect(() => encoder.addRows([[2n, '100000000000000000000000000000']])).toThrow(/column "amount": value "100000000000000000000000000000"/);
    expect(codeOf(() => encoder.addRows([[3n, '1']]))).toBe('internal_error');
    expect(codeOf(() => encoder.finish())).toBe('internal_error');
  });

  it.each([
    ['NUMERIC', '0.0000000001'],
    ['NUMERIC', '1e5'],
    ['NUMERIC', '.5'],
    ['NUMERIC', '5.'],
    ['NUMERIC', '--1'],
    ['DATE', '2023-02-30'],
    ['DATE', '2023-1-01'],
    ['INT64', 2n ** 63n],
    ['INT64', 5],
    ['FLOAT64', 5n],
    ['STRING', 5],
    ['TIMESTAMP', Number.NaN],
  ] as const)('refuses %s value %s with parquet_value_invalid', (type, value) => {
    const encoder = new ParquetEncoder([{ name: 'v', type }]);
    expect(codeOf(() => encoder.addRows([[value]]))).toBe('parquet_value_invalid');
  });

  it('refuses a row of the wrong width', () => {
    expect(codeOf(() => new ParquetEncoder(numeric).addRows([[1n]]))).toBe('parquet_value_invalid');
  });

  it('refuses an unusable schema or options', () => {
    expect(codeOf(() => new ParquetEncoder([]))).toBe('parquet_schema_invalid');
    expect(codeOf(() => new ParquetEncoder([...numeric, { name: 'n', type: 'STRING' }]))).toBe('parquet_schema_invalid');
    expect(codeOf(() => new ParquetEncoder(numeric, { rowGroupBytes: 0 }))).toBe('parquet_schema_invalid');
    expect(codeOf(() => new ParquetEncoder(numeric, { compression: 'lz4' as never }))).toBe('parquet_schema_invalid');
  });

  it('hands back nothing until a row group is full, and the first bytes it hands back are "PAR1"', () => {
    const encoder = new ParquetEncoder(numeric, { rowGroupBytes: 24 * 10 });
    expect(encoder.addRows([[1n, '1']])).toEqual([]);
    const group = encoder.addRows(Array.from({ length: 9 }, () => [1n, '1']));
    expect(Buffer.from(group[0]!).toString('latin1', 0, 4)).toBe('PAR1');
    expect(encoder.rowCount).toBe(10);
    const rest = encoder.finish();
    expect(Buffer.from(rest.at(-1)!).toString('latin1')).toMatch(/PAR1$/);
    expect(Buffer.from(rest[0]!).toString('latin1', 0, 4)).not.toBe('PAR1');
  });
});
