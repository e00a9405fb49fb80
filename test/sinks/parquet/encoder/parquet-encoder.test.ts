import { afterAll, describe, expect, it } from 'vitest';
import type { TypedRow } from '../../../../src/transform/column.js';
import { ParquetEncoder, type ParquetColumnSpec } from '../../../../src/sinks/parquet/encoder/parquet-encoder.js';
import { cleanUpFiles, duckdb, duckTypes, parquetSchema, readBack, writeParquet } from './duckdb-read-back.js';

afterAll(cleanUpFiles);

const ALL_TYPES: ParquetColumnSpec[] = [
  { name: 'id', type: 'INT64' },
  { name: 'score', type: 'FLOAT64' },
  { name: 'amount', type: 'NUMERIC' },
  { name: 'title', type: 'STRING' },
  { name: 'created', type: 'TIMESTAMP' },
  { name: 'day', type: 'DATE' },
];

describe('ParquetEncoder read back by DuckDB', () => {
  it('declares each type as issue 28 maps it, every column nullable', async () => {
    const { path } = writeParquet(ALL_TYPES, [[[1n, 1.5, '1.5', 'a', 0, '2024-01-01']]]);
    const schema = await parquetSchema(path);
    const pick = (name: string) => {
      const row = schema.get(name)!;
      return {
        type: row['type'],
        converted: row['converted_type'],
        repetition: row['repetition_type'],
        scale: row['scale'],
        precision: row['precision'],
        length: row['type_length'],
        logical: String(row['logical_type']),
      };
    };
    expect(pick('id')).toMatchObject({ type: 'INT64', repetition: 'OPTIONAL' });
    expect(pick('score')).toMatchObject({ type: 'DOUBLE', repetition: 'OPTIONAL' });
    expect(pick('amount')).toMatchObject({
      type: 'FIXED_LEN_BYTE_ARRAY',
      converted: 'DECIMAL',
      scale: 9n,
      precision: 38n,
      length: '16',
      repetition: 'OPTIONAL',
    });
    expect(pick('amount').logical).toMatch(/DecimalType\(scale=9, precision=38\)/);
    expect(pick('title')).toMatchObject({ type: 'BYTE_ARRAY', converted: 'UTF8', repetition: 'OPTIONAL' });
    expect(pick('title').logical).toMatch(/StringType/);
    expect(pick('created')).toMatchObject({ type: 'INT64', converted: 'TIMESTAMP_MICROS', repetition: 'OPTIONAL' });
    expect(pick('created').logical).toMatch(/TimestampType\(isAdjustedToUTC=1, unit=TimeUnit\(MILLIS=<null>, MICROS=MicroSeconds\(\), NANOS=<null>\)\)/);
    expect(pick('day')).toMatchObject({ type: 'INT32', converted: 'DATE', repetition: 'OPTIONAL' });
    expect(pick('day').logical).toMatch(/DateType/);
    expect(Object.fromEntries(await duckTypes(path))).toEqual({
      id: 'BIGINT',
      score: 'DOUBLE',
      amount: 'DECIMAL(38,9)',
      title: 'VARCHAR',
      created: 'TIMESTAMP WITH TIME ZONE',
      day: 'DATE',
    });
  });

  it("writes each column's field_id when it has one (Iceberg binds columns by it), and none when it has not", async () => {
    const withIds = ALL_TYPES.map((column, index) => ({ ...column, fieldId: [7, 1, 2_147_483_647, 3, 40, 5][index]! }));
    const row: TypedRow = [1n, 1.5, '-12345678901234567890123456789.123456789', 'é', -1_000_000_000_000, '1938-02-03'];
    const { path } = writeParquet(withIds, [[row, [null, null, null, null, null, null]]]);
    const schema = await parquetSchema(path);
    expect(Object.fromEntries([...schema].map(([name, element]) => [name, element['field_id']]))).toEqual({
      id: 7n,
      score: 1n,
      amount: 2_147_483_647n,
      title: 3n,
      created: 40n,
      day: 5n,
    });
    // The id sits between precision and the logical type: the types and values read as before.
    expect(Object.fromEntries(await duckTypes(path))).toEqual(Object.fromEntries(await duckTypes(writeParquet(ALL_TYPES, [[row]]).path)));
    expect(await readBack(path, withIds)).toEqual([row, [null, null, null, null, null, null]]);
    const plain = await parquetSchema(writeParquet(ALL_TYPES, [[row]]).path);
    expect([...plain.values()].map((element) => element['field_id'])).toEqual([null, null, null, null, null, null]);
  });

  it('refuses a field id that is not a positive i32, or one given to two columns', () => {
    for (const fieldId of [0, -1, 1.5, 2 ** 31]) {
      expect(() => new ParquetEncoder([{ name: 'a', type: 'INT64', fieldId }])).toThrow(/field id .* not a whole number from 1 to 2147483647/);
    }
    expect(
      () =>
        new ParquetEncoder([
          { name: 'a', type: 'INT64', fieldId: 3 },
          { name: 'b', type: 'STRING', fieldId: 3 },
        ]),
    ).toThrow(/field id 3 is given to two columns/);
  });

  it('reads back every value of each type, edges included', async () => {
    const rows: TypedRow[] = [
      [2n ** 63n - 1n, -0, '99999999999999999999999999999.999999999', '', -1009843200000, '1938-01-01'],
      [-(2n ** 63n), 1e308, '-99999999999999999999999999999.999999999', null, 253402300799999, '9999-12-31'],
      [0n, 5e-324, '0', 'x', 0, '1970-01-01'],
      [-1n, -2.2250738585072014e-308, '0.000000001', '𝄞 e\u0301 日本', -1, '1969-12-31'],
      [9007199254740993n, Number.MAX_VALUE, '-0.000000001', 'quote " comma , newline \n tab \t', 1700000000123, '0001-01-01'],
      [null, null, null, null, null, null],
      [123n, -1.5, '-12.5', 'null', 86400000, '2024-02-29'],
    ];
    const { path } = writeParquet(ALL_TYPES, [rows]);
    const back = await readBack(path, ALL_TYPES);
    expect(back).toEqual(rows);
    expect(Object.is(back[0]![1], -0)).toBe(true);
  });

  it('keeps a 1 MB string and an empty string apart from null', async () => {
    const long = 'ab€'.repeat(350_000);
    const columns: ParquetColumnSpec[] = [{ name: 's', type: 'STRING' }];
    const rows: TypedRow[] = [[long], [''], [null], [long.slice(0, 999)]];
    const { path } = writeParquet(columns, [rows]);
    const back = await readBack(path, columns);
    expect(back.map((row) => row[0])).toEqual([long, '', null, long.slice(0, 999)]);
  });

  it('writes the key-value metadata it is given into the footer', async () => {
    const { path } = writeParquet(ALL_TYPES.slice(0, 1), [[[1n]]], { keyValueMetadata: { 'tilehouse.job': 'incidents daily', empty: '' } });
    const db = await duckdb();
    const reader = await db.runAndReadAll(`SELECT decode(key) AS key, decode(value) AS value FROM parquet_kv_metadata('${path}') ORDER BY key`);
    expect(reader.getRowObjectsJS()).toEqual([
      { key: 'empty', value: '' },
      { key: 'tilehouse.job', value: 'incidents daily' },
    ]);
  });

  it('writes a valid file with the schema and zero rows', async () => {
    const { path } = writeParquet(ALL_TYPES, []);
    expect(await readBack(path, ALL_TYPES)).toEqual([]);
    expect((await duckTypes(path)).get('amount')).toBe('DECIMAL(38,9)');
  });

  it('writes 5,000 columns', async () => {
    const columns: ParquetColumnSpec[] = Array.from({ length: 5000 }, (_, index) => ({ name: `c${index}`, type: ALL_TYPES[index % ALL_TYPES.length]!.type }));
    const sample: TypedRow = [7n, 2.5, '3.25', 'v', 1000, '2020-05-06'];
    const rows: TypedRow[] = [0, 1, 2].map((r) => columns.map((_, index) => (index % 7 === r ? null : sample[index % sample.length]!)));
    const { path } = writeParquet(columns, [rows]);
    const back = await readBack(path, columns);
    expect(back).toEqual(rows);
  });

  it('writes several row groups whose rows read back in order, with a column null in all of the first', async () => {
    const columns: ParquetColumnSpec[] = [
      { name: 'n', type: 'INT64' },
      { name: 'late', type: 'STRING' },
      { name: 'at', type: 'TIMESTAMP' },
    ];
    const rows: TypedRow[] = Array.from({ length: 5000 }, (_, index) => [
      BigInt(index),
      index < 3000 ? null : `row ${index}`,
      index % 3 === 0 ? null : index * 1000,
    ]);
    const batches = [rows.slice(0, 1234), rows.slice(1234, 1235), rows.slice(1235)];
    const { path } = writeParquet(columns, batches, { rowGroupBytes: 20_000 });
    const db = await duckdb();
    const groups = await db.runAndReadAll(`SELECT count(DISTINCT row_group_id) AS n FROM parquet_metadata('${path}')`);
    expect(Number(groups.getRowObjectsJS()[0]!['n'])).toBeGreaterThanOrEqual(4);
    expect(await readBack(path, columns)).toEqual(rows);
  });

  it('holds back no more than a row group: what it hands back keeps up with what it is fed', async () => {
    const columns: ParquetColumnSpec[] = [{ name: 'n', type: 'INT64' }];
    const rowGroupBytes = 64 * 1024;
    const encoder = new ParquetEncoder(columns, { compression: 'uncompressed', rowGroupBytes });
    let fed = 0;
    let handedBack = 0;
    for (let batch = 0; batch < 200; batch++) {
      const rows: TypedRow[] = Array.from({ length: 1000 }, (_, index) => [BigInt(batch * 1000 + index)]);
      fed += rows.length * 8;
      for (const piece of encoder.addRows(rows)) handedBack += piece.length;
      // PLAIN INT64 is 8 bytes a value, so uncompressed output can lag the input by one row group at most.
      expect(fed - handedBack).toBeLessThanOrEqual(rowGroupBytes);
    }
    expect(encoder.rowCount).toBe(200_000);
  });

  it.each(['snappy', 'gzip', 'zstd', 'uncompressed'] as const)('writes %s pages DuckDB reads, and names the codec', async (compression) => {
    const rows: TypedRow[] = Array.from({ length: 3000 }, (_, index) => [
      BigInt(index % 17),
      index / 7,
      `${index % 50}.25`,
      `status ${index % 5}`,
      index * 60_000,
      '2024-03-01',
    ]);
    const { path } = writeParquet(ALL_TYPES, [rows], { compression, rowGroupBytes: 50_000 });
    expect(await readBack(path, ALL_TYPES)).toEqual(rows);
    const db = await duckdb();
    const codecs = await db.runAndReadAll(`SELECT DISTINCT compression FROM parquet_metadata('${path}')`);
    expect(codecs.getRowsJS().map((row) => row[0])).toEqual([compression.toUpperCase()]);
  });
});
