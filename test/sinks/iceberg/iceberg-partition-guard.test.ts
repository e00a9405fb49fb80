// The publish guard of `writeMode: partition` into an Iceberg table, through `tilehouse run` on each
// catalog (Apache Iceberg's REST server; the JDBC catalog on the suite's PostgreSQL): a run is
// judged on the rows the table holds in exactly the days it replaces, summed from the manifests'
// record counts (no data file read), as BigQuery's and PostgreSQL's partition runs are judged on
// their partitions. A held run commits nothing: pyiceberg and DuckDB read the previous snapshot.
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { SANDBOX_TILE } from '../../../sandbox/index.js';
import { runCli, sandboxEnv, summaryOf, writeWorkspace } from '../../support/cli-harness.js';
import { icebergPythonOrSkip, type PyicebergTable } from '../../support/iceberg-readers.js';
import { icebergRestLibOrSkip, type RunningIcebergRest, startIcebergRest } from '../../support/iceberg-rest-server.js';
import { postgresBlocker, postgresOrSkip, TEST_PASSWORD_VARIABLE, usePostgresDatabase } from '../../support/postgres.js';
import { incidentDaysQuery } from '../../support/queries.js';
import { sandboxAndRootForAll } from '../../support/sandbox-fixture.js';
import { describeUnless, missing } from '../../support/skip.js';
import { startSourceProxy } from '../../support/source-proxy.js';
import { tableState } from './iceberg-cli-support.js';
import { sortedLines } from './iceberg-test-rows.js';
import { jdbcCatalogSettings, sqlCatalogTable } from '../../support/iceberg-jdbc-catalog.js';

const lib = icebergRestLibOrSkip();
const python = icebergPythonOrSkip();
const server = postgresOrSkip();

const INCIDENTS = 4000;
const READS_TIMEOUT_MS = 600_000;
const COLUMN_TYPES = { Number: { type: 'INT64' }, Day: { type: 'DATE' } };
type Filter = { operator: 'gt' | 'in'; values: string[] };

