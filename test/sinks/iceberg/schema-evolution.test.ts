// `schema: add` through each catalog (Apache Iceberg's REST server; the JDBC catalog on the
// suite's PostgreSQL), every write mode: a run whose tile gained a column commits a new schema with
// the new field (a fresh id) in the same commit as its snapshot; pyiceberg and DuckDB read the old
// rows with a null in it; the metadata JSON shows every earlier field's id unchanged. A removed or
// retyped column, and a new one under `freeze`, are refused before anything is written.
import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { IcebergCatalog } from '../../../src/sinks/iceberg/catalog.js';
import { type IcebergRunOptions, writeIcebergRun } from '../../../src/sinks/iceberg/table-writer.js';
import type { TypedRow } from '../../../src/transform/column.js';
import type { ColumnType } from '../../../src/value-types/column-types.js';
import { type IcebergCatalogKind, icebergCatalogsBlocker, icebergPython, useIcebergCatalog } from '../../support/iceberg-catalogs.js';
import { readIceberg } from '../../support/iceberg-readers.js';
import { describeUnless } from '../../support/skip.js';
import { asText, COLUMNS, rowsOf, sortedLines } from './iceberg-test-rows.js';

const KINDS: IcebergCatalogKind[] = ['rest', 'jdbc'];
// Each reading starts Python three times (pyiceberg's table and scan, DuckDB's scan): seconds apiece on a loaded machine.
const TIMEOUT_MS = 300_000;

const WITH_TEAM: readonly { name: string; type: ColumnType }[] = [...COLUMNS, { name: 'team', type: 'STRING' }];
const NAMES = COLUMNS.map((column) => column.name);
const LINEAGE = ['_run_id', '_extracted_at'];
const DAY = NAMES.indexOf('day');
/** The six tile fields as every table here starts: ids 1..6 in the tile's order. */
const TILE_FIELDS = [
  { id: 1, name: 'id', required: false, type: 'long' },
  { id: 2, name: 'amount', required: false, type: 'decimal(38, 9)' },
  { id: 3, name: 'title', required: false, type: 'string' },
  { id: 4, name: 'created', required: false, type: 'timestamptz' },
  { id: 5, name: 'day', required: false, type: 'date' },
  { id: 6, name: 'score', required: false, type: 'double' },
];
const LINEAGE_FIELDS = [
  { id: 7, name: '_run_id', required: false, type: 'string' },
  { id: 8, name: '_extracted_at', required: false, type: 'timestamptz' },
];

/** rowsOf's rows with a team each (`team <index>`). */
const withTeam = (rows: readonly TypedRow[], first: number): TypedRow[] => rows.map((row, index) => [...row, `team ${first + index}`]);
/** As the readers give text back: the six tile columns, then `extra` (lineage and team in the table's order). */
const text = (rows: readonly TypedRow[], extra: (row: TypedRow) => (string | null)[]) => rows.map((row) => [...asText(row.slice(0, 6)), ...extra(row)]);
const micros = (ms: number) => String(BigInt(ms) * 1000n);
const onDay = (rows: readonly TypedRow[], day: string): TypedRow[] => rows.map((row) => row.map((value, index) => (index === DAY ? day : value)));

interface MetadataJson {
  'last-column-id': number;
  'current-schema-id': number;
  schemas: { 'schema-id': number; fields: { id: number; name: string; required: boolean; type: string }[] }[];
  snapshots: { 'schema-id'?: number; summary: Record<string, string> }[];
  'partition-specs': { 'spec-id': number; fields: { 'source-id': number; name: string; transform: string }[] }[];
}

