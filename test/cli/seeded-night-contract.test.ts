// Issue 51's seeded night, replayed: CSV, Parquet and a PostgreSQL merge; before the second night
// one CSV job's filter is edited to match nothing, the PostgreSQL role loses CREATE on its schema,
// and the source is slow; the morning after, another CSV job's tile id is changed. The five findings
// of the "Why" must be gone, each asserted on what the views print:
// (1) status has a line for the PostgreSQL target and `status --job` of it exits 1; its help names
//     PostgreSQL's _tilehouse_runs; (2) plan refuses with permission_denied, as check does;
// (3) a changed tile id shows a "changed since" line; (4) lineage's output schema names the CSV's
//     headers as written and the table's own types; (5) the error codes and --help name postgres.
import { randomUUID } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { DEMO_TILES, SANDBOX_TILE } from '../../sandbox/index.js';
import { type CliResult, runCli, sandboxEnv, summaryOf, writeWorkspace } from '../support/cli-harness.js';
import { fileTransportEnv, lineageEventsIn } from '../support/lineage-events.js';
import { addPostgresSettings, postgresBlocker, postgresOrSkip, psql, usePostgresDatabase } from '../support/postgres.js';
import { detailQuery, detailQueryAbove } from '../support/queries.js';
import { sandboxAndRootForAll } from '../support/sandbox-fixture.js';
import { describeUnless } from '../support/skip.js';

const server = postgresOrSkip();
const NIGHT_1 = { at: '2026-11-27T02:00:00.000Z', runId: '20261127T020000Z-51a001' };
const NIGHT_2 = { at: '2026-11-28T02:00:00.000Z', runId: '20261128T020000Z-51a002' };
const MORNING = '2026-11-28T07:30:00.000Z';
const SCHEDULE = { cron: '0 2 * * *', timezone: 'UTC' };
/** Tilehouse's own type names: a PostgreSQL output's schema facet must name the table's instead. */
const TILEHOUSE_TYPES = ['INT64', 'STRING', 'NUMERIC', 'FLOAT64', 'TIMESTAMP', 'DATE', 'BOOL'];

