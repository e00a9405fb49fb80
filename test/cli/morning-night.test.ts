// Issue 63's seeded night, replayed: six jobs with the default settings (a CSV and a Parquet file
// without manifests, a slow CSV), a PostgreSQL merge, an Iceberg table partitioned by day on a JDBC
// catalog in the same PostgreSQL, and an incremental job; lineage on (the file transport). Planted
// on night 2: a filter edited so the export is empty, a tile id with two digits swapped, UPDATE
// revoked on the PostgreSQL table, a source answering 2 s late on one job, the Iceberg catalog
// role's UPDATE on iceberg_tables revoked, and, at 03:00, a hand-run backfill whose one day fails.
// The morning's six questions are answered by `status` alone; then each repair it prints is run as
// printed (parsed from its output) once its planted cause is undone, and `status` says all is well.
import { randomUUID } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { DEMO_TILES, SANDBOX_TILE } from '../../sandbox/index.js';
import { splitShellWords } from '../../src/config/import-shell-words.js';
import { openJdbcCatalog } from '../../src/sinks/iceberg/jdbc-catalog.js';
import { type CliResult, runCli, sandboxEnv, summaryOf, writeWorkspace, type Workspace } from '../support/cli-harness.js';
import { jdbcCatalogSettings } from '../support/iceberg-jdbc-catalog.js';
import { fileTransportEnv, type LineageEvent, lineageEventsIn } from '../support/lineage-events.js';
import { addPostgresSettings, postgresBlocker, postgresOrSkip, psql, usePostgresDatabase } from '../support/postgres.js';
import { dailyManifestJob, detailQuery, detailQueryAbove, incidentDaysQuery } from '../support/queries.js';
import { sandboxAndRootForAll } from '../support/sandbox-fixture.js';
import { describeUnless } from '../support/skip.js';

const server = postgresOrSkip();
const NIGHT_1 = { at: '2026-11-27T02:00:00.000Z', runId: '20261127T020000Z-63a001' };
const NIGHT_2 = { at: '2026-11-28T02:00:00.000Z', runId: '20261128T020000Z-63a002' };
const BACKFILL = { at: '2026-11-28T03:00:00.000Z', runId: 'backfill-63-by-hand' };
const MORNING = '2026-11-28T07:30:00.000Z';
const MEANT = '2026-11-28T07:40:00.000Z';
const REPAIRED = '2026-11-28T07:45:00.000Z';
const SCHEDULE = { cron: '0 2 * * *', timezone: 'UTC' };
/** incident_types' tile id with its last two digits swapped, as pasted on night 2. */
const SWAPPED_TILE = DEMO_TILES.incidentTypesResolution.replace(/02$/, '20');
const CATALOG = 'night';
const JOBS = ['daily_incr', 'days_iceberg', 'open_csv', 'slow_csv', 'status_pg', 'types_parquet'];

const typesQuery = {
  items: [
    { header: 'Type', formula: '[incident.type]', dataType: 'text', grouped: true, order: 'asc', orderSequence: 0, filters: [] },
    { header: 'Incidents', formula: '[incident.number]', dataType: 'number', aggregate: 'count', filters: [] },
  ],
  options: { pageNumber: 0 },
};

const jobs = (night: 1 | 2) => [
  // The filter edited on night 2: no incident is numbered that high, the export is empty.
  { name: 'open_csv', tile: SANDBOX_TILE, schedule: SCHEDULE, query: detailQueryAbove(night === 1 ? 0 : 100_000), sinks: [{ type: 'csv' }] },
  {
    name: 'types_parquet',
    tile: night === 1 ? DEMO_TILES.incidentTypesResolution : SWAPPED_TILE,
    schedule: SCHEDULE,
    query: typesQuery,
    sinks: [{ type: 'parquet' }],
  },
  // Three pages of 50 (source.itemsPerPage): the second answers 2 s late on night 2, the only page 1
  // asked that night (the others have one page, or fail before their first). Its options were edited that night
  // too (repeated rows ignored: none repeat), a change the guard passes: no repair, nothing to undo.
  {
    name: 'slow_csv',
    tile: SANDBOX_TILE,
    schedule: SCHEDULE,
    query: { ...detailQuery, options: { ...detailQuery.options, ignoreRepeatedRows: night === 2 } },
    sinks: [{ type: 'csv' }],
  },
  {
    name: 'status_pg',
    tile: SANDBOX_TILE,
    schedule: SCHEDULE,
    query: detailQuery,
    columns: { Number: { type: 'INT64' } },
    sinks: [{ type: 'postgres', table: 'incident_status', writeMode: 'merge', primaryKey: ['Number'] }],
  },
  {
    name: 'days_iceberg',
    tile: SANDBOX_TILE,
    schedule: SCHEDULE,
    query: incidentDaysQuery,
    columns: { Number: { type: 'INT64' }, Day: { type: 'DATE' } },
    sinks: [{ type: 'iceberg', table: 'night.incident_days', writeMode: 'partition', partitionBy: { column: 'Day' } }],
  },
  { ...dailyManifestJob({ startFrom: '2026-11-20' }), name: 'daily_incr', schedule: SCHEDULE },
];

