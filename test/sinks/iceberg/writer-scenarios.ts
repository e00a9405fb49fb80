import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import type { IcebergCatalog, LoadedTable, NewSnapshot, TableIdentifier } from '../../../src/sinks/iceberg/catalog.js';
import { icebergTypeOf } from '../../../src/sinks/iceberg/iceberg-schema.js';
import { writeIcebergRun } from '../../../src/sinks/iceberg/table-writer.js';
import { readIceberg } from '../../support/iceberg-readers.js';
import { asText, COLUMNS, readBoth, rowsOf, sortedLines } from './iceberg-test-rows.js';

/**
 * The table writer's scenarios, run against each catalog (as Kysely runs a feature over every
 * dialect): `context()` gives the catalog under test and how pyiceberg reaches the same tables.
 */
export interface WriterContext {
  catalog: IcebergCatalog;
  /** pyiceberg's properties for the same catalog, and its name (a SQL catalog's catalog_name). */
  pyCatalog: Record<string, string>;
  catalogName?: string;
}

// Each reading starts Python (pyiceberg, DuckDB): seconds apiece on a loaded machine.
const READS_TIMEOUT_MS = 240_000;

export function writerScenarios(python: string, context: () => WriterContext): void {
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

  it(
    'replace: each run is the whole table, read back exactly by pyiceberg and DuckDB; a re-run of a run id commits nothing',
    async () => {
      const { catalog } = context();
      const table = { namespace: 'tiles', name: 'replaced' };
      const first = rowsOf(0, 40);
      const one = await writeIcebergRun({ catalog, table, columns: COLUMNS, rows: [first.slice(0, 25), first.slice(25)], mode: 'replace', runId: 'run-1' });
      expect(one).toMatchObject({ committed: true, rows: 40, tries: 1 });
      await expectRows(
        'tiles.replaced',
        first.map(asText),
        COLUMNS.map((c) => c.name),
      );

      const second = rowsOf(100, 7);
      const two = await writeIcebergRun({ catalog, table, columns: COLUMNS, rows: [second], mode: 'replace', runId: 'run-2' });
      expect(two.committed).toBe(true);
      await expectRows(
        'tiles.replaced',
        second.map(asText),
        COLUMNS.map((c) => c.name),
      );

      const again = await writeIcebergRun({ catalog, table, columns: COLUMNS, rows: [rowsOf(500, 3)], mode: 'replace', runId: 'run-2' });
      expect(again).toMatchObject({ committed: false, snapshotId: two.snapshotId, rows: 0 });
      await expectRows(
        'tiles.replaced',
        second.map(asText),
        COLUMNS.map((c) => c.name),
      );

      const history = await readIceberg(python, 'pyiceberg-table', where('tiles.replaced'));
      expect(history.formatVersion).toBe(2);
      expect(history.snapshots.map((s) => [s.id, s.parent, s.operation, s.summary['tilehouse.run-id']])).toEqual([
        [one.snapshotId.toString(), null, 'overwrite', 'run-1'],
        [two.snapshotId.toString(), one.snapshotId.toString(), 'overwrite', 'run-2'],
      ]);
      expect(history.currentSnapshotId).toBe(two.snapshotId.toString());
      expect(history.fields).toEqual([
        { id: 1, name: 'id', type: 'long', required: false },
        { id: 2, name: 'amount', type: 'decimal(38, 9)', required: false },
        { id: 3, name: 'title', type: 'string', required: false },
        { id: 4, name: 'created', type: 'timestamptz', required: false },
        { id: 5, name: 'day', type: 'date', required: false },
        { id: 6, name: 'score', type: 'double', required: false },
      ]);
    },
    READS_TIMEOUT_MS,
  );

  it(
    'append: runs accumulate with their lineage columns; the snapshot chain is the ledger',
    async () => {
      const { catalog } = context();
      const table = { namespace: 'tiles', name: 'appended' };
      const a = rowsOf(0, 9);
      const b = rowsOf(9, 4);
      await writeIcebergRun({ catalog, table, columns: COLUMNS, rows: [a], mode: 'append', runId: 'a-1', extractedAtMs: 1_700_000_000_123 });
      await writeIcebergRun({ catalog, table, columns: COLUMNS, rows: [b], mode: 'append', runId: 'a-2', extractedAtMs: 1_700_000_100_000 });
      expect((await writeIcebergRun({ catalog, table, columns: COLUMNS, rows: [b], mode: 'append', runId: 'a-1' })).committed).toBe(false);
      const expected = [...a.map((row) => [...asText(row), 'a-1', '1700000000123000']), ...b.map((row) => [...asText(row), 'a-2', '1700000100000000'])];
      await expectRows('tiles.appended', expected, [...COLUMNS.map((c) => c.name), '_run_id', '_extracted_at']);
    },
    READS_TIMEOUT_MS,
  );

  it(
    'a commit refused because another writer landed first is re-read, re-applied and lands on top of it',
    async () => {
      const { catalog } = context();
      const table = { namespace: 'tiles', name: 'contended' };
      await writeIcebergRun({ catalog, table, columns: COLUMNS, rows: [rowsOf(0, 2)], mode: 'append', runId: 'base' });
      let intruded = 0;
      // Before the first commit reaches the catalog, another writer commits: the catalog then
      // refuses the first (REST: 409, its assert-ref-snapshot-id no longer holds; JDBC: the
      // UPDATE's previous metadata location matches no row).
      const contended = withCommit(catalog, async (ident: TableIdentifier, base: LoadedTable, snapshot: NewSnapshot) => {
        if (intruded++ === 0) await writeIcebergRun({ catalog, table, columns: COLUMNS, rows: [rowsOf(50, 3)], mode: 'append', runId: 'intruder' });
        return catalog.commitSnapshot(ident, base, snapshot);
      });
      const result = await writeIcebergRun({ catalog: contended, table, columns: COLUMNS, rows: [rowsOf(10, 5)], mode: 'append', runId: 'contender' });
      expect(result).toMatchObject({ committed: true, tries: 2 });
      const history = await readIceberg(python, 'pyiceberg-table', where('tiles.contended'));
      expect(history.snapshots.map((s) => s.summary['tilehouse.run-id'])).toEqual(['base', 'intruder', 'contender']);
      const { pyiceberg, duckdb } = await readBoth(python, where('tiles.contended'));
      expect(pyiceberg.rows.map((row) => row[6]).sort()).toEqual([...Array(2).fill('base'), ...Array(5).fill('contender'), ...Array(3).fill('intruder')]);
      expect(sortedLines(duckdb.rows)).toEqual(sortedLines(pyiceberg.rows));
    },
    READS_TIMEOUT_MS,
  );

  it(
    'writers at once all land, in some order, each snapshot once',
    async () => {
      const { catalog } = context();
      const table = { namespace: 'tiles', name: 'concurrent' };
      await writeIcebergRun({ catalog, table, columns: COLUMNS, rows: [rowsOf(0, 1)], mode: 'append', runId: 'seed' });
      const runs = await Promise.all(
        ['left', 'right', 'third'].map((runId, index) =>
          writeIcebergRun({ catalog, table, columns: COLUMNS, rows: [rowsOf(index * 10, 4)], mode: 'append', runId }),
        ),
      );
      expect(runs.every((run) => run.committed)).toBe(true);
      const history = await readIceberg(python, 'pyiceberg-table', where('tiles.concurrent'));
      expect(history.snapshots.map((s) => s.summary['tilehouse.run-id']).sort()).toEqual(['left', 'right', 'seed', 'third']);
      const { pyiceberg, duckdb } = await readBoth(python, where('tiles.concurrent'));
      expect(pyiceberg.rows).toHaveLength(13);
      expect(sortedLines(duckdb.rows)).toEqual(sortedLines(pyiceberg.rows));
    },
    READS_TIMEOUT_MS,
  );

  it(
    'appends onto a table pyiceberg created and wrote (its manifest list carried, its metadata kept)',
    async () => {
      const { catalog } = context();
      const theirs = rowsOf(0, 5).map((row) => [...asText(row), 'pyiceberg', '1600000000000000']);
      const fields = [
        ...COLUMNS.map((column) => ({ name: column.name, type: icebergTypeOf(column.type) })),
        { name: '_run_id', type: 'string' },
        { name: '_extracted_at', type: 'timestamptz' },
      ];
      const written = await readIceberg(python, 'pyiceberg-write', { ...where('tiles.foreign'), fields, rows: theirs });
      const ours = rowsOf(30, 4);
      const run = await writeIcebergRun({
        catalog,
        table: { namespace: 'tiles', name: 'foreign' },
        columns: COLUMNS,
        rows: [ours],
        mode: 'append',
        runId: 'ours',
        extractedAtMs: 1_700_000_000_000,
      });
      expect(run.committed).toBe(true);
      await expectRows(
        'tiles.foreign',
        [...theirs, ...ours.map((row) => [...asText(row), 'ours', '1700000000000000'])],
        fields.map((field) => field.name),
      );
      const history = await readIceberg(python, 'pyiceberg-table', where('tiles.foreign'));
      expect(history.snapshots.map((s) => [s.id, s.operation])).toEqual([
        [written.snapshotId, 'append'],
        [run.snapshotId.toString(), 'append'],
      ]);
    },
    READS_TIMEOUT_MS,
  );

  it(
    "a run out of commit tries fails with iceberg_commit_conflict and leaves none of its files; the table is the other writer's",
    async () => {
      const { catalog } = context();
      const table = { namespace: 'tiles', name: 'budget' };
      await writeIcebergRun({ catalog, table, columns: COLUMNS, rows: [rowsOf(0, 2)], mode: 'replace', runId: 'first' });
      const { location } = await readIceberg(python, 'pyiceberg-table', where('tiles.budget'));
      const directory = fileURLToPath(new URL(location));
      const files = async (folder: string) => (await readdir(join(directory, folder)).catch(() => [])).sort();
      const before = { data: await files('data'), metadata: (await files('metadata')).filter((name) => name.endsWith('.avro')) };
      let winners = 0;
      const contended = withCommit(catalog, async (ident: TableIdentifier, base: LoadedTable, snapshot: NewSnapshot) => {
        await writeIcebergRun({ catalog, table, columns: COLUMNS, rows: [rowsOf(70, 3)], mode: 'replace', runId: `winner-${++winners}` });
        return catalog.commitSnapshot(ident, base, snapshot);
      });
      const failure = await writeIcebergRun({
        catalog: contended,
        table,
        columns: COLUMNS,
        rows: [rowsOf(10, 5)],
        mode: 'replace',
        runId: 'loser',
        maxCommitTries: 2,
      }).catch((error: unknown) => error);
      expect(failure).toMatchObject({ code: 'iceberg_commit_conflict', message: expect.stringMatching(/another writer committed first on each of 2 tries/) });
      const after = { data: await files('data'), metadata: (await files('metadata')).filter((name) => name.endsWith('.avro')) };
      // Two winners committed (one a try): two data files, and a manifest and a list each; nothing of the loser's.
      expect(after.data.filter((name) => !before.data.includes(name)).map((name) => name.replace(/-[0-9a-f-]{36}\.parquet$/, ''))).toEqual(
        expect.arrayContaining([expect.stringMatching(/^winner-/), expect.stringMatching(/^winner-/)]),
      );
      expect(after.data.filter((name) => name.startsWith('loser'))).toEqual([]);
      expect(after.data.length - before.data.length).toBe(2);
      expect(after.metadata.length - before.metadata.length).toBe(4);
      const { pyiceberg } = await readBoth(python, where('tiles.budget'));
      expect(sortedLines(pyiceberg.rows)).toEqual(sortedLines(rowsOf(70, 3).map(asText)));
    },
    READS_TIMEOUT_MS,
  );
}

/** `catalog` with its commit replaced (a catalog is a class: its methods are not spread). */
function withCommit(catalog: IcebergCatalog, commitSnapshot: IcebergCatalog['commitSnapshot']): IcebergCatalog {
  return {
    description: catalog.description,
    namespaceExists: (namespace) => catalog.namespaceExists(namespace),
    loadTable: (table) => catalog.loadTable(table),
    createTable: (table, schema, location) => catalog.createTable(table, schema, location),
    commitSnapshot,
    close: () => catalog.close(),
  };
}
