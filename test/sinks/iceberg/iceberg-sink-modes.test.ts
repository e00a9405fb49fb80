// tilehouse run and backfill into Iceberg tables with writeMode partition and merge, beside a local
// CSV of the same run, through each catalog (Apache Iceberg's REST server; the JDBC catalog on the
// suite's PostgreSQL): pyiceberg and DuckDB read back exactly the rows the CSVs say the table holds.
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { SANDBOX_TILE } from '../../../sandbox/index.js';
import { runCli, sandboxEnv, summaryOf, writeWorkspace } from '../../support/cli-harness.js';
import { icebergPythonOrSkip, type PyicebergTable, readIceberg } from '../../support/iceberg-readers.js';
import { icebergRestLibOrSkip, type RunningIcebergRest, startIcebergRest } from '../../support/iceberg-rest-server.js';
import { postgresBlocker, postgresOrSkip, TEST_PASSWORD_VARIABLE, usePostgresDatabase } from '../../support/postgres.js';
import { incidentDaysQuery } from '../../support/queries.js';
import { sandboxAndRootForAll } from '../../support/sandbox-fixture.js';
import { describeUnless, missing } from '../../support/skip.js';
import { readBoth, sortedLines } from './iceberg-test-rows.js';
import { jdbcCatalogSettings, sqlCatalogTable } from '../../support/iceberg-jdbc-catalog.js';

const lib = icebergRestLibOrSkip();
const python = icebergPythonOrSkip();
const server = postgresOrSkip();

/** Number INT64, Day DATE (the incident's creation instant, a UTC day), Description STRING. */
const numberFilter = (operator: 'gt' | 'in', values: string[]) => [{ operator, values }];
const queryOf = (filters: Array<{ operator: string; values: string[] }>) => ({
  items: [
    { header: 'Number', formula: '[incident.number]', dataType: 'number', order: 'asc', orderSequence: 0, filters },
    { header: 'Day', formula: '[incident.created]', dataType: 'datetime', filters: [] },
    { header: 'Description', formula: '[incident.description]', dataType: 'text', filters: [] },
  ],
  options: { pageNumber: 0, itemsPerPage: 1000, ignoreRepeatedRows: false },
});
const COLUMN_TYPES = { Number: { type: 'INT64' }, Day: { type: 'DATE' } };
const TOKEN_VARIABLE = 'TILEHOUSE_TEST_ICEBERG_TOKEN';
const TOKEN = 'tok-5a1e-modes-never-printed';
const READS_TIMEOUT_MS = 600_000;
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, index) => String(from + index));

/** A CSV's rows as the readers give them back (every column here is text to both: long, date, string). */
function csvRows(csv: string): (string | null)[][] {
  return parseCsv(csv, { cast: (value, context) => (value === '' && !context.quoting ? null : value), from_line: 2 }) as (string | null)[][];
}

interface CatalogUnderTest {
  name: 'rest' | 'jdbc';
  settings(): Record<string, unknown>;
  reader(table: string): PyicebergTable;
  env(): Record<string, string>;
}