describeUnless(postgresBlocker(server))("issue 63's seeded night: status alone answers the morning, and every repair it prints works", () => {
  const fixture = sandboxAndRootForAll({ incidents: 130, now: new Date('2026-11-28T06:00:00Z') });
  const database = usePostgresDatabase(server!);
  // Roles are the cluster's: one of this file's own, dropped after it (the superuser has every privilege whatever is revoked).
  const role = `night_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  let ws: Workspace;
  let env: Record<string, string>;
  let lineageDir: string;
  const seen: Record<string, CliResult> = {};

  const cli = (now: string, args: string[]) => runCli([...args, '--config', ws.configFile, '--jobs', ws.jobsDir], { env, seams: { now: () => new Date(now) } });
  const writeJobs = async (night: 1 | 2) => {
    for (const job of jobs(night)) await writeFile(path.join(ws.jobsDir, `${job.name}.yaml`), stringify(job));
  };
  const asAdmin = (sql: string) => psql(server!, database.name, sql);

  beforeAll(async () => {
    const { host, port, user, password } = server!;
    await asAdmin(`CREATE ROLE ${role} LOGIN PASSWORD '${password}'; GRANT CREATE, USAGE ON SCHEMA public TO ${role}`);
    ws = await writeWorkspace(fixture.root, fixture.sandbox, jobs(1));
    lineageDir = path.join(fixture.root, 'lineage');
    await mkdir(lineageDir, { recursive: true });
    env = {
      ...sandboxEnv(fixture.sandbox),
      ...fileTransportEnv(lineageDir),
      ...(await addPostgresSettings(ws.configFile, server!, database.name, { user: role })),
    };
    // The Iceberg catalog's tables made by an administrator; the role may use them.
    const warehouse = path.join(fixture.root, 'warehouse');
    const admin = await openJdbcCatalog({ catalogName: CATALOG, warehouse, connection: { host, port, user, password, database: database.name } });
    await admin.close();
    await asAdmin(`GRANT SELECT, INSERT, UPDATE ON iceberg_tables, iceberg_namespace_properties TO ${role}`);
    const config = parse(await readFile(ws.configFile, 'utf8')) as { sinks: Record<string, unknown> };
    const catalog = { ...jdbcCatalogSettings(server!, database.name, CATALOG), user: role };
    await writeFile(
      ws.configFile,
      stringify({ ...config, sinks: { ...config.sinks, parquet: { directory: ws.outDir }, iceberg: { catalog, location: warehouse } } }),
    );

    seen.night1 = await cli(NIGHT_1.at, ['run', '--run-id', NIGHT_1.runId, '--json']);

    // Night 2, as planted.
    await writeJobs(2);
    await asAdmin(`REVOKE UPDATE ON incident_status FROM ${role}; REVOKE UPDATE ON iceberg_tables FROM ${role}`);
    fixture.sandbox.inject({ kind: 'delay', endpoint: 'export', pageNumber: 1, delayMs: 2_000, times: Number.POSITIVE_INFINITY });
    try {
      seen.night2 = await cli(NIGHT_2.at, ['run', '--run-id', NIGHT_2.runId, '--json']);
    } finally {
      fixture.sandbox.clearFaults();
    }
    // 03:00, by hand: three past days again, a window at a time; the second day's export is throttled for an hour.
    fixture.sandbox.inject({ kind: 'rate-limit', endpoint: 'export', call: 2, retryAfter: 3600 });
    try {
      seen.backfill = await cli(BACKFILL.at, [
        'backfill',
        '--job',
        'daily_incr',
        '--from',
        '2026-11-21',
        '--to',
        '2026-11-24',
        '--run-id',
        BACKFILL.runId,
        '--json',
      ]);
    } finally {
      fixture.sandbox.clearFaults();
    }
    seen.status = await cli(MORNING, ['status']);
    seen.statusJson = await cli(MORNING, ['status', '--json']);
  }, 120_000);

  afterAll(async () => {
    await asAdmin(`DROP OWNED BY ${role} CASCADE; DROP ROLE ${role}`);
  });

  const block = (job: string) => jobBlocks(seen.status!.stdout)[job]!;

  it('ran as seeded: night 1 published every job; night 2 failed four and published two; the backfill failed one of its three days', () => {
    expect(seen.night1!.exitCode, seen.night1!.stderr).toBe(0);
    // A tile per job, and per day window of the incremental one: each job's outcomes, once each.
    const outcomes = (stdout: string) => {
      const byJob: Record<string, string[]> = {};
      for (const tile of summaryOf(stdout, 'run').tiles)
        byJob[tile.job] = [...new Set([...(byJob[tile.job] ?? []), `${tile.status} ${tile.error?.code ?? ''}`.trim()])];
      return byJob;
    };
    expect(outcomes(seen.night1!.stdout)).toEqual(Object.fromEntries(JOBS.map((job) => [job, ['succeeded']])));
    expect(seen.night2!.exitCode).toBe(1);
    expect(outcomes(seen.night2!.stdout)).toEqual({
      open_csv: ['failed publish_guard_tripped'],
      types_parquet: ['failed export_api_error'],
      slow_csv: ['succeeded'],
      status_pg: ['failed permission_denied'],
      days_iceberg: ['failed permission_denied'],
      daily_incr: ['succeeded'],
    });
    expect(seen.backfill!.exitCode).toBe(1);
    expect(seen.status!.exitCode).toBe(1);
  });

  it('which failed and why: each job leads with its last run, its outcome, code and message', () => {
    const steady = (line: string | undefined) => line?.replace(/ \(lineage [^)]*\)/, '').replace(/\d+\.\d s\b/g, 'N.N s');
    expect(steady(block('open_csv')[1])).toBe(
      `  last run: REFUSED publish_guard_tripped, run ${NIGHT_2.runId} of 2026-11-28 02:00:00 UTC; 0 rows, 1 page in N.N s`,
    );
    expect(block('open_csv')[2]).toMatch(/^ {4}job open_csv: .*this export has no rows and it holds 130 rows/);
    expect(steady(block('types_parquet')[1])).toBe(
      `  last run: FAILED export_api_error, run ${NIGHT_2.runId} of 2026-11-28 02:00:00 UTC; 0 rows, 0 pages in N.N s`,
    );
    expect(block('types_parquet')[2]).toBe(
      `    job types_parquet: page 0: export for tile ${SWAPPED_TILE} (sent as query item tileId) failed with HTTP 400: invalid id; check the job's tile and source.tileParam`,
    );
    // The two grants revoked: refused before the token and the first page, naming the privilege and the grant that gives it back.
    for (const job of ['status_pg', 'days_iceberg'])
      expect(steady(block(job)[1]), job).toBe(
        `  last run: FAILED permission_denied, run ${NIGHT_2.runId} of 2026-11-28 02:00:00 UTC; 0 rows, 0 pages in N.N s`,
      );
    expect(block('status_pg')[2]).toBe(
      `    job status_pg: postgres public.incident_status: permission denied (user ${role} lacks UPDATE on table public.incident_status): grant the run's user UPDATE on table public.incident_status`,
    );
    expect(block('days_iceberg')[2]).toBe(
      `    job days_iceberg: Iceberg jdbc ${server!.host}:${server!.port}/${database.name} catalog ${CATALOG}: user "${role}" lacks UPDATE on iceberg_tables (has_table_privilege): GRANT UPDATE ON iceberg_tables TO "${role}"`,
    );
    expect(steady(block('slow_csv')[1])).toBe(`  last run: OK, run ${NIGHT_2.runId} of 2026-11-28 02:00:00 UTC; 130 rows, 3 pages in N.N s`);
    // The incremental run took its one open day again: nothing created yet at the source's 06:00.
    expect(steady(block('daily_incr')[1])).toBe(`  last run: OK, run ${NIGHT_2.runId} of 2026-11-28 02:00:00 UTC; 0 rows, 1 page in N.N s`);
    // The backfill started after it is shown beside it: its range, what it did (as the backfill itself said it), why its day failed.
    const said = /^backfill daily_incr 2026-11-21\.\.2026-11-24 by day: 2 of 3 windows succeeded, (\d+ rows?)$/.exec(seen.backfill!.stderr.split('\n')[0]!);
    expect(said).not.toBeNull();
    const backfill = block('daily_incr').slice(block('daily_incr').findIndex((line) => line.startsWith('  last backfill: ')));
    expect(steady(backfill[0])).toBe(
      `  last backfill: FAILED source_retry_after_too_long, run ${BACKFILL.runId} of 2026-11-28 03:00:00 UTC, 2026-11-21..2026-11-24 by day; 2 of 3 windows succeeded, ${said![1]} in N.N s`,
    );
    expect(backfill[1]).toBe('    job daily_incr: page 0: HTTP 429 with Retry-After: 3600 (more than the 1 s this job waits): rate limit exceeded');
  });

  it('where the time went: the slow job waited on its source, not on its sink', () => {
    // The source's time beside its usual (night 1's, a fraction of a second), and the job's usual flagged far off.
    const time = /^ {4}time: source (\d+\.\d) s \(usually (\d+\.\d) s\), reading (\d+\.\d) s, prepare csv (\d+\.\d) s, publish csv (\d+\.\d) s$/.exec(
      block('slow_csv')[2]!,
    );
    expect(time).not.toBeNull();
    const [source, usually, reading, prepare, publish] = time!.slice(1).map(Number) as [number, number, number, number, number];
    expect(source).toBeGreaterThanOrEqual(2);
    expect(usually).toBeLessThan(1);
    expect(source).toBeGreaterThan(reading + prepare + publish);
    expect(block('slow_csv')[3]).toMatch(/^ {4}usually: 130 rows in \d+\.\d s \(median of 1 earlier successful run\); FAR OFF: \d+\.\d s, source \d+\.\d s$/);
  });

  it('what each target holds since which run: the table and the table of days still hold night 1, said NOT PUBLISHED by night 2', () => {
    const notPublished = `NOT PUBLISHED: the run due 2026-11-28 02:00:00 UTC, run ${NIGHT_2.runId}, FAILED permission_denied`;
    expect(block('status_pg').filter((line) => line.startsWith('  postgres '))).toEqual([
      `  postgres public.incident_status: run ${NIGHT_1.runId} of 2026-11-27 02:00:00 UTC, 130 rows (rows counted; the run ledger: that run merged 130 changed rows); ${notPublished}`,
    ]);
    const days = summaryOf(seen.night1!.stdout, 'run').tiles.find((tile) => tile.job === 'days_iceberg')!.rows;
    expect(days).toBeGreaterThan(0);
    expect(block('days_iceberg').filter((line) => line.startsWith('  iceberg '))).toEqual([
      `  iceberg night.incident_days: run ${NIGHT_1.runId} of 2026-11-27 02:00:00 UTC, ${days} rows (the snapshot summary); ${notPublished}`,
    ]);
  });

  it('what each file holds since which run, with default settings: the run history names the run, a window its backfill or incremental run', () => {
    const notPublished = (outcome: string) => `NOT PUBLISHED: the run due 2026-11-28 02:00:00 UTC, run ${NIGHT_2.runId}, ${outcome}`;
    const fileLine = (job: string) => block(job).filter((line) => /^ {2}(csv|parquet) /.test(line));
    expect(fileLine('open_csv')).toEqual([
      `  csv ${ws.outDir}/open_csv.csv: run ${NIGHT_1.runId} of 2026-11-27 02:00:00 UTC, 130 rows (the run history; file modified; rows counted); ${notPublished('REFUSED publish_guard_tripped')}`,
    ]);
    expect(fileLine('types_parquet')).toEqual([
      `  parquet ${ws.outDir}/types_parquet.parquet: run ${NIGHT_1.runId} of 2026-11-27 02:00:00 UTC, 4 rows (the run history; file modified; rows counted); ${notPublished('FAILED export_api_error')}`,
    ]);
    expect(fileLine('slow_csv')).toEqual([
      `  csv ${ws.outDir}/slow_csv.csv: run ${NIGHT_2.runId} of 2026-11-28 02:00:00 UTC, 130 rows (the run history; file modified; rows counted)`,
    ]);
    // The incremental day's file names its window's run id (<run>-20261128): told as the run and its window.
    expect(fileLine('daily_incr')).toEqual([
      expect.stringMatching(
        new RegExp(
          `^ {2}csv ${ws.outDir}/daily_incr/2026-11-28\\.csv: run ${NIGHT_2.runId} \\(window 2026-11-28\\.\\.2026-11-29\\) of \\S+ \\S+ UTC, 0 rows \\(its manifest\\)$`,
        ),
      ),
    ]);
    // What changed, said once per job, from the record of the run that published: the filter edit and the swapped tile id.
    const changes = (job: string) => {
      const lines = block(job);
      const at = lines.findIndex((line) => line.startsWith('  changed since run '));
      return at < 0 ? [] : lines.slice(at, at + 2);
    };
    expect(changes('open_csv')).toEqual([
      `  changed since run ${NIGHT_1.runId} (old → new):`,
      '    filters on Number: [{"operator":"gt","values":["0"]}] → [{"operator":"gt","values":["100000"]}]',
    ]);
    expect(changes('types_parquet')).toEqual([
      `  changed since run ${NIGHT_1.runId} (old → new):`,
      `    tile: "${DEMO_TILES.incidentTypesResolution}" → "${SWAPPED_TILE}"`,
    ]);
    for (const job of JOBS.filter((name) => name !== 'open_csv' && name !== 'types_parquet')) expect(changes(job), job).toEqual([]);
    expect(seen.status!.stdout.split('\n').filter((line) => line.includes('changed since'))).toHaveLength(2);
  });

  it("the backfill's failed day is a hole, listed with the backfill that fills it though the incremental run succeeded since", () => {
    expect(block('daily_incr').filter((line) => line.startsWith('  hole: '))).toEqual([
      `  hole: 2026-11-22..2026-11-23, failed in backfill run ${BACKFILL.runId} of 2026-11-28 03:00:00 UTC (source_retry_after_too_long); no run since filled it`,
    ]);
    const json = JSON.parse(seen.statusJson!.stdout) as Array<{ job: string; holes?: Array<{ from: string; to: string; rerun: string }> }>;
    expect(json.find((entry) => entry.job === 'daily_incr')!.holes?.map(({ from, to }) => `${from}..${to}`)).toEqual(['2026-11-22..2026-11-23']);
  });

  it('what is left behind: nothing; the revoked grants were refused before anything was written', () => {
    expect(seen.status!.stdout.split('\n').filter((line) => line.includes('left behind'))).toEqual([]);
  });

  it('the repair: the edit to undo and the tile id to fix come first, with their file and line; a failure of its own is a plain re-run', async () => {
    const flags = `--config ${ws.configFile} --jobs ${ws.jobsDir}`;
    const openFile = path.join(ws.jobsDir, 'open_csv.yaml');
    const typesFile = path.join(ws.jobsDir, 'types_parquet.yaml');
    expect(repairOf(block('open_csv'))).toEqual([
      `  repair: undo the edit since run ${NIGHT_1.runId}, then run the job again:`,
      `            ${openFile}:${await lineOfText(openFile, '      filters:')}: filters on Number is [{"operator":"gt","values":["100000"]}]; set it back to [{"operator":"gt","values":["0"]}]`,
      `          tilehouse run ${flags} --job open_csv`,
      '          kubectl create job -n tilehouse --from=cronjob/tilehouse-open-csv tilehouse-open-csv-$(date +%s)',
      `          if the change is meant: tilehouse run ${flags} --job open_csv --allow-shrink  # publishes the smaller export over what the targets hold (TILEHOUSE_ALLOW_SHRINK=1 on the cluster)`,
    ]);
    expect(repairOf(block('types_parquet'))).toEqual([
      "  repair: fix the job's tile id, then run the job again:",
      `            ${typesFile}:${await lineOfText(typesFile, `tile: ${SWAPPED_TILE}`)}: tile "${SWAPPED_TILE}": the source refuses it (HTTP 400: invalid id); run ${NIGHT_1.runId} published with tile "${DEMO_TILES.incidentTypesResolution}"`,
      `          tilehouse run ${flags} --job types_parquet`,
      '          kubectl create job -n tilehouse --from=cronjob/tilehouse-types-parquet tilehouse-types-parquet-$(date +%s)',
    ]);
    // The definition did not change: running it again (once the grant is back) is the repair; nothing to undo.
    for (const job of ['status_pg', 'days_iceberg'])
      expect(repairOf(block(job))).toEqual([
        `  repair: tilehouse run ${flags} --job ${job}`,
        `          kubectl create job -n tilehouse --from=cronjob/tilehouse-${job.replace('_', '-')} tilehouse-${job.replace('_', '-')}-$(date +%s)`,
      ]);
    // The slow job and the incremental job published: no repair. The failed day of the backfill has its re-run.
    expect(repairOf(block('slow_csv'))).toEqual([]);
    expect(repairOf(block('daily_incr'))).toEqual([]);
    expect(block('daily_incr').filter((line) => line.startsWith('    re-run: '))).toEqual([
      `    re-run: tilehouse backfill --job daily_incr --from 2026-11-22 --to 2026-11-23 --step day ${flags}`,
    ]);
    const json = JSON.parse(seen.statusJson!.stdout) as Array<{ job: string; repair?: Record<string, unknown> }>;
    expect(json.find((entry) => entry.job === 'types_parquet')!.repair).toEqual({
      fixFirst: [
        {
          kind: 'tile',
          file: typesFile,
          line: await lineOfText(typesFile, `tile: ${SWAPPED_TILE}`),
          tile: SWAPPED_TILE,
          refusal: 'HTTP 400: invalid id',
          published: { runId: NIGHT_1.runId, tile: DEMO_TILES.incidentTypesResolution },
        },
      ],
      commands: [
        `tilehouse run ${flags} --job types_parquet`,
        'kubectl create job -n tilehouse --from=cronjob/tilehouse-types-parquet tilehouse-types-parquet-$(date +%s)',
      ],
    });
  });

  it("what lineage shows: each last run names its OpenLineage job and run, the run of that job's terminal event in the lineage file", async () => {
    const events = await lineageEventsIn(lineageDir);
    const failed = ['open_csv', 'types_parquet', 'status_pg', 'days_iceberg'];
    for (const job of JOBS) {
      const lineage = /\(lineage (\S+) (\S+) run ([^)]+)\)/.exec(block(job)[1]!);
      expect(lineage, job).not.toBeNull();
      const [, namespace, name, runIds] = lineage!;
      expect(name).toBe(job);
      // Each run id printed (an incremental run's: one per window) is the run of one terminal event
      // of that job in the lineage file, which says how it ended as the last-run line does.
      for (const runId of runIds!.split(', '))
        expect(
          terminalEvents(events, namespace!, job)
            .filter((event) => event.run.runId === runId)
            .map((event) => event.eventType),
          `${job} ${runId}`,
        ).toEqual([failed.includes(job) ? 'FAIL' : 'COMPLETE']);
    }
  });

  it('every repair printed, run as printed once its cause is undone, succeeds; then status says every job is well', async () => {
    const run = async (command: string, at = REPAIRED) => {
      const words = splitShellWords(command);
      expect(words[0]).toBe('tilehouse');
      const result = await runCli(words.slice(1), { env, seams: { now: () => new Date(at) } });
      expect(result.exitCode, `${command}\n${result.stderr}`).toBe(0);
      return result;
    };
    // The shrink is meant, at first: the override publishes the empty export; then the edit is undone and the plain run restores the rows.
    const [openRun, meant] = commandsOf(block('open_csv'));
    await run(meant!, MEANT);
    expect(await csvRows(path.join(ws.outDir, 'open_csv.csv'))).toHaveLength(0);
    await writeFile(path.join(ws.jobsDir, 'open_csv.yaml'), stringify(jobs(1)[0]));
    await run(openRun!);
    expect(await csvRows(path.join(ws.outDir, 'open_csv.csv'))).toHaveLength(130);

    await writeFile(path.join(ws.jobsDir, 'types_parquet.yaml'), stringify(jobs(1)[1]));
    await run(commandsOf(block('types_parquet'))[0]!);
    await asAdmin(`GRANT UPDATE ON incident_status TO ${role}`);
    await run(commandsOf(block('status_pg'))[0]!);
    await asAdmin(`GRANT UPDATE ON iceberg_tables TO ${role}`);
    await run(commandsOf(block('days_iceberg'))[0]!);
    // The backfill's failed day: the malformed answer is gone.
    const rerun = commandsOf(block('daily_incr'));
    expect(rerun).toHaveLength(1);
    await run(rerun[0]!);

    const after = await cli(REPAIRED, ['status']);
    expect(after.exitCode, after.stdout).toBe(0);
    const blocks = jobBlocks(after.stdout);
    for (const job of JOBS) {
      expect(blocks[job]![1], job).toMatch(/^ {2}last run: OK, run /);
      expect(
        blocks[job]!.filter((line) => line.startsWith('  repair:')),
        job,
      ).toEqual([]);
      expect(
        blocks[job]!.filter((line) => line.includes('NOT PUBLISHED') || line.includes('LATE')),
        job,
      ).toEqual([]);
    }
    expect(blocks.daily_incr!.find((line) => line.startsWith('  last backfill: '))).toMatch(/^ {2}last backfill: OK, .* 1 of 1 window succeeded/);

    // plan and check judge the table of days' guard as a run would (its one page of rows: their days, from its manifests).
    const rows = summaryOf(seen.night1!.stdout, 'run').tiles.find((tile) => tile.job === 'days_iceberg')!.rows;
    const passes = new RegExp(
      `^guard: passes: ${rows} rows; holds ${rows} rows \\(manifest record counts of days \\d{4}-\\d\\d-\\d\\d\\.\\.\\d{4}-\\d\\d-\\d\\d \\(\\d+\\)\\); 2 recent runs, fewer than 3: no history rule$`,
    );
    const plan = await cli(REPAIRED, ['plan', '--job', 'days_iceberg']);
    expect(plan.exitCode, plan.stdout).toBe(0);
    expect(
      plan.stdout
        .split('\n')
        .filter((line) => line.startsWith('    guard: '))
        .map((line) => line.trim()),
    ).toEqual([expect.stringMatching(passes)]);
    const check = await cli(REPAIRED, ['check', '--job', 'days_iceberg']);
    expect(check.exitCode, check.stdout).toBe(0);
    expect(
      check.stdout
        .split('\n')
        .filter((line) => line.startsWith('  night.incident_days guard: '))
        .map((line) => line.slice('  night.incident_days '.length)),
    ).toEqual([expect.stringMatching(passes)]);
  });
});

