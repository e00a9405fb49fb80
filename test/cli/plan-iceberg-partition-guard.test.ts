// `plan` and `check` judge the publish guard of `writeMode: partition` into an Iceberg table as the
// run judges it: on the rows the table holds in exactly the days a run replaces, from its manifests.
// They read page 0 only, so they judge it when page 0 is the whole export (its rows' days are the
// run's), and say "not judged" when more pages follow, never guessing. The JDBC catalog on the
// suite's PostgreSQL; the table's days from a census job's CSV of the same query.
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import { expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { runCli, sandboxEnv, summaryOf } from '../support/cli-harness.js';
import { jdbcCatalogSettings } from '../support/iceberg-jdbc-catalog.js';
import { postgresBlocker, postgresOrSkip, TEST_PASSWORD_VARIABLE, usePostgresDatabase } from '../support/postgres.js';
import { incidentDaysQuery } from '../support/queries.js';
import { sandboxAndRootForAll } from '../support/sandbox-fixture.js';
import { describeUnless } from '../support/skip.js';
import { icebergWorkspace } from '../sinks/iceberg/iceberg-cli-support.js';

const server = postgresOrSkip();
const TABLE = 'planned.by_day';
type Filter = { operator: 'gt' | 'in'; values: string[] };

const job = (filters: Filter[]) => ({
  name: 'by_day',
  tile: SANDBOX_TILE,
  query: {
    ...incidentDaysQuery,
    items: incidentDaysQuery.items.map((item, index) => (index === 0 ? { ...item, filters } : item)),
  },
  columns: { Number: { type: 'INT64' }, Day: { type: 'DATE' } },
  sinks: [{ type: 'iceberg', table: TABLE, writeMode: 'partition', partitionBy: { column: 'Day' } }],
});

describeUnless(postgresBlocker(server))("plan and check judge an Iceberg partition table's publish guard from its manifests, as the run does", () => {
  const fixture = sandboxAndRootForAll({ incidents: 4000, now: new Date('2026-11-28T06:00:00Z') });
  const database = usePostgresDatabase(server!);

  it('a one-page export: passes as the run passes, then refused (shrink) exactly as the run refuses; more pages: not judged', async () => {
    const census = { ...job([]), name: 'census', sinks: [{ type: 'csv' }] };
    // Pages of 1000 rows (source.itemsPerPage): the tile's every row is on page 0.
    const ws = await icebergWorkspace(
      fixture.root,
      fixture.sandbox,
      [census, job([])],
      { catalog: jdbcCatalogSettings(server!, database.name, 'planned'), location: path.join(fixture.root, 'warehouse') },
      { itemsPerPage: 1000 },
    );
    const env = { ...sandboxEnv(fixture.sandbox), [TEST_PASSWORD_VARIABLE]: server!.password };
    process.env[TEST_PASSWORD_VARIABLE] = server!.password;
    const cli = (args: string[]) => runCli([...args, '--config', ws.configFile, '--jobs', ws.jobsDir], { env });
    const writeJob = async (filters: Filter[]) => {
      await writeFile(path.join(ws.jobsDir, 'by_day.yaml'), stringify(job(filters)));
    };

    const first = await cli(['run', '--run-id', 'night-1']);
    expect(first.exitCode, first.stderr).toBe(0);
    // Every incident's number and day, as the table took them.
    const rows = parseCsv(await readFile(path.join(ws.outDir, 'census.csv'), 'utf8'), { from_line: 2 }) as string[][];
    const days = [...new Set(rows.map((row) => row[1]!))].sort();
    expect(days.length).toBeGreaterThan(3);
    const span = `days ${days[0]}..${days.at(-1)} (${days.length})`;

    // Unchanged: a run now would replace every day with as many rows as it holds.
    const passes = `guard: passes: ${rows.length} rows; holds ${rows.length} rows (manifest record counts of ${span}); 1 recent run, fewer than 3: no history rule`;
    const plan = await cli(['plan', '--job', 'by_day']);
    expect(plan.exitCode, plan.stdout + plan.stderr).toBe(0);
    expect(plan.stdout.split('\n')).toContain(`    ${passes}`);
    const check = await cli(['check', '--job', 'by_day']);
    expect(check.exitCode, check.stdout + check.stderr).toBe(0);
    expect(check.stdout.split('\n')).toContain(`  ${TABLE} ${passes}`);

    // The filter edited to one incident of the fullest day: far below what that day holds.
    const fullest = days.map((day) => ({ day, rows: rows.filter((row) => row[1] === day) })).sort((a, b) => b.rows.length - a.rows.length)[0]!;
    expect(fullest.rows.length).toBeGreaterThanOrEqual(3);
    await writeJob([{ operator: 'in', values: [fullest.rows[0]![0]!] }]);
    const fewer = Math.round((1 - 1 / fullest.rows.length) * 100);
    const refused =
      `guard: a run now would be refused (shrink): 1 row would replace the ${fullest.rows.length} rows it holds (manifest record counts of day ${fullest.day}): ` +
      `${fewer}% fewer, more than guard.maxShrink 0.5 allows; the job's query changed since run night-1: filters on Number; ` +
      'undo that edit, or if it is meant, guard.maxShrink or --allow-shrink lets it publish';
    const planRefused = await cli(['plan', '--job', 'by_day']);
    expect(planRefused.exitCode).toBe(1);
    expect(planRefused.stdout.split('\n')).toContain(`    ${refused}`);
    const checkRefused = await cli(['check', '--job', 'by_day']);
    expect(checkRefused.exitCode).toBe(1);
    expect(checkRefused.stdout.split('\n')).toContain(`  ${TABLE} ${refused}`);
    // The run judges it the same: the same rule, the same rows held and exported.
    const run = await cli(['run', '--job', 'by_day', '--run-id', 'night-2', '--json']);
    expect(run.exitCode).toBe(1);
    expect(summaryOf(run.stdout, 'run').tiles[0]!.guard!.verdicts).toMatchObject([
      { target: TABLE, verdict: 'trip', rule: 'shrink', held: fullest.rows.length, exported: 1 },
    ]);

    // Pages of 100: page 0 is not the whole export, so which days a run replaces is not known here.
    await writeJob([]);
    const environment = parse(await readFile(ws.configFile, 'utf8')) as { source: Record<string, unknown> };
    await writeFile(ws.configFile, stringify({ ...environment, source: { ...environment.source, itemsPerPage: 100 } }));
    const paged = await cli(['plan', '--job', 'by_day']);
    expect(paged.stdout.split('\n')).toContain('    guard: not judged: what it holds could not be read (the days a run replaces are known only from its rows)');
  }, 60_000);
});