/** Number INT64, Day DATE (the incident's creation instant, a UTC day), Description STRING; the numbers a night exports. */
const queryOf = (filters: Filter[]) => ({
  items: [
    { header: 'Number', formula: '[incident.number]', dataType: 'number', order: 'asc', orderSequence: 0, filters },
    { header: 'Day', formula: '[incident.created]', dataType: 'datetime', filters: [] },
    { header: 'Description', formula: '[incident.description]', dataType: 'text', filters: [] },
  ],
  options: { pageNumber: 0, itemsPerPage: 1000, ignoreRepeatedRows: false },
});

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
  'the publish guard of writeMode partition into Iceberg tables (the days a run replaces, from the manifests)',
  () => {
    const fixture = sandboxAndRootForAll({ incidents: INCIDENTS, now: new Date('2026-07-05T12:00:00Z') });
    const database = usePostgresDatabase(server!);
    let rest: RunningIcebergRest | undefined;
    let warehouse: string;
    beforeAll(async () => {
      warehouse = await mkdtemp(path.join(tmpdir(), 'tilehouse-iceberg-partition-guard-'));
      rest = await startIcebergRest(lib!);
    }, 180_000);
    afterAll(async () => {
      await rest?.stop();
      await rm(warehouse, { recursive: true, force: true });
    });

    const catalogs: CatalogUnderTest[] = [
      {
        name: 'rest',
        settings: () => ({ type: 'rest', uri: rest!.uri }),
        reader: (table) => ({ catalog: { type: 'rest', uri: rest!.uri }, table }),
        env: () => ({}),
      },
      {
        name: 'jdbc',
        settings: () => jdbcCatalogSettings(server!, database.name, 'tilehouse_partition_guard'),
        reader: (table) => sqlCatalogTable(server!, database.name, 'tilehouse_partition_guard', table),
        env: () => ({ [TEST_PASSWORD_VARIABLE]: server!.password }),
      },
    ];

    /** Every file under the table's directory (data and metadata): what a held run must not add to. */
    async function filesUnder(directory: string): Promise<string[]> {
      const entries = await readdir(directory, { recursive: true, withFileTypes: true }).catch(() => []);
      return entries
        .filter((entry) => entry.isFile())
        .map((entry) => path.join(entry.parentPath, entry.name))
        .sort();
    }

    /** A run's first two lines on stderr, its durations left out: the run's count, then the tile's FAIL line with the refusal whole. */
    function refusal(stderr: string): string[] {
      return stderr
        .split('\n')
        .slice(0, 2)
        .map((line) => line.replace(/ in [\d.]+ s$/, ' in … s').replace(/^( {2}FAIL \S+) \([\d.]+ s\)/, '$1 (… s)'));
    }

    for (const catalog of catalogs) {
      describe(`through the ${catalog.name} catalog`, () => {
        it(
          'a run far below what its days hold is held (nothing committed, both readers read the previous snapshot); new days and a same-size day pass; files of another run whose snapshot expired still count',
          async () => {
            const table = `guard_${catalog.name}.by_day`;
            const name = `by_day_${catalog.name}`;
            const job = (filters: Filter[]) => ({
              name,
              tile: SANDBOX_TILE,
              query: queryOf(filters),
              columns: COLUMN_TYPES,
              sinks: [
                { type: 'csv', path: '{name}-{runId}.csv' },
                { type: 'iceberg', table, writeMode: 'partition', partitionBy: { column: 'Day' } },
              ],
            });
            // Every incident's day, from a job of the same columns into a CSV only.
            const census = { ...job([]), name: `census_${catalog.name}`, sinks: [{ type: 'csv', path: '{name}.csv' }] };
            const ws = await writeWorkspace(path.join(fixture.root, catalog.name), fixture.sandbox, [census, job([])], { concurrency: 1 });
            const environment = parse(await readFile(ws.configFile, 'utf8')) as { sinks: Record<string, unknown> };
            const location = path.join(warehouse, catalog.name);
            // Only the newest snapshot is kept: a run's commit expires the one before it (and deletes the files only that one held).
            environment.sinks.iceberg = { catalog: catalog.settings(), location, housekeeping: { keepSnapshots: 1, maxSnapshotAgeDays: 0 } };
            await writeFile(ws.configFile, stringify(environment));
            const env = { ...sandboxEnv(fixture.sandbox), ...catalog.env() };
            // The environment file's references are resolved from this process's environment too.
            for (const [variable, value] of Object.entries(catalog.env())) process.env[variable] = value;
            const cli = (args: string[]) => runCli([...args, '--config', ws.configFile, '--jobs', ws.jobsDir], { env });
            const run = async (runId: string, filters: Filter[]) => {
              await writeFile(path.join(ws.jobsDir, `${name}.yaml`), stringify(job(filters)));
              const result = await cli(['run', '--job', name, '--run-id', runId, '--json']);
              const tile = summaryOf(result.stdout, 'run').tiles[0]!;
              // The table's verdict (the CSV beside it is a new file each run: never held).
              return { result, tile, verdict: tile.guard?.verdicts.find((verdict) => verdict.target === table) };
            };
            const csvOf = async (file: string) => csvRows(await readFile(path.join(ws.outDir, file), 'utf8'));
            const reader = catalog.reader(table);

            const counted = await cli(['run', '--job', census.name, '--json']);
            expect(counted.exitCode, counted.stderr).toBe(0);
            const all = await csvOf(`${census.name}.csv`);
            expect(all).toHaveLength(INCIDENTS);
            const byDay = new Map<string, (string | null)[][]>();
            for (const row of all) byDay.set(row[1]!, [...(byDay.get(row[1]!) ?? []), row]);
            const rowsOf = (days: readonly string[]) => days.flatMap((day) => byDay.get(day)!);
            const numbersOf = (rows: (string | null)[][]) => rows.map((row) => row[0]!);
            const days = [...byDay.keys()].sort();
            // The first three days stay out of the first night; the fullest later days are the ones a small run replaces.
            const oldDays = days.slice(0, 3);
            const [dayA, dayB, dayC] = days.slice(3).sort((a, b) => byDay.get(b)!.length - byDay.get(a)!.length || a.localeCompare(b)) as [
              string,
              string,
              string,
            ];
            const lastOld = Math.max(...rowsOf(oldDays).map((row) => Number(row[0])));
            const newer = all.filter((row) => Number(row[0]) > lastOld);
            // Numbers grow with the creation instant: above the old days' last incident lie exactly the other days.
            expect(newer.every((row) => !oldDays.includes(row[1]!))).toBe(true);
            expect(byDay.get(dayB)!.length).toBeGreaterThanOrEqual(4);

            // Night 1: every day but the old ones.
            const nightOne: Filter[] = [{ operator: 'gt', values: [String(lastOld)] }];
            const first = await run('night-1', nightOne);
            expect(first.result.exitCode, first.result.stderr).toBe(0);
            expect(sortedLines(await csvOf(`${name}-night-1.csv`))).toEqual(sortedLines(newer));
            const afterFirst = await tableState(python!, reader);
            expect(afterFirst.rows).toEqual(sortedLines(newer));
            expect(afterFirst.runIds).toEqual(['night-1']);
            // plan reads page 0 only: which days a run replaces is known from its rows, so plan does not judge it (a run does).
            const plan = await cli(['plan', '--job', name]);
            expect(plan.exitCode, plan.stderr).toBe(0);
            expect(plan.stdout.split('\n')).toContain(
              '    guard: not judged: what it holds could not be read (the days a run replaces are known only from its rows)',
            );

            // Night 2: one incident of each of the two fullest days: far below what those days hold, held, nothing committed.
            const filesBefore = await filesUnder(location);
            const nightTwo: Filter[] = [{ operator: 'in', values: numbersOf([byDay.get(dayA)![0]!, byDay.get(dayB)![0]!]) }];
            const heldTwo = byDay.get(dayA)!.length + byDay.get(dayB)!.length;
            const second = await run('night-2', nightTwo);
            expect(second.result.exitCode).toBe(1);
            expect(second.tile).toMatchObject({ status: 'failed', error: { code: 'publish_guard_tripped' } });
            expect(second.tile.guard?.tripped).toBe(true);
            expect(second.verdict).toMatchObject({ verdict: 'trip', rule: 'shrink', held: heldTwo, exported: 2 });
            expect(refusal(second.result.stderr)).toEqual([
              'run night-2: 0 succeeded, 1 failed in … s',
              `  FAIL ${name} (… s): publish_guard_tripped: the job changed since run night-1: filters on Number: ${JSON.stringify(nightOne)} → ${JSON.stringify(nightTwo)}; ` +
                `the publish guard refused this export, nothing published: ${table}: 2 rows would replace the ${heldTwo} rows it holds ` +
                `(manifest record counts of days ${[dayA, dayB].sort().join(', ')}): ${Math.round((1 - 2 / heldTwo) * 100)}% fewer, more than guard.maxShrink 0.5 allows (rule shrink). ` +
                "If this is meant, run it again with --allow-shrink (or TILEHOUSE_ALLOW_SHRINK=1); to change the rule, set guard.maxShrink on the sink or in the environment's sinks.<kind>.guard (guard: false turns it off)",
            ]);
            expect(await tableState(python!, reader)).toEqual(afterFirst);
            expect(await filesUnder(location)).toEqual(filesBefore);

            // Night 3: the old days (never written: nothing to compare) and every incident of a third day again (as many as it holds): passes.
            const nightThree = [...rowsOf(oldDays), ...byDay.get(dayC)!];
            const third = await run('night-3', [{ operator: 'in', values: numbersOf(nightThree) }]);
            expect(third.result.exitCode, third.result.stderr).toBe(0);
            expect(third.verdict).toMatchObject({ verdict: 'pass', held: byDay.get(dayC)!.length, exported: nightThree.length });
            expect(third.verdict!.reason).toBe(
              `${nightThree.length} rows; holds ${byDay.get(dayC)!.length} rows (manifest record counts of days ${oldDays[0]}..${dayC} (4)); 1 recent run, fewer than 3: no history rule`,
            );
            const afterThird = await tableState(python!, reader);
            expect(afterThird.rows).toEqual(sortedLines(all));
            // Night 1's snapshot expired with night 3's commit: its files of the days it kept are EXISTING entries of the one snapshot left.
            expect(afterThird.runIds).toEqual(['night-3']);

            // Night 4: one incident of a day night 1 wrote and one of a day night 3 wrote: both days' rows counted, held.
            const filesBeforeFourth = await filesUnder(location);
            const heldFour = byDay.get(dayA)!.length + byDay.get(oldDays[0]!)!.length;
            const nightFour: Filter[] = [{ operator: 'in', values: numbersOf([byDay.get(dayA)![0]!, byDay.get(oldDays[0]!)![0]!]) }];
            const fourth = await run('night-4', nightFour);
            expect(fourth.result.exitCode).toBe(1);
            expect(fourth.verdict).toMatchObject({ verdict: 'trip', rule: 'shrink', held: heldFour, exported: 2 });
            // The refusal names night 3, the newest run that wrote those days (night 1's snapshot is gone).
            expect(refusal(fourth.result.stderr)).toEqual([
              'run night-4: 0 succeeded, 1 failed in … s',
              `  FAIL ${name} (… s): publish_guard_tripped: the job changed since run night-3: filters on Number: ` +
                `${JSON.stringify([{ operator: 'in', values: numbersOf(nightThree) }])} → ${JSON.stringify(nightFour)}; ` +
                `the publish guard refused this export, nothing published: ${table}: 2 rows would replace the ${heldFour} rows it holds ` +
                `(manifest record counts of days ${oldDays[0]}, ${dayA}): ${Math.round((1 - 2 / heldFour) * 100)}% fewer, more than guard.maxShrink 0.5 allows (rule shrink). ` +
                "If this is meant, run it again with --allow-shrink (or TILEHOUSE_ALLOW_SHRINK=1); to change the rule, set guard.maxShrink on the sink or in the environment's sinks.<kind>.guard (guard: false turns it off)",
            ]);
            expect(await tableState(python!, reader)).toEqual(afterThird);
            expect(await filesUnder(location)).toEqual(filesBeforeFourth);
          },
          READS_TIMEOUT_MS,
        );

        it(
          'a backfill window is judged on its every day, one it has no rows for too (rule empty); a window as full as its day, and one over a day never written (nothing to compare), pass',
          async () => {
            const table = `guard_${catalog.name}.windows`;
            const name = `windows_${catalog.name}`;
            const job = {
              name,
              tile: SANDBOX_TILE,
              query: { ...incidentDaysQuery, options: { pageNumber: 0, itemsPerPage: 1000 } },
              columns: { Number: { type: 'INT64' }, Day: { type: 'DATE' } },
              backfill: { item: 'day', bucketColumn: 'Day' },
              sinks: [
                // The CSVs are what the table must hold: their own guard is off, so the table's alone decides.
                { type: 'csv', path: 'days/{date}.csv', manifest: true, guard: false },
                { type: 'iceberg', table, writeMode: 'partition', partitionBy: { column: 'Day' } },
              ],
            };
            const proxy = await startSourceProxy(fixture.sandbox.url, {});
            try {
              const root = path.join(fixture.root, `${catalog.name}-windows`);
              const ws = await writeWorkspace(root, fixture.sandbox, [job], { concurrency: 1, baseUrl: proxy.url, authUrl: proxy.url });
              const environment = parse(await readFile(ws.configFile, 'utf8')) as { sinks: Record<string, unknown> };
              const location = path.join(warehouse, `${catalog.name}-windows`);
              environment.sinks.iceberg = { catalog: catalog.settings(), location };
              await writeFile(ws.configFile, stringify(environment));
              const env = { ...sandboxEnv(fixture.sandbox), ...catalog.env() };
              for (const [variable, value] of Object.entries(catalog.env())) process.env[variable] = value;
              const backfill = async (from: string, to: string, runId: string) => {
                const result = await runCli(
                  ['backfill', '--job', name, '--from', from, '--to', to, '--run-id', runId, '--json', '--config', ws.configFile, '--jobs', ws.jobsDir],
                  {
                    env,
                  },
                );
                const summary = summaryOf(result.stdout, 'backfill');
                const windows = summary.windows.map((window) => ({
                  from: window.window.from,
                  code: window.summary.error?.code,
                  verdict: window.summary.guard?.verdicts.find((verdict) => verdict.target === table),
                }));
                return { result, windows };
              };
              const dayRows = async (day: string) => csvRows(await readFile(path.join(ws.outDir, 'days', `${day}.csv`), 'utf8'));
              const reader = catalog.reader(table);

              const first = await backfill('2026-07-01', '2026-07-04', 'first');
              expect(first.result.exitCode, first.result.stderr).toBe(0);
              const held = { '2026-07-01': await dayRows('2026-07-01'), '2026-07-02': await dayRows('2026-07-02'), '2026-07-03': await dayRows('2026-07-03') };
              expect(held['2026-07-01'].length).toBeGreaterThanOrEqual(4);
              expect(held['2026-07-02'].length).toBeGreaterThanOrEqual(1);
              const before = await tableState(python!, reader);
              expect(before.rows).toEqual(sortedLines(Object.values(held).flat()));
              const filesBefore = await filesUnder(location);

              // The source now answers one incident of 07-01 and none of 07-02: the first window far below its day, the second empty over its day.
              const kept = held['2026-07-01'][0]![0]!;
              proxy.settings.rows = (rows) =>
                rows.filter((row) => (String(row[1]) !== '2026-07-01' || String(row[0]) === kept) && String(row[1]) !== '2026-07-02');
              const refused = await backfill('2026-07-01', '2026-07-03', 'refused');
              expect(refused.result.exitCode).toBe(1);
              expect(refused.windows).toEqual([
                {
                  from: '2026-07-01',
                  code: 'publish_guard_tripped',
                  verdict: expect.objectContaining({ verdict: 'trip', rule: 'shrink', held: held['2026-07-01'].length, exported: 1 }),
                },
                {
                  from: '2026-07-02',
                  code: 'publish_guard_tripped',
                  verdict: expect.objectContaining({ verdict: 'trip', rule: 'empty', held: held['2026-07-02'].length, exported: 0 }),
                },
              ]);
              expect(refused.windows[1]!.verdict!.reason).toBe(
                `this export has no rows and it holds ${held['2026-07-02'].length} rows (manifest record counts of day 2026-07-02)`,
              );
              expect(await tableState(python!, reader)).toEqual(before);
              expect(await filesUnder(location)).toEqual(filesBefore);

              // 07-03 as full as it is held, and 06-20, never written (nothing to compare): both pass.
              proxy.settings.rows = undefined;
              const legal = await backfill('2026-07-03', '2026-07-04', 'again');
              expect(legal.result.exitCode, legal.result.stderr).toBe(0);
              expect(legal.windows).toEqual([
                {
                  from: '2026-07-03',
                  code: undefined,
                  verdict: expect.objectContaining({ verdict: 'pass', held: held['2026-07-03'].length, exported: held['2026-07-03'].length }),
                },
              ]);
              const unseen = await backfill('2026-06-20', '2026-06-21', 'unseen');
              expect(unseen.result.exitCode, unseen.result.stderr).toBe(0);
              const unseenRows = await dayRows('2026-06-20');
              expect(unseen.windows).toEqual([
                { from: '2026-06-20', code: undefined, verdict: expect.objectContaining({ verdict: 'pass', held: 0, exported: unseenRows.length }) },
              ]);
              const after = await tableState(python!, reader);
              expect(after.rows).toEqual(sortedLines([...Object.values(held).flat(), ...unseenRows]));
              expect(after.runIds).toHaveLength(before.runIds.length + 2);
            } finally {
              await proxy.close();
            }
          },
          READS_TIMEOUT_MS,
        );
      });
    }
  },
);