/** `status`'s lines, by job: each job's block starts with its unindented line. */
function jobBlocks(text: string): Record<string, string[]> {
  const blocks: Record<string, string[]> = {};
  let current: string[] | undefined;
  for (const line of text.trimEnd().split('\n')) {
    if (!line.startsWith(' ')) blocks[line.split(' ')[0]!] = current = [];
    current!.push(line);
  }
  return blocks;
}

/** A job block's repair: from its `repair:` line to the block's end. */
function repairOf(block: readonly string[]): string[] {
  const start = block.findIndex((line) => line.startsWith('  repair: '));
  return start < 0 ? [] : block.slice(start);
}

/** Every `tilehouse …` command a job block prints (its repair's, its backfill's re-run), as printed, without a trailing `  # note`. */
function commandsOf(block: readonly string[]): string[] {
  return block.flatMap((line) => {
    const command = /^ +(?:repair: |re-run: |if the change is meant: )?(tilehouse .*?)(?: {2}# .*)?$/.exec(line);
    return command === null ? [] : [command[1]!];
  });
}

/** A CSV file's rows, its header left out. */
async function csvRows(file: string): Promise<string[][]> {
  return parseCsv(await readFile(file, 'utf8'), { from_line: 2 }) as string[][];
}

/** The 1-based line of a file that is exactly `text`. */
async function lineOfText(file: string, text: string): Promise<number> {
  const index = (await readFile(file, 'utf8')).split('\n').indexOf(text);
  if (index < 0) throw new Error(`${file} has no line ${JSON.stringify(text)}`);
  return index + 1;
}

/** A job's terminal events (COMPLETE, FAIL, ABORT), oldest first. */
function terminalEvents(events: readonly LineageEvent[], namespace: string, job: string): LineageEvent[] {
  return events.filter((event) => event.job.namespace === namespace && event.job.name === job && ['COMPLETE', 'FAIL', 'ABORT'].includes(event.eventType));
}
