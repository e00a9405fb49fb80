// tilehouse run and backfill into PostgreSQL through the CLI, against the sandbox and the run's
// throwaway cluster: a stop mid-COPY, kills at seeded moments, a two-sink job whose PostgreSQL
// publish fails, windowed jobs and --resume reading the ledger.
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect, it } from 'vitest';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { listFiles, runCli, sandboxEnv, summaryOf, writeWorkspace } from '../support/cli-harness.js';
import { runStoppedWhen, spawnCli } from '../support/child-process.js';
import { seededRandom } from '../support/gcs-kill.js';
import { addPostgresSettings, postgresOrSkip, psql, usePostgresDatabase, postgresBlocker } from '../support/postgres.js';
import { detailQuery, incidentDaysQuery } from '../support/queries.js';
import { sandboxAndRootForAll } from '../support/sandbox-fixture.js';
import { describeUnless } from '../support/skip.js';

const server = postgresOrSkip();
const STOP_DEADLINE_MS = 4_000;

describeUnless(postgresBlocker(server))('tilehouse into PostgreSQL', () => {
  const fixture = sandboxAndRootForAll({ incidents: 20_000, latencyMs: 20, now: new Date('2026-07-05T12:00:00Z') });
  const database = usePostgresDatabase(server!);
  const count = async (table: string) => Number((await psql(server!, database.name, `SELECT count(*) FROM "${table}"`)).trim());
  const stagingLeft = async () => (await psql(server!, database.name, "SELECT count(*) FROM pg_class WHERE relname LIKE '\\_tilehouse\\_stage\\_%'")).trim();

  async function workspace(name: string, jobs: Array<Record<string, unknown>>, source: Record<string, unknown> = {}) {
    const ws = await writeWorkspace(path.join(fixture.root, name), fixture.sandbox, jobs, { itemsPerPage: 500, concurrency: 1, ...source });
    const env = await addPostgresSettings(ws.configFile, server!, database.name, {}, { stopDeadlineMs: STOP_DEADLINE_MS });
    return { ws, env: { ...sandboxEnv(fixture.sandbox), ...env } };
  }

  it('runs a job into a table, and a stop mid-COPY exits 143 with the previous rows kept and no staging table left', async () => {
    const { ws, env } = await workspace('stop', [{ name: 'stopped', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'postgres' }] }]);
    const first = await runCli(['run', '--config', ws.configFile, '--jobs', ws.jobsDir, '--json'], { env });
    expect(first.exitCode, first.stderr).toBe(0);
    expect(await count('stopped')).toBe(20_000);
    await psql(server!, database.name, "DELETE FROM stopped WHERE number > 5; UPDATE stopped SET description = 'previous'");

    let copying = false;
    const watch = setInterval(() => {
      psql(server!, database.name, "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'COPY %' AND application_name = 'tilehouse stopped'")
        .then((text) => {
          if (Number(text.trim()) > 0) copying = true;
        })
        .catch(() => undefined);
    }, 20);
    const { exit, stdout, stderr } = await runStoppedWhen(['run', '--config', ws.configFile, '--jobs', ws.jobsDir, '--json'], {
      env: { ...process.env, ...env, CI: '' },
      ready: () => copying,
      awaited: 'the COPY into the staging table',
      exitWithinMs: STOP_DEADLINE_MS + 20_000,
    }).finally(() => clearInterval(watch));

    expect(exit.code, stderr).toBe(143);
    expect(summaryOf(stdout, 'run').tiles[0]).toMatchObject({ status: 'failed' });
    expect(await psql(server!, database.name, 'SELECT count(*), min(description), max(description) FROM stopped')).toBe('5|previous|previous\n');
    await expect.poll(stagingLeft).toBe('0');
  }, 120_000);

  it('leaves the table the previous or the complete new state whenever the run is killed', async () => {
    const { ws, env } = await workspace('kill', [{ name: 'killed', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'postgres' }] }]);
    const seed = await runCli(['run', '--config', ws.configFile, '--jobs', ws.jobsDir], { env });
    expect(seed.exitCode, seed.stderr).toBe(0);
    await psql(server!, database.name, "UPDATE killed SET description = 'previous'");
    const random = seededRandom(46);
    const states: string[] = [];
    for (let kill = 0; kill < 5; kill++) {
      const child = spawnCli(['run', '--config', ws.configFile, '--jobs', ws.jobsDir], { env: { ...process.env, ...env, CI: '' }, stdio: 'ignore' });
      const exited = once(child, 'exit');
      // Spread over the run: the source's pages, the COPY, the publish (a run takes a few seconds here).
      await sleep(Math.floor(random() * 6_000));
      child.kill('SIGKILL');
      await exited;
      const text = await psql(server!, database.name, "SELECT count(*), count(*) FILTER (WHERE description = 'previous') FROM killed");
      const [rows, previous] = text.trim().split('|').map(Number);
      const state = previous === rows && rows === 20_000 ? 'previous' : previous === 0 && rows === 20_000 ? 'new' : `mixed ${text.trim()}`;
      states.push(state);
      if (state === 'new') await psql(server!, database.name, "UPDATE killed SET description = 'previous'");
    }
    expect(states.filter((state) => state !== 'previous' && state !== 'new')).toEqual([]);
    // What a kill left behind (a staging table after prepare's COMMIT) is swept by the next run.
    const after = await runCli(['run', '--config', ws.configFile, '--jobs', ws.jobsDir], { env });
    expect(after.exitCode, after.stderr).toBe(0);
    expect(await count('killed')).toBe(20_000);
  }, 180_000);

  it('publishes nothing when the PostgreSQL publish fails after the CSV sink prepared', async () => {
    // The table made by a PostgreSQL-only run of the same job, then a trigger that fills the disk on its next INSERT.
    const alone = await workspace('postgres-alone', [{ name: 'both', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'postgres' }] }]);
    expect((await runCli(['run', '--config', alone.ws.configFile, '--jobs', alone.ws.jobsDir], { env: alone.env })).exitCode).toBe(0);
    await psql(
      server!,
      database.name,
      `CREATE FUNCTION both_full() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'no space' USING ERRCODE = 'disk_full'; END $$;
       CREATE TRIGGER both_full AFTER INSERT ON "both" FOR EACH STATEMENT EXECUTE FUNCTION both_full();
       UPDATE "both" SET description = 'previous';`,
    );
    const { ws, env } = await workspace('two-sinks', [
      { name: 'both', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv' }, { type: 'postgres' }] },
    ]);
    const result = await runCli(['run', '--config', ws.configFile, '--jobs', ws.jobsDir, '--json'], { env });

    expect(result.exitCode).toBe(1);
    const tile = summaryOf(result.stdout, 'run').tiles[0]!;
    expect(tile).toMatchObject({ status: 'failed', error: { code: 'disk_full', targetKind: 'postgres' } });
    expect(await listFiles(ws.outDir)).toEqual([]);
    expect(await psql(server!, database.name, 'SELECT count(*), min(description) FROM "both"')).toBe('20000|previous\n');
  }, 60_000);

  it('backfills windows into day partitions, and --resume reads the ledger: nothing exported again', async () => {
    const job = {
      name: 'days',
      tile: SANDBOX_TILE,
      query: incidentDaysQuery,
      columns: { Day: { type: 'DATE' } },
      backfill: { item: 'day', bucketColumn: 'Day' },
      sinks: [{ type: 'postgres', writeMode: 'partition', partitionBy: { column: 'Day' } }],
    };
    const { ws, env } = await workspace('windows', [job]);
    const args = ['backfill', '--config', ws.configFile, '--jobs', ws.jobsDir, '--job', 'days', '--from', '2026-06-20', '--to', '2026-06-24', '--json'];
    const first = await runCli(args, { env });
    expect(first.exitCode, first.stderr).toBe(0);
    const perDay = await psql(server!, database.name, 'SELECT day, count(*) FROM days GROUP BY day ORDER BY day');
    expect(
      perDay
        .trim()
        .split('\n')
        .map((line) => line.split('|')[0]),
    ).toEqual(['2026-06-20', '2026-06-21', '2026-06-22', '2026-06-23']);
    const ledger = await psql(server!, database.name, "SELECT window_from FROM _tilehouse_runs WHERE target_table = 'public.days' ORDER BY window_from");
    expect(ledger.trim().split('\n')).toEqual(['2026-06-20', '2026-06-21', '2026-06-22', '2026-06-23']);

    const exportsBefore = fixture.sandbox.requests.filter((request) => request.endpoint === 'export').length;
    const resumed = await runCli([...args, '--resume'], { env });
    expect(resumed.exitCode, resumed.stderr).toBe(0);
    expect(fixture.sandbox.requests.filter((request) => request.endpoint === 'export').length).toBe(exportsBefore);
    expect(await psql(server!, database.name, 'SELECT day, count(*) FROM days GROUP BY day ORDER BY day')).toBe(perDay);
    expect(await readFile(ws.configFile, 'utf8')).not.toContain(server!.password);
  }, 120_000);
});
