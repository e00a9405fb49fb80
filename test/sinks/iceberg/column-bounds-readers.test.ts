// The column bounds the writer puts in its manifests, as the readers use them: pyiceberg and DuckDB
// prune a data file whose bounds exclude a filter's value, so a bound narrower than the file's
// values loses rows. Every value of every column is filtered on (=, >=, <=) at the edges of each
// file: longs at ±2^63, decimals of 38 digits and ±1e-9, strings past 16 code points (truncated
// bounds), U+FFFF beside an astral character (UTF-16 order is not code point order), U+10FFFF
// (an upper bound that cannot be raised), 0001-01-01 and 9999-12-31, timestamps before 1970.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openJdbcCatalog } from '../../../src/sinks/iceberg/jdbc-catalog.js';
import { writeIcebergRun } from '../../../src/sinks/iceberg/table-writer.js';
import type { TypedRow } from '../../../src/transform/column.js';
import { icebergPythonOrSkip, type PyicebergTable, type ReadRows, readIceberg, type ScanFilter } from '../../support/iceberg-readers.js';
import { postgresBlocker, postgresOrSkip, usePostgresDatabase } from '../../support/postgres.js';
import { describeUnless, missing } from '../../support/skip.js';
import type { IcebergCatalog } from '../../../src/sinks/iceberg/catalog.js';
import { COLUMNS, readBoth, sortedLines, typedText } from './iceberg-test-rows.js';

const server = postgresOrSkip();
const python = icebergPythonOrSkip();

const localPath = (location: string) => (location.startsWith('file:') ? fileURLToPath(location) : location);

const EXTRACTED_AT_MS = 1_764_633_600_123;

/** Three runs appended, one data file each, whose values sit at the edges of each type. */
const FILES: TypedRow[][] = [
  [
    [-9_223_372_036_854_775_808n, '-12345678901234567890123456789.123456789', '', -1_006_819_200_000, '0001-01-01', -1.5],
    [-1n, '-0.000000001', 'a', 0, '1969-12-31', 0],
    [5n, '0.5', '\uFFFF', 1, '1970-01-01', null],
    [6n, null, '😀', 1_733_000_000_000, '2024-02-29', 2.25],
  ],
  [
    [9_223_372_036_854_775_807n, '99999999999999999999999999999.999999999', 'abcdefghijklmnopqrstuvwxyz', 253_402_300_799_999, '9999-12-31', 1e300],
    [100n, '1', 'abcdefghijklmnopq😀', -62_135_596_800_000, '2000-01-01', -1e-300],
    [101n, '-1', 'abcdefghijklmnop', 1, '2000-01-02', null],
    [102n, '12.5', null, null, null, 3],
  ],
  [
    [200n, '0.000000001', '\u{10FFFF}'.repeat(17), 1_000, '1999-12-31', 7],
    [201n, '-99999999999999999999999999999.999999999', 'abcdefghijklmno\u{10FFFF}zz', -1_000, '2001-01-01', -7],
    [202n, '3', 'abcdefghijklmno\uD7FFzz', 86_400_000, '1970-01-02', 0.1],
  ],
];

const NAMES = [...COLUMNS.map((column) => column.name), '_run_id', '_extracted_at'];
const TYPES = [...COLUMNS.map((column) => column.type), 'STRING', 'TIMESTAMP'] as const;

function unscaled(text: string): bigint {
  const negative = text.startsWith('-');
  const [whole = '0', fraction = ''] = (negative ? text.slice(1) : text).split('.');
  const value = BigInt(whole) * 10n ** 9n + BigInt(fraction.padEnd(9, '0'));
  return negative ? -value : value;
}

/** Two values of a column as the readers give them back, in the column type's order (strings by UTF-8 bytes, as Iceberg orders them). */
function compareText(type: (typeof TYPES)[number], a: string, b: string): number {
  const sign = (x: bigint | number) => (x < 0 ? -1 : x > 0 ? 1 : 0);
  switch (type) {
    case 'INT64':
    case 'TIMESTAMP':
      return sign(BigInt(a) - BigInt(b));
    case 'NUMERIC':
      return sign(unscaled(a) - unscaled(b));
    case 'FLOAT64':
      return sign(Number(a) - Number(b));
    case 'DATE':
      return a < b ? -1 : a > b ? 1 : 0;
    case 'STRING':
      return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
  }
}

