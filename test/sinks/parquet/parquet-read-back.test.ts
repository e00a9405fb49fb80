import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { listFiles, runCli } from '../../support/cli-harness.js';
import { readCsv } from '../../support/csv-read.js';
import { tempDirEachTest } from '../../support/temp-dir-hooks.js';
import {
  ENV,
  keyValueMetadata,
  leafSchema,
  parquetAsCsvText,
  parquetRowCount,
  parquetWorkspace,
  startTableSource,
  type ScriptedTable,
} from './parquet-test-support.js';

/**
 * The Parquet sink as a reader sees its files: one job with a CSV and a Parquet sink, run through
 * the CLI against a scripted source, and every value DuckDB (an independent reader) reads from the
 * Parquet file compared with what the CSV sink wrote for the same run.
 */

const LONG = 'Ω'.repeat(300_000) + 'end';
const TABLE: ScriptedTable = {
  headers: ['Id', 'Amount', 'Ratio', 'Created at (UTC)', 'Day', 'Text', 'Sparse'],
  dataTypes: ['number', 'number', 'number', 'datetime', 'datetime', 'text', 'text'],
  pages: [
    // Page 0: `Sparse` is null on every row (a writer typing columns from the first page would lose it).
    [
      ['9223372036854775807', '99999999999999999999999999999.999999999', 1.5, '1938-04-01T12:00:00.123Z', '1969-12-31', '', null],
      ['-9223372036854775808', '-99999999999999999999999999999.999999999', -2.5e-300, '0001-01-01T00:00:00Z', '0001-01-01', null, null],
      ['9007199254740993', '-0.000000001', 1e21, '9999-12-31T23:59:59.999Z', '9999-12-31', 'héllo 🌍 עברית e\u0301 𝄞', null],
    ],
    [
      [0, '0', 0.1, 0, '2026-11-25', 'quote " comma , CRLF \r\n tab \t', 'now here'],
      [null, null, null, null, null, LONG, ''],
      [-1, '12345678901234567890123456789.5', Number.MAX_VALUE, 253402300799999, '2024-02-29', 'null', null],
    ],
  ],
};
const OVERRIDES = { Id: { type: 'INT64' }, Amount: { type: 'NUMERIC' }, Day: { type: 'DATE' } };

function jobOf(table: ScriptedTable, sinks: object[], name = 'typed'): Record<string, unknown> {
  const items = table.headers.map((header, index) => ({ header, formula: `[incident.f${index}]`, dataType: table.dataTypes[index], filters: [] }));
  const columns = Object.fromEntries(Object.entries(OVERRIDES).filter(([header]) => table.headers.includes(header)));
  return { name, tile: 't-1', query: { items, options: { pageNumber: 0, itemsPerPage: 50 } }, columns, sinks };
}

const root = tempDirEachTest();
const sources: Array<{ close(): Promise<void> }> = [];
afterAll(async () => {
  for (const source of sources) await source.close();
});

async function runBoth(table: ScriptedTable, parquet: object = {}): Promise<{ csv: string; parquet: string; exitCode: number; stderr: string }> {
  const source = await startTableSource(table);
  sources.push(source);
  const ws = await parquetWorkspace(root.path, source.url, [
    jobOf(table, [
      { type: 'csv', path: 'typed.csv' },
      { type: 'parquet', ...parquet },
    ]),
  ]);
  const result = await runCli(['run', '--config', ws.configFile, '--jobs', ws.jobsDir], { env: ENV });
  return { csv: path.join(ws.outDir, 'typed.csv'), parquet: path.join(ws.outDir, 'typed.parquet'), exitCode: result.exitCode, stderr: result.stderr };
}