describeUnless(postgresBlocker(server))("issue 51's seeded night: every sink, every view", () => {
  const fixture = sandboxAndRootForAll({ incidents: 130 });
  const database = usePostgresDatabase(server!);

  it('the five findings are gone: the PostgreSQL line and exit code, plan = check, the tile change, the stored schema, postgres named', async () => {
    const role = `contract_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
    await psql(server!, database.name, `CREATE ROLE ${role} LOGIN PASSWORD '${server!.password}'; GRANT CREATE, USAGE ON SCHEMA public TO ${role}`);
    const jobs = (night: 1 | 2 | 'morning') => [
      {
        name: 'open_csv',
        tile: SANDBOX_TILE,
        schedule: SCHEDULE,
        query: night === 1 ? detailQuery : detailQueryAbove(100_000),
        sinks: [{ type: 'csv', manifest: true }],
      },
      {
        name: 'typed_csv',
        tile: night === 'morning' ? DEMO_TILES.incidentTypesResolution : SANDBOX_TILE,
        schedule: SCHEDULE,
        query: detailQuery,
        sinks: [{ type: 'csv', manifest: true }],
      },
      {
        name: 'open_parquet',
        tile: SANDBOX_TILE,
        schedule: SCHEDULE,
        query: detailQuery,
        // The morning's other edit: a guard threshold, which decides nothing that lands (no "sinks changed").
        sinks: [{ type: 'parquet', manifest: true, ...(night === 'morning' ? { guard: { maxShrink: 0.9 } } : {}) }],
      },
      {
        name: 'status_pg',
        columns: { Number: { type: 'INT64' } },
        tile: SANDBOX_TILE,
        schedule: SCHEDULE,
        query: detailQuery,
        sinks: [{ type: 'postgres', table: 'incident_status', writeMode: 'merge', primaryKey: ['Number'] }],
      },
    ];
    const ws = await writeWorkspace(fixture.root, fixture.sandbox, jobs(1));
    const env = { ...sandboxEnv(fixture.sandbox), ...(await addPostgresSettings(ws.configFile, server!, database.name, { user: role })) };
    const config = parse(await readFile(ws.configFile, 'utf8')) as { sinks: Record<string, unknown> };
    await writeFile(ws.configFile, stringify({ ...config, sinks: { ...config.sinks, parquet: { directory: ws.outDir } } }));
    const writeJobs = async (night: 1 | 2 | 'morning') => {
      for (const job of jobs(night)) await writeFile(path.join(ws.jobsDir, `${job.name}.yaml`), stringify(job));
    };
    const lineageDir = path.join(fixture.root, 'lineage');
    await mkdir(lineageDir, { recursive: true });
    const cli = (now: string, args: string[], extra: Record<string, string> = {}) =>
      runCli([...args, '--config', ws.configFile, '--jobs', ws.jobsDir], { env: { ...env, ...extra }, seams: { now: () => new Date(now) } });

    const night1 = await cli(NIGHT_1.at, ['run', '--run-id', NIGHT_1.runId, '--json'], fileTransportEnv(lineageDir));
    expect(night1.exitCode, night1.stderr).toBe(0);
    const outputs = summaryOf(night1.stdout, 'run').tiles.flatMap((tile) => tile.outputs);
    const targetOf = (sink: string, job: string) => outputs.find((output) => output.sink === sink && output.target.includes(job))!.target;
    const pgTarget = outputs.find((output) => output.sink === 'postgres')!.target;

    // (4) Lineage: the CSV output names its header as written; the table's output its own types.
    const complete = (await lineageEventsIn(lineageDir)).filter((event) => event.eventType === 'COMPLETE');
    const schemaOf = (target: string) => {
      const output = complete
        .flatMap((event) => event.outputs)
        .find((candidate) => candidate.name.endsWith(path.basename(target)) || candidate.name.endsWith(target))!;
      return (output.facets?.schema as { fields: Array<{ name: string; type: string }> }).fields;
    };
    const header = (await readFile(targetOf('csv', 'open_csv'), 'utf8')).split(/\r?\n/)[0]!.split(',');
    expect(schemaOf(targetOf('csv', 'open_csv')).map((field) => field.name)).toEqual(header);
    const columns = await database.query<{ name: string; type: string }>(
      `SELECT a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type FROM pg_catalog.pg_attribute a
        WHERE a.attrelid = 'public.incident_status'::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`,
    );
    const pgFields = schemaOf(pgTarget);
    expect(pgFields.map(({ name, type }) => ({ name, type }))).toEqual(columns);
    for (const field of pgFields) expect(TILEHOUSE_TYPES).not.toContain(field.type);

    // The second night: the filter edited to match nothing, CREATE revoked, the source slow.
    await writeJobs(2);
    await psql(server!, database.name, `REVOKE CREATE ON SCHEMA public FROM ${role}`);
    fixture.sandbox.inject({ kind: 'delay', endpoint: 'export', pageNumber: 1, delayMs: 300, times: Number.POSITIVE_INFINITY });
    let night2: CliResult;
    try {
      night2 = await cli(NIGHT_2.at, ['run', '--run-id', NIGHT_2.runId]);
    } finally {
      fixture.sandbox.clearFaults();
    }
    expect(night2.exitCode).toBe(1);
    // The morning: someone changed typed_csv's tile id.
    await writeJobs('morning');

    // (1) status has the PostgreSQL line, naming the first night as its writer; --job of it exits 1.
    const status = await cli(MORNING, ['status']);
    expect(status.stdout).toContain(`  postgres ${pgTarget}: run ${NIGHT_1.runId} of 2026-11-27 02:00:00 UTC, 130 rows (`);
    const statusJson = JSON.parse((await cli(MORNING, ['status', '--json'])).stdout) as Array<{
      job: string;
      targets: Array<{ sink: string; runId?: string }>;
    }>;
    expect(statusJson.find((job) => job.job === 'status_pg')!.targets).toMatchObject([{ sink: 'postgres', runId: NIGHT_1.runId }]);
    const pgStatus = await cli(MORNING, ['status', '--job', 'status_pg']);
    expect(pgStatus.exitCode, pgStatus.stdout).toBe(1);
    // The night's run started and failed (the run history has it): not LATE, which means no run started.
    expect(pgStatus.stdout).toContain(`NOT PUBLISHED: the run due 2026-11-28 02:00:00 UTC, run ${NIGHT_2.runId}, FAILED permission_denied`);
    expect((await cli(MORNING, ['status', '--help'])).stdout).toContain('_tilehouse_runs');

    // (2) plan refuses as check does: the role lost CREATE.
    const plan = await cli(MORNING, ['plan', '--job', 'status_pg']);
    const check = await cli(MORNING, ['check', '--job', 'status_pg']);
    expect(check.exitCode).toBe(1);
    expect(check.stdout + check.stderr).toContain('permission_denied');
    expect(plan.exitCode, plan.stdout).toBe(1);
    expect(plan.stdout).toContain(`REFUSED: a run now would fail at ${pgTarget}: permission_denied: `);
    expect(plan.stdout).not.toContain(': unchanged');

    // (3) A changed tile id and an edited filter are each told once, by the job's "changed since
    // run R (old → new)" block below the target R wrote (not by a target line as well).
    expect(status.stdout).toContain(`  changed since run ${NIGHT_2.runId} (old → new):\n    tile: "${SANDBOX_TILE}" → "${DEMO_TILES.incidentTypesResolution}"`);
    expect(status.stdout).toContain(`  changed since run ${NIGHT_1.runId} (old → new):\n    filters on Number: [] → [{"operator":"gt","values":["100000"]}]`);
    expect(status.stdout).not.toMatch(/^ {4}the job's \w+ changed since run/m);
    const parquetBlock = status.stdout.slice(status.stdout.indexOf('open_parquet ('), status.stdout.indexOf('\n', status.stdout.indexOf('  parquet ')));
    expect(parquetBlock).toContain(
      `  parquet ${targetOf('parquet', 'open_parquet')}: run ${NIGHT_2.runId} of 2026-11-28 02:00:00 UTC, 130 rows (its manifest)`,
    );
    expect(status.stdout).not.toMatch(/its sinks changed|the job's sinks changed/);

    // (5) postgres among the error codes' target kinds, and every kind in --help.
    const codes = await readFile(path.join(import.meta.dirname, '../../docs/error-codes.md'), 'utf8');
    expect(codes).toMatch(/`targetKind` \([^)]*`postgres`[^)]*\)/);
    const help = await cli(MORNING, ['--help']);
    expect(help.stdout).not.toContain('CSV or BigQuery');
    for (const label of ['CSV', 'Parquet', 'BigQuery', 'PostgreSQL']) expect(help.stdout).toContain(label);
  }, 180_000);
});