describeUnless(icebergCatalogsBlocker(KINDS))('schema: add through each catalog (pyiceberg and DuckDB read old and new files)', () => {
  const python = icebergPython();
  for (const kind of KINDS) {
    describe(`through the ${kind} catalog`, () => {
      const under = useIcebergCatalog(kind, { catalogName: 'tilehouse_evolve' });
      const run = (table: string, options: Omit<IcebergRunOptions, 'catalog' | 'table'>, catalog: IcebergCatalog = under.catalog) =>
        writeIcebergRun({ catalog, table: { namespace: 'evolve', name: table }, ...options });

      /** The table's metadata file as the catalog names it now, and both readers' rows (which must agree). */
      async function tableOf(table: string): Promise<{ metadata: MetadataJson; metadataLocation: string; columns: string[]; rows: string[] }> {
        const reader = under.reader(`evolve.${table}`);
        const { metadataLocation } = await readIceberg(python, 'pyiceberg-table', reader);
        const metadata = JSON.parse(await readFile(fileURLToPath(metadataLocation), 'utf8')) as MetadataJson;
        const pyiceberg = await readIceberg(python, 'pyiceberg-scan', reader);
        const duckdb = await readIceberg(python, 'duckdb-scan', { metadata: metadataLocation });
        expect(duckdb.columns, 'DuckDB reads the columns pyiceberg reads').toEqual(pyiceberg.columns);
        expect(sortedLines(duckdb.rows), 'DuckDB reads the rows pyiceberg reads').toEqual(sortedLines(pyiceberg.rows));
        return { metadata, metadataLocation, columns: pyiceberg.columns, rows: sortedLines(pyiceberg.rows) };
      }

      /** The first schema kept as it was, and a second one: it and `team` with the next id, current, named by the run's snapshot. */
      function expectTeamAdded(metadata: MetadataJson, earlier: typeof TILE_FIELDS) {
        const teamId = earlier.length + 1;
        expect(metadata.schemas.map((schema) => [schema['schema-id'], schema.fields])).toEqual([
          [0, earlier],
          [1, [...earlier, { id: teamId, name: 'team', required: false, type: 'string' }]],
        ]);
        expect(metadata['current-schema-id']).toBe(1);
        expect(metadata['last-column-id']).toBe(teamId);
        expect(metadata.snapshots.map((snapshot) => snapshot['schema-id'])).toEqual([0, 1]);
      }

      it(
        "append: the second run adds team as field 9 in its own commit; the first run's rows read null in it, every id kept",
        async () => {
          const first = rowsOf(0, 4);
          const second = withTeam(rowsOf(10, 3), 10);
          await run('appended', { columns: COLUMNS, rows: [first], mode: 'append', runId: 'a-1', extractedAtMs: 1_700_000_000_000 });
          const result = await run('appended', {
            columns: WITH_TEAM,
            rows: [second],
            mode: 'append',
            runId: 'a-2',
            extractedAtMs: 1_700_000_100_000,
            schema: 'add',
          });
          expect(result).toMatchObject({ committed: true, rows: 3, tries: 1, addedColumns: ['team'] });
          const table = await tableOf('appended');
          expectTeamAdded(table.metadata, [...TILE_FIELDS, ...LINEAGE_FIELDS]);
          expect(table.columns).toEqual([...NAMES, ...LINEAGE, 'team']);
          expect(table.rows).toEqual(
            sortedLines([
              ...text(first, () => ['a-1', micros(1_700_000_000_000), null]),
              ...text(second, (row) => ['a-2', micros(1_700_000_100_000), row[6] as string]),
            ]),
          );
        },
        TIMEOUT_MS,
      );

      it(
        'replace: the schema moves once; a later run with the same columns adds no schema; a run that lost the column is refused',
        async () => {
          await run('replaced', { columns: COLUMNS, rows: [rowsOf(0, 2)], mode: 'replace', runId: 'r-1' });
          const second = withTeam(rowsOf(5, 2), 5);
          await run('replaced', { columns: WITH_TEAM, rows: [second], mode: 'replace', runId: 'r-2', schema: 'add' });
          const third = withTeam(rowsOf(20, 3), 20);
          const again = await run('replaced', { columns: WITH_TEAM, rows: [third], mode: 'replace', runId: 'r-3', schema: 'add' });
          expect(again.committed).toBe(true);
          expect(again.addedColumns).toBeUndefined();
          const table = await tableOf('replaced');
          expect(table.metadata.schemas).toHaveLength(2);
          expect(table.metadata.snapshots.map((snapshot) => snapshot['schema-id'])).toEqual([0, 1, 1]);
          expect(table.rows).toEqual(sortedLines(text(third, (row) => [row[6] as string])));

          const lost = await run('replaced', { columns: COLUMNS, rows: [rowsOf(40, 1)], mode: 'replace', runId: 'r-4', schema: 'add' }).catch(
            (error: unknown) => error,
          );
          expect(lost).toMatchObject({
            code: 'iceberg_schema_mismatch',
            message:
              "Iceberg table evolve.replaced: the tile's columns do not match the table's schema (schema: add): removed: team (string); " +
              "a removed or retyped column is never applied: restore the tile's column, or change the table by hand (its field ids stay); nothing was written",
          });
          expect((await tableOf('replaced')).metadataLocation).toBe(table.metadataLocation);
        },
        TIMEOUT_MS,
      );

      it(
        'partition: a day the second run replaces has team, a day it does not keeps its rows with a null team; the day spec is kept',
        async () => {
          const a = onDay(rowsOf(0, 3), '2024-03-01');
          const b = onDay(rowsOf(3, 2), '2024-03-02');
          await run('by_day', { columns: COLUMNS, rows: [[...a, ...b]], mode: 'partition', partition: { column: 'day' }, runId: 'p-1' });
          const b2 = withTeam(onDay(rowsOf(30, 2), '2024-03-02'), 30);
          const result = await run('by_day', {
            columns: WITH_TEAM,
            rows: [b2],
            mode: 'partition',
            partition: { column: 'day' },
            runId: 'p-2',
            schema: 'add',
          });
          expect(result).toMatchObject({ committed: true, rows: 2, addedColumns: ['team'] });
          const table = await tableOf('by_day');
          expectTeamAdded(table.metadata, TILE_FIELDS);
          expect(table.metadata['partition-specs']).toEqual([
            { 'spec-id': 0, fields: [{ 'source-id': 5, 'field-id': 1000, name: 'day_day', transform: 'day' }] },
          ]);
          expect(table.rows).toEqual(sortedLines([...text(a, () => [null]), ...text(b2, (row) => [row[6] as string])]));
        },
        TIMEOUT_MS,
      );

      it(
        "merge: the second run's keys take its rows with team; the first run's file is rewritten by field id, its other rows with a null team",
        async () => {
          const first = rowsOf(0, 6);
          await run('merged', { columns: COLUMNS, rows: [first], mode: 'merge', mergeKey: ['id'], runId: 'm-1', extractedAtMs: 1_700_000_000_000 });
          const second = withTeam(rowsOf(4, 4), 4);
          const result = await run('merged', {
            columns: WITH_TEAM,
            rows: [second],
            mode: 'merge',
            mergeKey: ['id'],
            runId: 'm-2',
            extractedAtMs: 1_700_000_200_000,
            schema: 'add',
          });
          expect(result).toMatchObject({ committed: true, rows: 4, addedColumns: ['team'] });
          const table = await tableOf('merged');
          expectTeamAdded(table.metadata, [...TILE_FIELDS, ...LINEAGE_FIELDS]);
          expect(table.metadata.snapshots[1]!.summary).toMatchObject({ 'deleted-data-files': '1', 'added-data-files': '2', 'total-records': '8' });
          expect(table.rows).toEqual(
            sortedLines([
              ...text(first.slice(0, 4), () => ['m-1', micros(1_700_000_000_000), null]),
              ...text(second, (row) => ['m-2', micros(1_700_000_200_000), row[6] as string]),
            ]),
          );
        },
        TIMEOUT_MS,
      );

      it(
        'freeze refuses a new column, and add a retyped one, naming the column and its types, before any file is written',
        async () => {
          await run('frozen', { columns: COLUMNS, rows: [rowsOf(0, 2)], mode: 'append', runId: 'f-1' });
          const before = await tableOf('frozen');
          const directory = fileURLToPath(new URL(`${before.metadataLocation.replace(/\/metadata\/[^/]+$/, '')}/`));
          const files = async () => (await readdir(directory, { recursive: true })).sort();
          const listed = await files();
          const frozen = await run('frozen', { columns: WITH_TEAM, rows: [withTeam(rowsOf(5, 1), 5)], mode: 'append', runId: 'f-2' }).catch(
            (error: unknown) => error,
          );
          expect(frozen).toMatchObject({
            code: 'iceberg_schema_mismatch',
            message:
              "Iceberg table evolve.frozen: the tile's columns do not match the table's schema (schema: freeze): added: team (string); " +
              'to take new columns as new optional fields, set schema: add on this sink; nothing was written',
          });
          const retyped = COLUMNS.map((column) => (column.name === 'score' ? { name: 'score', type: 'STRING' as const } : column));
          const refused = await run('frozen', { columns: retyped, rows: [rowsOf(5, 1)], mode: 'append', runId: 'f-3', schema: 'add' }).catch(
            (error: unknown) => error,
          );
          expect(refused).toMatchObject({
            code: 'iceberg_schema_mismatch',
            message: expect.stringContaining('(schema: add): retyped: score double -> string; '),
          });
          expect(await files()).toEqual(listed);
          expect((await tableOf('frozen')).metadataLocation).toBe(before.metadataLocation);
        },
        TIMEOUT_MS,
      );

      it(
        'two runs adding the same column at once: the one whose commit is refused finds team with its id and lands without a second schema',
        async () => {
          await run('raced', { columns: COLUMNS, rows: [rowsOf(0, 2)], mode: 'append', runId: 'seed' });
          const theirs = withTeam(rowsOf(50, 2), 50);
          let intruded = false;
          // Before the contender's commit reaches the catalog, another run adding team commits: the catalog refuses the contender's.
          const contended: IcebergCatalog = {
            description: under.catalog.description,
            namespaceExists: (namespace) => under.catalog.namespaceExists(namespace),
            loadTable: (table) => under.catalog.loadTable(table),
            createTable: (table, schema, options) => under.catalog.createTable(table, schema, options),
            commitSnapshot: async (table, base, snapshot, housekeeping) => {
              if (!intruded) {
                intruded = true;
                await run('raced', { columns: WITH_TEAM, rows: [theirs], mode: 'append', runId: 'intruder', schema: 'add' });
              }
              return under.catalog.commitSnapshot(table, base, snapshot, housekeeping);
            },
            close: () => under.catalog.close(),
          };
          const ours = withTeam(rowsOf(60, 3), 60);
          const result = await run('raced', { columns: WITH_TEAM, rows: [ours], mode: 'append', runId: 'contender', schema: 'add' }, contended);
          expect(result).toMatchObject({ committed: true, tries: 2 });
          expect(result.addedColumns).toBeUndefined();
          const table = await tableOf('raced');
          expect(table.metadata.schemas).toHaveLength(2);
          expect(table.metadata.snapshots.map((snapshot) => [snapshot.summary['tilehouse.run-id'], snapshot['schema-id']])).toEqual([
            ['seed', 0],
            ['intruder', 1],
            ['contender', 1],
          ]);
          expect(table.rows.filter((line) => line.endsWith('null]'))).toHaveLength(2);
          expect(table.rows.filter((line) => line.includes('"team 6'))).toHaveLength(3);
        },
        TIMEOUT_MS,
      );
    });
  }
});