describe('the Parquet sink read back by DuckDB, against the CSV sink of the same run', () => {
  it('holds every value the CSV file holds, null apart from "", edges of each type included', async () => {
    const run = await runBoth(TABLE);
    expect(run.exitCode, run.stderr).toBe(0);
    const csv = await readCsv(run.csv);
    const parquet = await parquetAsCsvText(run.parquet);
    expect(parquet.rows).toHaveLength(6);
    expect(parquet.rows).toEqual(csv.rows);
    // The cases the comparison must have seen, so a sandbox change cannot empty it.
    expect(parquet.rows[0]!.slice(0, 4)).toEqual(['9223372036854775807', '99999999999999999999999999999.999999999', '1.5', '1938-04-01T12:00:00.123Z']);
    expect(parquet.rows[1]!.slice(0, 6)).toEqual([
      '-9223372036854775808',
      '-99999999999999999999999999999.999999999',
      '-2.5e-300',
      '0001-01-01T00:00:00.000Z',
      '0001-01-01',
      null,
    ]);
    expect(parquet.rows[2]!.slice(3, 6)).toEqual(['9999-12-31T23:59:59.999Z', '9999-12-31', 'héllo 🌍 עברית e\u0301 𝄞']);
    expect(parquet.rows[0]![5]).toBe('');
    expect(parquet.rows[4]![5]).toBe(LONG);
    expect(parquet.rows.map((row) => row[6])).toEqual([null, null, null, 'now here', '', null]);
  });

  it('names the columns by their warehouse-safe names, keeps the headers in the footer, and types them as BigQuery reads them', async () => {
    const run = await runBoth(TABLE);
    expect(run.exitCode, run.stderr).toBe(0);
    const { header } = await readCsv(run.csv);
    expect(header).toEqual(TABLE.headers);
    const schema = await leafSchema(run.parquet);
    expect([...schema.keys()]).toEqual(['id', 'amount', 'ratio', 'created_at_utc', 'day', 'text', 'sparse']);
    expect(JSON.parse((await keyValueMetadata(run.parquet))['tilehouse.headers']!)).toEqual(TABLE.headers);
    expect(schema.get('id')).toMatchObject({ type: 'INT64', repetition: 'OPTIONAL', converted: null });
    expect(schema.get('amount')).toMatchObject({
      type: 'FIXED_LEN_BYTE_ARRAY',
      length: '16',
      converted: 'DECIMAL',
      scale: 9n,
      precision: 38n,
      repetition: 'OPTIONAL',
    });
    expect(schema.get('amount')!.logical).toMatch(/DecimalType\(scale=9, precision=38\)/);
    expect(schema.get('ratio')).toMatchObject({ type: 'DOUBLE', repetition: 'OPTIONAL' });
    expect(schema.get('created_at_utc')).toMatchObject({ type: 'INT64', converted: 'TIMESTAMP_MICROS', repetition: 'OPTIONAL' });
    expect(schema.get('created_at_utc')!.logical).toMatch(
      /TimestampType\(isAdjustedToUTC=1, unit=TimeUnit\(MILLIS=<null>, MICROS=MicroSeconds\(\), NANOS=<null>\)\)/,
    );
    expect(schema.get('day')).toMatchObject({ type: 'INT32', converted: 'DATE', repetition: 'OPTIONAL' });
    expect(schema.get('day')!.logical).toMatch(/DateType/);
    for (const name of ['text', 'sparse']) {
      expect(schema.get(name)).toMatchObject({ type: 'BYTE_ARRAY', converted: 'UTF8', repetition: 'OPTIONAL' });
      expect(schema.get(name)!.logical).toMatch(/StringType/);
    }
  });

  it.each(['zstd', 'gzip', 'none'] as const)('writes the same values with compression: %s', async (compression) => {
    const run = await runBoth(TABLE, { compression });
    expect(run.exitCode, run.stderr).toBe(0);
    expect((await parquetAsCsvText(run.parquet)).rows).toEqual((await readCsv(run.csv)).rows);
    const bytes = await readFile(run.parquet);
    // The column chunks' codec, as DuckDB reads it from the footer.
    const { duckdb, sqlString } = await import('./encoder/duckdb-read-back.js');
    const codecs = (await (await duckdb()).runAndReadAll(`SELECT DISTINCT compression FROM parquet_metadata(${sqlString(run.parquet)})`))
      .getRowObjectsJS()
      .map((row) => String(row['compression']));
    expect(codecs).toEqual([compression === 'none' ? 'UNCOMPRESSED' : compression.toUpperCase()]);
    expect(bytes.subarray(0, 4).toString()).toBe('PAR1');
  });

  it('writes an empty result as a valid file: the schema, zero rows', async () => {
    const run = await runBoth({ ...TABLE, pages: [[]] });
    expect(run.exitCode, run.stderr).toBe(0);
    expect((await readCsv(run.csv)).rows).toEqual([]);
    expect(await parquetRowCount(run.parquet)).toBe(0);
    expect([...(await leafSchema(run.parquet)).keys()]).toEqual(['id', 'amount', 'ratio', 'created_at_utc', 'day', 'text', 'sparse']);
  });

  it('writes 5,000 columns, every value as the CSV sink does', async () => {
    const width = 5000;
    const headers = Array.from({ length: width }, (_, index) => `Column ${index}`);
    const dataTypes = headers.map((_, index) => (index % 2 === 0 ? 'text' : 'number'));
    const row = (r: number) => headers.map((_, index) => (index % 2 === 0 ? (index % 7 === r ? null : `v${r}.${index}`) : index * 10 + r));
    const table: ScriptedTable = { headers, dataTypes, pages: [[row(0), row(1)], [row(2)]] };
    const run = await runBoth(table);
    expect(run.exitCode, run.stderr).toBe(0);
    const parquet = await parquetAsCsvText(run.parquet);
    expect(parquet.names).toHaveLength(width);
    expect(parquet.names[4999]).toBe('column_4999');
    expect(parquet.rows).toEqual((await readCsv(run.csv)).rows);
    expect(parquet.rows[1]![3]).toBe('31');
  }, 120_000);

  it('refuses a tile without visible columns, saying why, and keeps the previous file', async () => {
    const source = await startTableSource({ headers: [], dataTypes: [], pages: [[]] });
    sources.push(source);
    const hidden = {
      ...jobOf(TABLE, [{ type: 'parquet' }]),
      query: {
        items: [{ header: 'Id', formula: '[incident.f0]', dataType: 'number', hidden: true, filters: [] }],
        options: { pageNumber: 0, itemsPerPage: 50 },
      },
      columns: {},
    };
    const ws = await parquetWorkspace(root.path, source.url, [hidden]);
    await mkdir(ws.outDir, { recursive: true });
    await writeFile(path.join(ws.outDir, 'typed.parquet'), 'previous');
    const result = await runCli(['run', '--config', ws.configFile, '--jobs', ws.jobsDir], { env: ENV });
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toMatch(/parquet_schema_invalid: the tile has no visible columns, and a Parquet file needs at least one/);
    expect(await readFile(path.join(ws.outDir, 'typed.parquet'), 'utf8')).toBe('previous');
    expect(await listFiles(ws.outDir)).toEqual(['typed.parquet']);
  });

  it('leaves no temp file beside the published ones', async () => {
    const run = await runBoth(TABLE);
    expect(run.exitCode, run.stderr).toBe(0);
    expect(await listFiles(path.dirname(run.parquet))).toEqual(['typed.csv', 'typed.parquet']);
  });
});
