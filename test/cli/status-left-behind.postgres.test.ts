// What a killed run left in PostgreSQL and in an Iceberg table, in `status` (issue 63): each found
// by looking, listed under `left behind:` with how it goes, removed that way by the next run, and
// then no longer listed. A PostgreSQL run killed while its publish waits for the table leaves its
// staging table (committed by prepare); an Iceberg run killed mid-read leaves its data file, which
// no snapshot references, until a commit's housekeeping deletes it.
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { readFile, writeFile } from 'node:fs/promises';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { runCli, sandboxEnv, writeWorkspace, type Workspace } from '../support/cli-harness.js';
import { exitWithin, spawnCli } from '../support/child-process.js';
import { jdbcCatalogSettings } from '../support/iceberg-jdbc-catalog.js';
import { addPostgresSettings, postgresBlocker, postgresOrSkip, TEST_PASSWORD_VARIABLE, usePostgresDatabase } from '../support/postgres.js';
import { detailQuery } from '../support/queries.js';
import { sandboxAndRootForAll } from '../support/sandbox-fixture.js';
import { describeUnless } from '../support/skip.js';
import { waitUntil } from '../support/wait-until.js';

const server = postgresOrSkip();

/** The `left behind:` block of `status`'s lines, up to the repair. */
function leftBehindBlock(stdout: string): string[] {
  const lines = stdout.split('\n');
  const start = lines.indexOf('  left behind:');
  return start < 0
    ? []
    : lines.slice(
        start,
        lines.findIndex((line) => line.startsWith('  repair: ')),
      );
}