describeUnless(postgresBlocker(server) ?? missing('the Iceberg readers', python))(
  "column bounds in the manifests, as pyiceberg's and DuckDB's filtered reads prune by them (JDBC catalog on PostgreSQL)",
  () => {
    const database = usePostgresDatabase(server!);
    let catalog: IcebergCatalog | undefined;
    let warehouse: string;
    let reader: PyicebergTable;
    beforeAll(async () => {
      warehouse = await mkdtemp(join(tmpdir(), 'tilehouse-iceberg-bounds-'));
      const catalogName = 'tilehouse_bounds';
      const { host, port, user, password } = server!;
      catalog = await openJdbcCatalog({ catalogName, warehouse, connection: { host, port, user, password, database: database.name } });
      reader = {
        catalog: {
          type: 'sql',
          uri: `postgresql+psycopg2://${encodeURIComponent(user)}:${encodeURIComponent(password)}@${host}:${port}/${database.name}`,
          warehouse: `file://${warehouse}`,
        },
        catalogName,
        table: 'bounds.edges',
      };
    });
    afterAll(async () => {
      await catalog?.close();
      await rm(warehouse, { recursive: true, force: true });
    });

    describe('three data files appended', () => {
      it('every filter (=, >=, <=) on every value of every column reads exactly the rows it selects, in pyiceberg and in DuckDB', async () => {
        for (const [index, rows] of FILES.entries())
          await writeIcebergRun({
            catalog: catalog!,
            table: { namespace: 'bounds', name: 'edges' },
            columns: COLUMNS,
            rows: [rows],
            mode: 'append',
            runId: `run-${index}`,
            extractedAtMs: EXTRACTED_AT_MS + index,
          });
        const expected = FILES.flatMap((rows, index) => rows.map((row) => typedText([...row, `run-${index}`, EXTRACTED_AT_MS + index])));
        const { pyiceberg, duckdb } = await readBoth(python!, reader);
        expect(pyiceberg.columns).toEqual(NAMES);
        expect(sortedLines(pyiceberg.rows)).toEqual(sortedLines(expected));
        expect(sortedLines(duckdb.rows)).toEqual(sortedLines(expected));

        // The writer wrote bounds for every column of every file (else nothing here would be pruned).
        const { metadataLocation } = await readIceberg(python!, 'pyiceberg-table', reader);
        const manifests = await manifestEntries(metadataLocation);
        expect(manifests).toHaveLength(3);
        for (const entry of manifests) expect(Object.keys(entry.lower_bounds).length).toBe(NAMES.length);

        const filters: ScanFilter[] = [];
        const selected: (string | null)[][][] = [];
        NAMES.forEach((column, index) => {
          const values = [...new Set(expected.map((row) => row[index]).filter((value): value is string => value !== null))];
          for (const value of values)
            for (const op of ['=', '>=', '<='] as const) {
              filters.push({ column, op, value });
              selected.push(
                expected.filter((row) => {
                  const cell = row[index];
                  if (cell === null || cell === undefined) return false;
                  const order = compareText(TYPES[index]!, cell, value);
                  return op === '=' ? order === 0 : op === '>=' ? order >= 0 : order <= 0;
                }),
              );
            }
        });
        const check = (reader: string, results: ReadRows[]) =>
          results.forEach((result, index) => {
            const filter = filters[index]!;
            expect(sortedLines(result.rows), `${reader}: ${filter.column} ${filter.op} ${JSON.stringify(filter.value)}`).toEqual(sortedLines(selected[index]!));
          });
        check('pyiceberg', (await readIceberg(python!, 'pyiceberg-filtered', { ...reader, filters })).results);
        check('DuckDB', (await readIceberg(python!, 'duckdb-filtered', { metadata: metadataLocation, filters })).results);
      }, 600_000);
    });

    /** The data files' manifest entries of the table's current snapshot, as fastavro reads them (bounds as hex, by field id). */
    async function manifestEntries(metadataLocation: string): Promise<{ lower_bounds: Record<string, string>; upper_bounds: Record<string, string> }[]> {
      const metadata = JSON.parse(await readFile(localPath(metadataLocation), 'utf8')) as {
        'current-snapshot-id': number;
        snapshots: { 'snapshot-id': number; 'manifest-list': string }[];
      };
      const current = metadata.snapshots.at(-1)!;
      const list = await readIceberg(python!, 'avro', { path: localPath(current['manifest-list']) });
      const entries = [];
      for (const manifest of list.records as { manifest_path: string }[]) {
        const read = await readIceberg(python!, 'avro', { path: localPath(manifest.manifest_path) });
        for (const record of read.records as {
          data_file: { lower_bounds: { key: string; value: string }[]; upper_bounds: { key: string; value: string }[] };
        }[])
          entries.push({
            lower_bounds: Object.fromEntries(record.data_file.lower_bounds.map((pair) => [pair.key, pair.value])),
            upper_bounds: Object.fromEntries(record.data_file.upper_bounds.map((pair) => [pair.key, pair.value])),
          });
      }
      return entries;
    }
  },
);