describeUnless(missing('the Iceberg REST catalog server', lib) ?? missing('the Iceberg readers', python) ?? postgresBlocker(server))(
  'tilehouse run and backfill into Iceberg tables, writeMode partition and merge (pyiceberg and DuckDB read back the CSV rows)',
  () => {
    const fixture = sandboxAndRootForAll({ incidents: 4000, now: new Date('2026-07-05T12:00:00Z') });
    const database = usePostgresDatabase(server!);
    let rest: RunningIcebergRest | undefined;
    let warehouse: string;
    beforeAll(async () => {
      warehouse = await mkdtemp(path.join(tmpdir(), 'tilehouse-iceberg-modes-'));
      rest = await startIcebergRest(lib!);
    }, 180_000);
    afterAll(async () => {
      await rest?.stop();
      await rm(warehouse, { recursive: true, force: true });
    });

    const catalogs: CatalogUnderTest[] = [
      {
        name: 'rest',
        settings: () => ({ type: 'rest', uri: rest!.uri, token: `\${${TOKEN_VARIABLE}}` }),
        reader: (table) => ({ catalog: { type: 'rest', uri: rest!.uri }, table }),
        env: () => ({ [TOKEN_VARIABLE]: TOKEN }),
      },
      {
        name: 'jdbc',
        settings: () => jdbcCatalogSettings(server!, database.name, 'tilehouse_modes'),
        reader: (table) => sqlCatalogTable(server!, database.name, 'tilehouse_modes', table),
        env: () => ({ [TEST_PASSWORD_VARIABLE]: server!.password }),
      },
    ];

    /** A workspace of `jobs` whose sinks.iceberg is the catalog's, at its own warehouse directory. */
    async function workspace(catalog: CatalogUnderTest, name: string, jobs: Array<Record<string, unknown>>, source: Record<string, unknown> = {}) {
      const ws = await writeWorkspace(path.join(fixture.root, `${catalog.name}-${name}`), fixture.sandbox, jobs, { concurrency: 1, ...source });
      const environment = parse(await readFile(ws.configFile, 'utf8')) as { sinks: Record<string, unknown> };
      const location = path.join(warehouse, `${catalog.name}-${name}`);
      environment.sinks.iceberg = { catalog: catalog.settings(), location };
      await writeFile(ws.configFile, stringify(environment));
      const env = { ...sandboxEnv(fixture.sandbox), ...catalog.env() };
      for (const [variable, value] of Object.entries(catalog.env())) process.env[variable] = value;
      const cli = (args: string[]) => runCli([...args, '--config', ws.configFile, '--jobs', ws.jobsDir], { env });
      return { ws, cli, location };
    }

    /** Every file under the table's directory (data and metadata): what a refused run must not add to. */
    async function filesUnder(directory: string): Promise<string[]> {
      const entries = await readdir(directory, { recursive: true, withFileTypes: true }).catch(() => []);
      return entries
        .filter((entry) => entry.isFile())
        .map((entry) => path.join(entry.parentPath, entry.name))
        .sort();
    }

    async function expectTable(catalog: CatalogUnderTest, table: string, columns: string[], expected: (string | null)[][]) {
      const { pyiceberg, duckdb } = await readBoth(python!, catalog.reader(table));
      expect(pyiceberg.columns).toEqual(columns);
      expect(duckdb.columns).toEqual(columns);
      expect(sortedLines(pyiceberg.rows)).toEqual(sortedLines(expected));
      expect(sortedLines(duckdb.rows)).toEqual(sortedLines(expected));
    }

    for (const catalog of catalogs) {
      describe(`through the ${catalog.name} catalog`, () => {
        it(
          'partition: the second night replaces the days its rows cover and keeps the others; a re-run of its run id commits nothing',
          async () => {
            const table = `modes_${catalog.name}.by_day`;
            const job = (filters: Array<{ operator: string; values: string[] }>) => ({
              name: `by_day_${catalog.name}`,
              tile: SANDBOX_TILE,
              query: queryOf(filters),
              columns: COLUMN_TYPES,
              sinks: [
                { type: 'csv', path: '{name}-{runId}.csv' },
                { type: 'iceberg', table, writeMode: 'partition', partitionBy: { column: 'Day' } },
              ],
            });
            const { ws, cli } = await workspace(catalog, 'partition', [job([])]);
            const run = async (runId: string) => {
              const result = await cli(['run', '--run-id', runId, '--json']);
              expect(result.exitCode, result.stderr).toBe(0);
              return summaryOf(result.stdout, 'run').tiles[0]!;
            };
            const csvOf = async (runId: string) => csvRows(await readFile(path.join(ws.outDir, `${job([]).name}-${runId}.csv`), 'utf8'));

            const first = await run('night-1');
            expect(first.outputs.find((output) => output.sink === 'iceberg')).toMatchObject({ target: table, rows: 4000 });
            const firstRows = await csvOf('night-1');
            await expectTable(catalog, table, ['number', 'day', 'description'], firstRows);

            // The second night exports the later incidents only: the earlier days are not its to replace.
            await writeFile(path.join(ws.jobsDir, `${job([]).name}.yaml`), stringify(job(numberFilter('gt', ['2500']))));
            await run('night-2');
            await run('night-2');
            const secondRows = await csvOf('night-2');
            const covered = new Set(secondRows.map((row) => row[1]));
            const kept = firstRows.filter((row) => !covered.has(row[1]));
            const dropped = firstRows.filter((row) => covered.has(row[1]) && Number(row[0]) <= 2500);
            expect(kept.length).toBeGreaterThan(1000);
            // Rows of a covered day the second night did not export (the day's first incidents) go with their day.
            expect(dropped.length).toBeGreaterThan(0);
            await expectTable(catalog, table, ['number', 'day', 'description'], [...kept, ...secondRows]);
            const described = await readIceberg(python!, 'pyiceberg-table', catalog.reader(table));
            expect(described.snapshots.map((snapshot) => [snapshot.operation, snapshot.summary['tilehouse.run-id']])).toEqual([
              ['overwrite', 'night-1'],
              ['overwrite', 'night-2'],
            ]);
            expect(described.snapshots[1]!.summary['tilehouse.started-at']).toMatch(/^\d{4}-\d\d-\d\dT/);
            expect(JSON.parse(described.snapshots[1]!.summary['tilehouse.definition']!)).toMatchObject({ fingerprint: expect.any(String) });
          },
          READS_TIMEOUT_MS,
        );

        it(
          'merge: keys of the second night are updated or inserted, the others kept; a duplicate key refuses the run (exit 1, nothing committed, no file left)',
          async () => {
            const table = `modes_${catalog.name}.by_key`;
            const job = (numbers: string[], primaryKey: string[] = ['Number']) => ({
              name: `by_key_${catalog.name}`,
              tile: SANDBOX_TILE,
              query: queryOf(numberFilter('in', numbers)),
              columns: COLUMN_TYPES,
              sinks: [
                { type: 'csv', path: '{name}-{runId}.csv' },
                { type: 'iceberg', table, writeMode: 'merge', primaryKey },
              ],
            });
            const { ws, cli, location } = await workspace(catalog, 'merge', [job(range(1, 40))]);
            const jobFile = path.join(ws.jobsDir, `${job([]).name}.yaml`);
            const run = async (runId: string) => {
              const result = await cli(['run', '--run-id', runId, '--json']);
              expect(result.exitCode, result.stderr).toBe(0);
              const summary = summaryOf(result.stdout, 'run');
              return { runId, extractedAtMicros: String(BigInt(Date.parse(summary.startedAt)) * 1000n) };
            };
            const csvOf = async (lineage: { runId: string; extractedAtMicros: string }) =>
              csvRows(await readFile(path.join(ws.outDir, `${job([]).name}-${lineage.runId}.csv`), 'utf8')).map((row) => [
                ...row,
                lineage.runId,
                lineage.extractedAtMicros,
              ]);
            const columns = ['number', 'day', 'description', '_run_id', '_extracted_at'];

            const first = await run('night-1');
            const firstRows = await csvOf(first);
            expect(firstRows).toHaveLength(40);
            await expectTable(catalog, table, columns, firstRows);

            // 21..40 updated (the second night's lineage), 41..60 inserted, 1..20 kept as the first night wrote them.
            await writeFile(jobFile, stringify(job(range(21, 60))));
            const second = await run('night-2');
            const secondRows = await csvOf(second);
            expect(secondRows).toHaveLength(40);
            const merged = [...firstRows.filter((row) => Number(row[0]) <= 20), ...secondRows];
            await expectTable(catalog, table, columns, merged);

            // Descriptions repeat among 60 incidents: keyed by Description, the run is refused before its commit.
            const before = await filesUnder(location);
            const snapshotsBefore = (await readIceberg(python!, 'pyiceberg-table', catalog.reader(table))).snapshots.length;
            await writeFile(jobFile, stringify(job(range(1, 60), ['Description'])));
            const refused = await cli(['run', '--run-id', 'night-3', '--json']);
            expect(refused.exitCode).toBe(1);
            const tile = summaryOf(refused.stdout, 'run').tiles[0]!;
            expect(tile).toMatchObject({ status: 'failed', error: { code: 'iceberg_duplicate_key' } });
            expect(refused.stdout + refused.stderr).toMatch(/share the primary key \(description\) = \([^)]+\)/);
            expect((await readIceberg(python!, 'pyiceberg-table', catalog.reader(table))).snapshots).toHaveLength(snapshotsBefore);
            expect(await filesUnder(location)).toEqual(before);
            await expectTable(catalog, table, columns, merged);
          },
          READS_TIMEOUT_MS,
        );

        it(
          'backfill --from --to of 3 days into partition, a failed window, then --resume runs only it; the windows are in the snapshot summaries',
          async () => {
            const table = `modes_${catalog.name}.days`;
            const job = {
              name: `days_${catalog.name}`,
              tile: SANDBOX_TILE,
              query: { ...incidentDaysQuery, options: { pageNumber: 0, itemsPerPage: 5 } },
              columns: { Number: { type: 'INT64' }, Day: { type: 'DATE' } },
              backfill: { item: 'day', bucketColumn: 'Day' },
              sinks: [
                { type: 'csv', path: 'days/{date}.csv', manifest: true },
                { type: 'iceberg', table, writeMode: 'partition', partitionBy: { column: 'Day' } },
              ],
            };
            // Two pages a window (ten incidents a day): a page 1 can differ from its page 0.
            const { ws, cli } = await workspace(catalog, 'backfill', [job], { itemsPerPage: 5 });
            const days = ['2026-07-01', '2026-07-02', '2026-07-03'];
            const backfill = (extra: string[]) => cli(['backfill', '--job', job.name, '--from', days[0]!, '--to', '2026-07-04', '--json', ...extra]);

            // The first window's second page has other headers, also when read again from page 0: that window fails, the others land.
            fixture.sandbox.inject({ kind: 'header-mismatch', pageNumber: 1, times: 2 });
            const failed = await backfill(['--run-id', 'first']);
            fixture.sandbox.clearFaults();
            expect(failed.exitCode, failed.stderr).toBe(1);
            const failedDays = (JSON.parse(failed.stdout) as { failed: Array<{ from: string }> }).failed.map((window) => window.from);
            expect(failedDays).toHaveLength(1);
            const landed = days.filter((day) => !failedDays.includes(day));
            const windowsOf = async () =>
              (await readIceberg(python!, 'pyiceberg-table', catalog.reader(table))).snapshots
                .map((snapshot) => snapshot.summary['tilehouse.window-from'])
                .sort();
            expect(await windowsOf()).toEqual(landed);

            const resumed = await backfill(['--run-id', 'second', '--resume']);
            expect(resumed.exitCode, resumed.stderr).toBe(0);
            const document = JSON.parse(resumed.stdout) as { windows: Array<{ window: { from: string } }>; skipped: Array<{ from: string }> };
            expect(document.windows.map((result) => result.window.from)).toEqual(failedDays);
            expect(document.skipped.map((window) => window.from)).toEqual(landed);
            expect(await windowsOf()).toEqual(days);

            const expected = (await Promise.all(days.map(async (day) => csvRows(await readFile(path.join(ws.outDir, 'days', `${day}.csv`), 'utf8'))))).flat();
            expect(expected.length).toBeGreaterThan(10);
            await expectTable(catalog, table, ['number', 'day', 'severity'], expected);
            const idle = await backfill(['--resume']);
            expect(idle.exitCode, idle.stderr).toBe(0);
            expect((JSON.parse(idle.stdout) as { windows: unknown[] }).windows).toEqual([]);
          },
          READS_TIMEOUT_MS,
        );

        it(
          'an incremental job merges day by day into the table; the next run exports again only what the snapshot summaries do not hold as done',
          async () => {
            const table = `modes_${catalog.name}.daily`;
            const job = {
              name: `daily_${catalog.name}`,
              tile: SANDBOX_TILE,
              query: incidentDaysQuery,
              columns: { Number: { type: 'INT64' }, Day: { type: 'DATE' } },
              incremental: { item: 'day', bucketColumn: 'Day', startFrom: '2026-07-02', lookbackDays: 0 },
              sinks: [
                { type: 'csv', path: 'daily/{date}.csv', manifest: true },
                { type: 'iceberg', table, writeMode: 'merge', primaryKey: ['Number'] },
              ],
            };
            const { ws, cli } = await workspace(catalog, 'incremental', [job]);
            const snapshotsOf = async () =>
              (await readIceberg(python!, 'pyiceberg-table', catalog.reader(table))).snapshots.map((snapshot) => snapshot.summary['tilehouse.window-from']);
            const csvUnion = async () => {
              const files = (await readdir(path.join(ws.outDir, 'daily'))).filter((file) => file.endsWith('.csv')).sort();
              return (await Promise.all(files.map(async (file) => csvRows(await readFile(path.join(ws.outDir, 'daily', file), 'utf8'))))).flat();
            };
            const first = await cli(['run', '--run-id', 'inc-1', '--json']);
            expect(first.exitCode, first.stderr).toBe(0);
            const afterFirst = await snapshotsOf();
            expect(afterFirst.slice(0, 3)).toEqual(['2026-07-02', '2026-07-03', '2026-07-04']);
            const rowsOf = async () => (await readBoth(python!, catalog.reader(table))).pyiceberg.rows.map((row) => row.slice(0, 3));
            expect(sortedLines(await rowsOf())).toEqual(sortedLines(await csvUnion()));

            const second = await cli(['run', '--run-id', 'inc-2', '--json']);
            expect(second.exitCode, second.stderr).toBe(0);
            const afterSecond = await snapshotsOf();
            // The ended days are done: only the day still open when the first run exported it is merged again.
            expect(afterSecond.slice(0, afterFirst.length)).toEqual(afterFirst);
            expect(afterSecond.slice(afterFirst.length).every((day) => day !== undefined && day > '2026-07-04')).toBe(true);
            const { pyiceberg, duckdb } = await readBoth(python!, catalog.reader(table));
            const expected = await csvUnion();
            expect(sortedLines(pyiceberg.rows.map((row) => row.slice(0, 3)))).toEqual(sortedLines(expected));
            expect(sortedLines(duckdb.rows.map((row) => row.slice(0, 3)))).toEqual(sortedLines(expected));
          },
          READS_TIMEOUT_MS,
        );
      });
    }
  },
);