/** The killed run's own two lines: its record, still "running", and how it goes. */
const RECORD_LINES = [
  expect.stringMatching(/^ {4}its record .+\/\.tilehouse\/history\/[a-z_]+\/.+\.json, still "running"$/),
  expect.stringMatching(/^ {6}goes: kept as the history's account of the kill/),
];

describeUnless(postgresBlocker(server))('status after a run killed into PostgreSQL or Iceberg', () => {
  const fixture = sandboxAndRootForAll({ incidents: 2_000 });
  const database = usePostgresDatabase(server!);

  async function killWhen(ws: Workspace, env: Record<string, string>, ready: () => Promise<boolean>): Promise<void> {
    const child = spawnCli(['run', '--config', ws.configFile, '--jobs', ws.jobsDir], { env: { ...process.env, ...env, CI: '' }, stdio: 'ignore' });
    const exited = exitWithin(child, 90_000);
    await waitUntil(ready, 'the moment to kill', { gaveUp: () => child.exitCode !== null, withinMs: 60_000 });
    child.kill('SIGKILL');
    expect((await exited).signal).toBe('SIGKILL');
  }

  it('PostgreSQL: the staging table of a run killed while its publish waited is listed with the sweep that drops it and the statement that does; the statement does', async () => {
    const ws = await writeWorkspace(
      path.join(fixture.root, 'pg'),
      fixture.sandbox,
      [{ name: 'held', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'postgres' }] }],
      {
        itemsPerPage: 500,
        concurrency: 1,
      },
    );
    const env = { ...sandboxEnv(fixture.sandbox), ...(await addPostgresSettings(ws.configFile, server!, database.name, { lockTimeoutMs: 60_000 })) };
    const flags = ['--config', ws.configFile, '--jobs', ws.jobsDir];
    expect((await runCli(['run', ...flags], { env })).exitCode).toBe(0);
    const staging = async () =>
      (await database.query<{ relname: string }>("SELECT relname FROM pg_class WHERE relname LIKE '\\_tilehouse\\_stage\\_%' ORDER BY relname")).map(
        (row) => row.relname,
      );

    // SHARE: the run reads the table and fills its staging table; its publish (DELETE, INSERT) waits.
    const holder = await database.client();
    await holder.query('BEGIN');
    await holder.query('LOCK TABLE "held" IN SHARE MODE');
    const waiting = async () =>
      (await database.query<{ n: string }>("SELECT count(*) AS n FROM pg_stat_activity WHERE datname = $1 AND wait_event_type = 'Lock'", [database.name]))[0]!
        .n !== '0';
    try {
      await killWhen(ws, env, async () => (await staging()).length === 1 && (await waiting()));
    } finally {
      await holder.query('ROLLBACK');
      await holder.end();
    }
    // The killed run's backend ends its transaction uncommitted: the staging table, committed by prepare, stays.
    await waitUntil(async () => !(await waiting()), 'the killed run’s publish to end on the server');
    const [table] = await staging();
    expect(table).toMatch(/^_tilehouse_stage_/);

    const status = await runCli(['status', ...flags], { env });
    expect(status.stdout.split('\n')[1]).toMatch(/^ {2}last run: KILLED, run /);
    expect(leftBehindBlock(status.stdout)).toEqual([
      '  left behind:',
      ...RECORD_LINES,
      `    PostgreSQL staging table public.${table}`,
      `      goes: its run's process is gone: the next run's sweep removes it; or by hand, in the database: DROP TABLE "public"."${table}";`,
    ]);

    // The way by hand, exactly as printed (the next run's sweep of a killed run's staging table: test/cli/postgres-runs.test.ts).
    const drop = leftBehindBlock(status.stdout).at(-1)!.split('or by hand, in the database: ')[1]!;
    await database.query(drop);
    expect(await staging()).toEqual([]);
    const next = await runCli(['run', ...flags], { env });
    expect(next.exitCode, next.stderr).toBe(0);
    const after = await runCli(['status', ...flags], { env });
    expect(after.stdout.split('\n')[1]).toMatch(/^ {2}last run: OK, /);
    expect(after.stdout).not.toContain('left behind');
  }, 180_000);

  it("Iceberg: the files of a run killed mid-read are listed with the commit that deletes them; the next run's commit does", async () => {
    const warehouse = path.join(fixture.root, 'warehouse');
    const ws = await writeWorkspace(
      path.join(fixture.root, 'ice'),
      fixture.sandbox,
      [{ name: 'iced', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'iceberg', table: 'tilehouse.iced' }] }],
      // Page 5 is held until the kill: a request timeout longer than the wait keeps the run reading.
      { itemsPerPage: 20, concurrency: 1, requestTimeoutMs: 120_000 },
    );
    const environment = parse(await readFile(ws.configFile, 'utf8')) as { sinks: Record<string, unknown> };
    // orphanMinAgeHours 0: the next commit deletes what no snapshot references, however young.
    environment.sinks.iceberg = {
      catalog: jdbcCatalogSettings(server!, database.name, 'leftovers'),
      location: warehouse,
      housekeeping: { orphanMinAgeHours: 0 },
    };
    await writeFile(ws.configFile, stringify(environment));
    process.env[TEST_PASSWORD_VARIABLE] = server!.password;
    const env = { ...sandboxEnv(fixture.sandbox), [TEST_PASSWORD_VARIABLE]: server!.password };
    const flags = ['--config', ws.configFile, '--jobs', ws.jobsDir];
    expect((await runCli(['run', ...flags], { env })).exitCode).toBe(0);
    const files = async () =>
      (await readdir(warehouse, { recursive: true, withFileTypes: true }))
        .filter((entry) => entry.isFile())
        .map((entry) => path.join(entry.parentPath, entry.name));
    const before = new Set(await files());
    const added = async () => (await files()).filter((file) => !before.has(file));

    fixture.sandbox.inject({ kind: 'delay', endpoint: 'export', pageNumber: 5, delayMs: 120_000, times: Number.POSITIVE_INFINITY });
    const exportsBefore = fixture.sandbox.requests.filter((request) => request.endpoint === 'export').length;
    try {
      await killWhen(
        ws,
        env,
        async () => fixture.sandbox.requests.filter((request) => request.endpoint === 'export').length >= exportsBefore + 5 && (await added()).length > 0,
      );
    } finally {
      fixture.sandbox.clearFaults();
    }
    const left = (await added()).sort();
    expect(left.length).toBeGreaterThan(0);
    for (const file of left) expect(path.relative(warehouse, file)).toMatch(/^tilehouse\/iced\/data\//);

    const status = await runCli(['status', ...flags], { env });
    expect(status.stdout.split('\n')[1]).toMatch(/^ {2}last run: KILLED, run /);
    const block = leftBehindBlock(status.stdout);
    expect(block.slice(0, 3)).toEqual(['  left behind:', ...RECORD_LINES]);
    const listed = block.slice(3);
    expect(listed).toHaveLength(2 * left.length);
    for (const [index, file] of left.entries()) {
      expect(listed[2 * index]).toMatch(new RegExp(`^ {4}Iceberg file (file://)?${literal(file)}, which no snapshot references$`));
      expect(listed[2 * index + 1]).toMatch(
        /^ {6}goes: deleted by the table's first commit \(a run of any job writing it\) after \d{4}-\d\d-\d\dT[\d:.]+Z \(sinks\.iceberg\.housekeeping\.orphanMinAgeHours 0\)$/,
      );
    }

    const next = await runCli(['run', ...flags], { env });
    expect(next.exitCode, next.stderr).toBe(0);
    const remaining = new Set(await files());
    expect(left.filter((file) => remaining.has(file))).toEqual([]);
    const after = await runCli(['status', ...flags], { env });
    expect(after.stdout.split('\n')[1]).toMatch(/^ {2}last run: OK, /);
    expect(after.stdout).not.toContain('left behind');
  }, 180_000);
});

function literal(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
