import { readdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import type { IcebergCatalog, LoadedTable, NewSnapshot, TableIdentifier } from '../../../src/sinks/iceberg/catalog.js';
import { writeIcebergRun } from '../../../src/sinks/iceberg/table-writer.js';
import { icebergTypeOf } from '../../../src/sinks/iceberg/iceberg-schema.js';
import type { TypedRow } from '../../../src/transform/column.js';
import { readIceberg } from '../../support/iceberg-readers.js';
import { asText, COLUMNS, readBoth, rowsOf, sortedLines } from './iceberg-test-rows.js';
import type { WriterContext } from './writer-scenarios.js';

/**
 * The table writer's `partition` and `merge` modes, run against each catalog (as writer-scenarios.ts
 * runs replace and append): pyiceberg and DuckDB read back exactly the rows expected after a first
 * run, a second run over some days or keys, a re-run of a run id, a concurrent writer.
 */
const READS_TIMEOUT_MS = 360_000;
const DAY = COLUMNS.findIndex((column) => column.name === 'day');
const TITLE = COLUMNS.findIndex((column) => column.name === 'title');
const NAMES = COLUMNS.map((column) => column.name);
const LINEAGE_NAMES = [...NAMES, '_run_id', '_extracted_at'];

/** `count` rows from `first` (rowsOf's values) on one day. */
function onDay(first: number, count: number, day: string): TypedRow[] {
  return rowsOf(first, count).map((row) => row.map((value, index) => (index === DAY ? day : value)));
}

/** Rows rowsOf gives for these indexes, their title changed to say which run wrote them. */
function keyed(indexes: readonly number[], title: string): TypedRow[] {
  return indexes.map((index) => rowsOf(index, 1)[0]!.map((value, column) => (column === TITLE ? `${title} ${index}` : value)));
}

const withLineage = (rows: readonly TypedRow[], runId: string, extractedAtMs: number) =>
  rows.map((row) => [...asText(row), runId, String(BigInt(extractedAtMs) * 1000n)]);

export function writerModeScenarios(python: string, context: () => WriterContext): void {
  const where = (table: string) => {
    const { pyCatalog, catalogName } = context();
    return { catalog: pyCatalog, table, ...(catalogName === undefined ? {} : { catalogName }) };
  };
  const expectRows = async (table: string, expected: (string | null)[][], columns: string[]) => {
    const { pyiceberg, duckdb } = await readBoth(python, where(table));
    expect(pyiceberg.columns).toEqual(columns);
    expect(duckdb.columns).toEqual(columns);
    expect(sortedLines(pyiceberg.rows)).toEqual(sortedLines(expected));
    expect(sortedLines(duckdb.rows)).toEqual(sortedLines(expected));
  };
  /** Every file under the table's data/ and metadata/ (recursively): a refused run must leave none. */
  const filesOf = async (table: string) => {
    const { location } = await readIceberg(python, 'pyiceberg-table', where(table));
    const directory = fileURLToPath(new URL(location));
    return (await readdir(directory, { recursive: true })).filter((name) => name.endsWith('.parquet') || name.endsWith('.avro')).sort();
  };

  it(
    'partition: a run replaces exactly the days it has rows for, a window every day in it; pyiceberg sees day(day), DuckDB reads it',
    async () => {
      const { catalog } = context();
      const table = { namespace: 'tiles', name: 'by_day' };
      const partition = { column: 'day' };
      const a = onDay(0, 3, '2024-03-01');
      const b = onDay(3, 2, '2024-03-02');
      const c = onDay(5, 2, '2024-03-03');
      const one = await writeIcebergRun({
        catalog,
        table,
        columns: COLUMNS,
        rows: [
          [...a, b[0]!],
          [b[1]!, ...c],
        ],
        mode: 'partition',
        partition,
        runId: 'p-1',
      });
      expect(one).toMatchObject({ committed: true, rows: 7, tries: 1 });
      await expectRows('tiles.by_day', [...a, ...b, ...c].map(asText), NAMES);

      const d = onDay(20, 4, '2024-03-02');
      const e = onDay(30, 1, '2024-03-04');
      const two = await writeIcebergRun({ catalog, table, columns: COLUMNS, rows: [[...d, ...e]], mode: 'partition', partition, runId: 'p-2' });
      expect(two).toMatchObject({ committed: true, rows: 5 });
      await expectRows('tiles.by_day', [...a, ...c, ...d, ...e].map(asText), NAMES);

      const again = await writeIcebergRun({ catalog, table, columns: COLUMNS, rows: [onDay(40, 2, '2024-03-01')], mode: 'partition', partition, runId: 'p-2' });
      expect(again).toMatchObject({ committed: false, snapshotId: two.snapshotId, rows: 0 });
      await expectRows('tiles.by_day', [...a, ...c, ...d, ...e].map(asText), NAMES);

      // The window 03-01..03-03 replaces 03-01 (no rows in this run) and 03-02; 03-03 and 03-04 stay.
      const f = onDay(50, 2, '2024-03-02');
      const windowed = { column: 'day', window: { from: '2024-03-01', to: '2024-03-03' } };
      await writeIcebergRun({ catalog, table, columns: COLUMNS, rows: [f], mode: 'partition', partition: windowed, runId: 'p-3' });
      await expectRows('tiles.by_day', [...c, ...e, ...f].map(asText), NAMES);
      const filtered = await readIceberg(python, 'pyiceberg-scan', { ...where('tiles.by_day'), filter: "day = '2024-03-03'" });
      expect(sortedLines(filtered.rows)).toEqual(sortedLines(c.map(asText)));

      const history = await readIceberg(python, 'pyiceberg-table', where('tiles.by_day'));
      expect(history.partitionSpec).toEqual([{ sourceId: 5, fieldId: 1000, name: 'day_day', transform: 'day' }]);
      expect(history.snapshots.map((s) => [s.operation, s.summary['tilehouse.run-id'], s.summary['deleted-data-files'], s.summary['total-records']])).toEqual([
        ['overwrite', 'p-1', '0', '7'],
        ['overwrite', 'p-2', '1', '10'],
        ['overwrite', 'p-3', '2', '5'],
      ]);
    },
    READS_TIMEOUT_MS,
  );

  it(
    'partition: a null day is refused naming the column, as is another mode on the partitioned table; nothing is committed or left behind',
    async () => {
      const { catalog } = context();
      const table = { namespace: 'tiles', name: 'null_day' };
      const partition = { column: 'day' };
      await writeIcebergRun({ catalog, table, columns: COLUMNS, rows: [onDay(0, 2, '2024-03-01')], mode: 'partition', partition, runId: 'n-1' });
      const before = await filesOf('tiles.null_day');
      const rows = [...onDay(10, 2, '2024-03-05'), ...onDay(12, 1, '2024-03-06').map((row) => row.map((value, index) => (index === DAY ? null : value)))];
      const failure = await writeIcebergRun({
        catalog,
        table,
        columns: COLUMNS,
        rows: [rows.slice(0, 2), rows.slice(2)],
        mode: 'partition',
        partition,
        runId: 'n-2',
      }).catch((error: unknown) => error);
      expect(failure).toMatchObject({ code: 'iceberg_value_invalid', message: expect.stringMatching(/^column day: value null has no day/) });
      // The other modes would write unpartitioned manifests into it: refused before any file.
      for (const mode of ['replace', 'append', 'merge'] as const) {
        const refused = await writeIcebergRun({ catalog, table, columns: COLUMNS, rows: [rowsOf(0, 1)], mode, mergeKey: ['id'], runId: `other-${mode}` }).catch(
          (error: unknown) => error,
        );
        expect(refused).toMatchObject({
          code: 'iceberg_partition_mismatch',
          message: expect.stringContaining(`partitioned by day(day); writeMode ${mode} writes only an unpartitioned table`),
        });
      }
      expect(await filesOf('tiles.null_day')).toEqual(before);
      const history = await readIceberg(python, 'pyiceberg-table', where('tiles.null_day'));
      expect(history.snapshots.map((s) => s.summary['tilehouse.run-id'])).toEqual(['n-1']);
    },
    READS_TIMEOUT_MS,
  );

  it(
    'partition: a writer that commits first is kept where the run does not cover its days and replaced where it does',
    async () => {
      const { catalog } = context();
      const table = { namespace: 'tiles', name: 'by_day_contended' };
      const partition = { column: 'day' };
      const base = [...onDay(0, 2, '2024-03-01'), ...onDay(2, 2, '2024-03-04')];
      await writeIcebergRun({ catalog, table, columns: COLUMNS, rows: [base], mode: 'partition', partition, runId: 'base' });
      const x = onDay(60, 2, '2024-03-04');
      const y = onDay(62, 3, '2024-03-06');
      let intruded = 0;
      const contended = withCommit(catalog, async (ident, loaded, snapshot) => {
        if (intruded++ === 0)
          await writeIcebergRun({ catalog, table, columns: COLUMNS, rows: [[...x, ...y]], mode: 'partition', partition, runId: 'intruder' });
        return catalog.commitSnapshot(ident, loaded, snapshot);
      });
      const z = onDay(70, 1, '2024-03-04');
      const result = await writeIcebergRun({ catalog: contended, table, columns: COLUMNS, rows: [z], mode: 'partition', partition, runId: 'contender' });
      expect(result).toMatchObject({ committed: true, tries: 2 });
      await expectRows('tiles.by_day_contended', [...base.slice(0, 2), ...y, ...z].map(asText), NAMES);
      const history = await readIceberg(python, 'pyiceberg-table', where('tiles.by_day_contended'));
      expect(history.snapshots.map((s) => s.summary['tilehouse.run-id'])).toEqual(['base', 'intruder', 'contender']);
    },
    READS_TIMEOUT_MS,
  );

  it(
    'partition on a TIMESTAMP column: days are UTC days of the instant',
    async () => {
      const { catalog } = context();
      const table = { namespace: 'tiles', name: 'by_instant' };
      const partition = { column: 'created' };
      const created = COLUMNS.findIndex((column) => column.name === 'created');
      const at = (rows: TypedRow[], ms: number) => rows.map((row, offset) => row.map((value, index) => (index === created ? ms + offset : value)));
      const lateOn1st = at(rowsOf(0, 2), Date.UTC(2024, 2, 1, 23, 59, 59));
      const on2nd = at(rowsOf(2, 2), Date.UTC(2024, 2, 2, 0, 0, 0));
      await writeIcebergRun({ catalog, table, columns: COLUMNS, rows: [[...lateOn1st, ...on2nd]], mode: 'partition', partition, runId: 't-1' });
      const newOn2nd = at(rowsOf(9, 1), Date.UTC(2024, 2, 2, 12));
      await writeIcebergRun({ catalog, table, columns: COLUMNS, rows: [newOn2nd], mode: 'partition', partition, runId: 't-2' });
      await expectRows('tiles.by_instant', [...lateOn1st, ...newOn2nd].map(asText), NAMES);
      const { partitionSpec } = await readIceberg(python, 'pyiceberg-table', where('tiles.by_instant'));
      expect(partitionSpec).toEqual([{ sourceId: 4, fieldId: 1000, name: 'created_day', transform: 'day' }]);
    },
    READS_TIMEOUT_MS,
  );

  it(
    'merge: keys in the run replace their rows (copy-on-write), new keys are inserted, other keys kept; a re-run commits nothing',
    async () => {
      const { catalog } = context();
      const table = { namespace: 'tiles', name: 'merged' };
      const mergeKey = ['id'];
      const first = keyed([0, 1, 2, 3, 4, 5], 'm-1');
      const one = await writeIcebergRun({
        catalog,
        table,
        columns: COLUMNS,
        rows: [first.slice(0, 3), first.slice(3)],
        mode: 'merge',
        mergeKey,
        runId: 'm-1',
        extractedAtMs: 1_700_000_000_000,
      });
      expect(one).toMatchObject({ committed: true, rows: 6 });
      await expectRows('tiles.merged', withLineage(first, 'm-1', 1_700_000_000_000), LINEAGE_NAMES);

      const second = keyed([2, 3, 10, 11], 'm-2');
      const two = await writeIcebergRun({
        catalog,
        table,
        columns: COLUMNS,
        rows: [second],
        mode: 'merge',
        mergeKey,
        runId: 'm-2',
        extractedAtMs: 1_700_000_100_000,
      });
      expect(two).toMatchObject({ committed: true, rows: 4 });
      const expected = [...withLineage(keyed([0, 1, 4, 5], 'm-1'), 'm-1', 1_700_000_000_000), ...withLineage(second, 'm-2', 1_700_000_100_000)];
      await expectRows('tiles.merged', expected, LINEAGE_NAMES);

      const again = await writeIcebergRun({ catalog, table, columns: COLUMNS, rows: [keyed([0], 'again')], mode: 'merge', mergeKey, runId: 'm-2' });
      expect(again).toMatchObject({ committed: false, snapshotId: two.snapshotId, rows: 0 });
      await expectRows('tiles.merged', expected, LINEAGE_NAMES);

      const history = await readIceberg(python, 'pyiceberg-table', where('tiles.merged'));
      expect(history.snapshots.map((s) => [s.operation, s.summary['tilehouse.run-id'], s.summary['deleted-data-files'], s.summary['total-records']])).toEqual([
        ['overwrite', 'm-1', '0', '6'],
        ['overwrite', 'm-2', '1', '8'],
      ]);
      expect(history.partitionSpec).toEqual([]);
    },
    READS_TIMEOUT_MS,
  );

  it(
    "merge: a writer that commits first is re-read; the run's keys are recomputed on it, no row lost or doubled",
    async () => {
      const { catalog } = context();
      const table = { namespace: 'tiles', name: 'merged_contended' };
      const mergeKey = ['id'];
      await writeIcebergRun({
        catalog,
        table,
        columns: COLUMNS,
        rows: [keyed([0, 1, 2, 3], 'base')],
        mode: 'merge',
        mergeKey,
        runId: 'base',
        extractedAtMs: 1_000,
      });
      let intruded = 0;
      const contended = withCommit(catalog, async (ident, loaded, snapshot) => {
        if (intruded++ === 0)
          await writeIcebergRun({
            catalog,
            table,
            columns: COLUMNS,
            rows: [keyed([1, 3, 20], 'intruder')],
            mode: 'merge',
            mergeKey,
            runId: 'intruder',
            extractedAtMs: 2_000,
          });
        return catalog.commitSnapshot(ident, loaded, snapshot);
      });
      const result = await writeIcebergRun({
        catalog: contended,
        table,
        columns: COLUMNS,
        rows: [keyed([0, 3, 21], 'contender')],
        mode: 'merge',
        mergeKey,
        runId: 'contender',
        extractedAtMs: 3_000,
      });
      expect(result).toMatchObject({ committed: true, tries: 2 });
      await expectRows(
        'tiles.merged_contended',
        [
          ...withLineage(keyed([2], 'base'), 'base', 1_000),
          ...withLineage(keyed([1, 20], 'intruder'), 'intruder', 2_000),
          ...withLineage(keyed([0, 3, 21], 'contender'), 'contender', 3_000),
        ],
        LINEAGE_NAMES,
      );
    },
    READS_TIMEOUT_MS,
  );

  it(
    "merge onto a table pyiceberg created and wrote: its Parquet files (pyarrow's dictionary pages, zstd) are read back and rewritten",
    async () => {
      const { catalog } = context();
      const fields = [
        ...COLUMNS.map((column) => ({ name: column.name, type: icebergTypeOf(column.type) })),
        { name: '_run_id', type: 'string' },
        { name: '_extracted_at', type: 'timestamptz' },
      ];
      // Repeated titles and days make pyarrow write dictionary pages.
      const theirs = keyed([0, 1, 2, 3, 4, 5, 6, 7], 'pyiceberg');
      await readIceberg(python, 'pyiceberg-write', { ...where('tiles.foreign_merge'), fields, rows: withLineage(theirs, 'pyiceberg', 1_600_000_000_000) });
      const ours = keyed([1, 5, 40], 'ours');
      const run = await writeIcebergRun({
        catalog,
        table: { namespace: 'tiles', name: 'foreign_merge' },
        columns: COLUMNS,
        rows: [ours],
        mode: 'merge',
        mergeKey: ['id'],
        runId: 'ours',
        extractedAtMs: 1_700_000_000_000,
      });
      expect(run.committed).toBe(true);
      await expectRows(
        'tiles.foreign_merge',
        [...withLineage(keyed([0, 2, 3, 4, 6, 7], 'pyiceberg'), 'pyiceberg', 1_600_000_000_000), ...withLineage(ours, 'ours', 1_700_000_000_000)],
        LINEAGE_NAMES,
      );
    },
    READS_TIMEOUT_MS,
  );

  it(
    'merge: a duplicate key and a null key are refused naming the key and value; nothing committed, no file left',
    async () => {
      const { catalog } = context();
      const table = { namespace: 'tiles', name: 'merged_refused' };
      const mergeKey = ['id', 'day'];
      await writeIcebergRun({ catalog, table, columns: COLUMNS, rows: [keyed([0, 1], 'base')], mode: 'merge', mergeKey, runId: 'base' });
      const before = await filesOf('tiles.merged_refused');
      const twice = [...keyed([1, 2], 'dup'), ...keyed([2], 'dup again')];
      const duplicate = await writeIcebergRun({
        catalog,
        table,
        columns: COLUMNS,
        rows: [twice.slice(0, 2), twice.slice(2)],
        mode: 'merge',
        mergeKey,
        runId: 'dup',
      }).catch((error: unknown) => error);
      expect(duplicate).toMatchObject({
        code: 'iceberg_duplicate_key',
        message:
          'Iceberg table tiles.merged_refused: rows of this run share the primary key (id, day) = (9007199254740995, 2024-02-29); set latestBy to the column whose highest value wins, or fix the source; nothing was committed',
      });
      const nullKey = keyed([3], 'null').map((row) => row.map((value, index) => (index === DAY ? null : value)));
      const refused = await writeIcebergRun({
        catalog,
        table,
        columns: COLUMNS,
        rows: [keyed([4], 'ok'), nullKey],
        mode: 'merge',
        mergeKey,
        runId: 'null',
      }).catch((error: unknown) => error);
      expect(refused).toMatchObject({ code: 'iceberg_null_key', message: expect.stringContaining('a row has a null in primary key column day') });
      expect(await filesOf('tiles.merged_refused')).toEqual(before);
      const history = await readIceberg(python, 'pyiceberg-table', where('tiles.merged_refused'));
      expect(history.snapshots.map((s) => s.summary['tilehouse.run-id'])).toEqual(['base']);
    },
    READS_TIMEOUT_MS,
  );

  it(
    "merge with latestBy: of a run's rows sharing a key the highest value wins (by value, any value above null); a tie, nulls too, refuses the run",
    async () => {
      const { catalog } = context();
      const table = { namespace: 'tiles', name: 'merged_latest' };
      const options = { catalog, table, columns: COLUMNS, mode: 'merge' as const, mergeKey: ['id'], latestBy: 'amount' };
      const AMOUNT = COLUMNS.findIndex((column) => column.name === 'amount');
      const row = (index: number, amount: string | null, title: string) =>
        keyed([index], title)[0]!.map((value, column) => (column === AMOUNT ? amount : value));
      const base = keyed([0, 1, 2], 'base');
      await writeIcebergRun({ ...options, rows: [base], runId: 'lb-1', extractedAtMs: 1_700_000_000_000 });

      // 10 beats 9 (not as text); -5 beats null; a key whose one row has a null stays; -1.25 beats -1.5 that comes after it.
      const run = [row(0, '9', 'nine'), row(1, null, 'null first'), row(6, '-1.25', 'wins'), row(0, '10', 'ten'), row(1, '-5', 'minus five')];
      const later = [row(5, null, 'alone'), row(6, '-1.5', 'loses')];
      const two = await writeIcebergRun({ ...options, rows: [run, later], runId: 'lb-2', extractedAtMs: 1_700_000_100_000 });
      expect(two).toMatchObject({ committed: true, rows: 4 });
      const winners = [row(0, '10', 'ten'), row(1, '-5', 'minus five'), row(5, null, 'alone'), row(6, '-1.25', 'wins')];
      const expected = [...withLineage(base.slice(2), 'lb-1', 1_700_000_000_000), ...withLineage(winners, 'lb-2', 1_700_000_100_000)];
      await expectRows('tiles.merged_latest', expected, LINEAGE_NAMES);

      const before = await filesOf('tiles.merged_latest');
      // The same value twice (1.0 and 1.00), two nulls, or a tie below the highest (5, 5, 7): as PostgreSQL's GROUP BY (key, latestBy) and BigQuery's refuse them.
      const ties = [
        [row(7, '1.0', 'a'), row(7, '1.00', 'b')],
        [row(8, null, 'a'), row(3, '1', 'other key'), row(8, null, 'b')],
        [row(9, '5', 'a'), row(9, '7', 'b'), row(9, '5', 'c')],
      ];
      for (const [index, rows] of ties.entries()) {
        const refused = await writeIcebergRun({ ...options, rows: [rows], runId: `tie-${index}` }).catch((error: unknown) => error);
        expect(refused).toMatchObject({
          code: 'iceberg_duplicate_key',
          message: expect.stringContaining('they also have the same amount, so latestBy cannot choose one'),
        });
      }
      expect(await filesOf('tiles.merged_latest')).toEqual(before);
      await expectRows('tiles.merged_latest', expected, LINEAGE_NAMES);
    },
    READS_TIMEOUT_MS,
  );
}

/** `catalog` with its commit replaced (a catalog is a class: its methods are not spread). */
function withCommit(
  catalog: IcebergCatalog,
  commitSnapshot: (table: TableIdentifier, base: LoadedTable, snapshot: NewSnapshot) => Promise<LoadedTable>,
): IcebergCatalog {
  return {
    description: catalog.description,
    loadTable: (table) => catalog.loadTable(table),
    createTable: (table, schema, options) => catalog.createTable(table, schema, options),
    namespaceExists: (namespace) => catalog.namespaceExists(namespace),
    commitSnapshot,
    close: () => catalog.close(),
  };
}
