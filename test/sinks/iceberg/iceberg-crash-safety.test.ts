// tilehouse run (a CSV sink and an iceberg sink) killed with SIGKILL at seeded moments, through
// each catalog, as test/pipeline/crash-safety.test.ts and parquet-crash-safety.test.ts do for
// files: the real CLI as a child process, killed after a seeded page of the export, while its
// commit is on its way to the catalog (never sent), or once the catalog applied it (the answer
// never read). After each kill pyiceberg and DuckDB read the table, agree, and hold the previous
// night's rows or the killed run's; the run re-run with the same run id is exact (it commits
// only when the killed one did not land). The killed run's unreferenced files are left for a run
// past `orphanMinAgeHours` (docs/iceberg.md), so the folder keeps them but no reader sees them.
import { once } from 'node:events';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { spawnCli } from '../../support/child-process.js';
import { runCli, sandboxEnv } from '../../support/cli-harness.js';
import { seededRandom } from '../../support/gcs-kill.js';
import { icebergPythonOrSkip, type PyicebergTable, readIceberg } from '../../support/iceberg-readers.js';
import { icebergRestLibOrSkip, type RunningIcebergRest, startIcebergRest } from '../../support/iceberg-rest-server.js';
import { type PostgresProxy, startPostgresProxy } from '../../support/postgres-proxy.js';
import { postgresBlocker, postgresOrSkip, TEST_PASSWORD_VARIABLE, usePostgresDatabase } from '../../support/postgres.js';
import { sandboxAndRootForAll } from '../../support/sandbox-fixture.js';
import { describeUnless, missing } from '../../support/skip.js';
import { csvRows, faultJob, icebergWorkspace, type RestCommitProxy, startRestCommitProxy } from './iceberg-cli-support.js';
import { sortedLines } from './iceberg-test-rows.js';

const lib = icebergRestLibOrSkip();
const python = icebergPythonOrSkip();
const server = postgresOrSkip();

const KILLS = 9;
/** Of the KILLS: the first in the export at a seeded page, then two with the commit unsent, two with it applied. */
const EXPORT_KILLS = KILLS - 4;
const INCIDENTS = 60;
const PAGES = 10;
const TEST_MS = 900_000;

type Moment = { phase: 'export'; page: number } | { phase: 'commit-unsent' | 'commit-applied' };

function momentOf(kill: number, random: () => number): Moment {
  if (kill < EXPORT_KILLS) return { phase: 'export', page: Math.floor(((kill + random()) * (PAGES + 1)) / EXPORT_KILLS) };
  return { phase: kill < EXPORT_KILLS + 2 ? 'commit-unsent' : 'commit-applied' };
}

/** The table as pyiceberg and DuckDB read it (they must agree), without `_extracted_at`, and its snapshots' run ids. */
async function readTable(table: PyicebergTable, what: string): Promise<{ rows: string[]; runIds: (string | undefined)[] }> {
  const [scan, described] = await Promise.all([readIceberg(python!, 'pyiceberg-scan', table), readIceberg(python!, 'pyiceberg-table', table)]);
  const duckdb = await readIceberg(python!, 'duckdb-scan', { metadata: described.metadataLocation });
  expect(duckdb.columns, what).toEqual(scan.columns);
  const keep = scan.columns.map((name, index) => (name === '_extracted_at' ? -1 : index)).filter((index) => index >= 0);
  const project = (rows: (string | null)[][]) => sortedLines(rows.map((row) => keep.map((index) => row[index]!)));
  const rows = project(scan.rows);
  expect(project(duckdb.rows), `${what}: DuckDB reads the rows pyiceberg reads`).toEqual(rows);
  return { rows, runIds: described.snapshots.map((snapshot) => snapshot.summary['tilehouse.run-id']) };
}

describeUnless(missing('the Iceberg REST catalog server', lib) ?? missing('the Iceberg readers', python) ?? postgresBlocker(server))(
  'tilehouse run into an Iceberg table killed with SIGKILL',
  () => {
    // 10 pages of 6 rows, 15 ms each, one at a time: a run lasts long enough to be killed in its export.
    const fixture = sandboxAndRootForAll({ incidents: INCIDENTS, latencyMs: 15 });
    const database = usePostgresDatabase(server!);
    let rest: RunningIcebergRest | undefined;
    let proxy: RestCommitProxy;
    let pgProxy: PostgresProxy;
    let warehouse: string;
    beforeAll(async () => {
      warehouse = await mkdtemp(path.join(tmpdir(), 'tilehouse-iceberg-kills-'));
      rest = await startIcebergRest(lib!);
      proxy = await startRestCommitProxy(rest.uri);
      pgProxy = await startPostgresProxy({ host: server!.host, port: server!.port });
      process.env[TEST_PASSWORD_VARIABLE] = server!.password;
    }, 180_000);
    afterAll(async () => {
      await proxy?.close();
      await pgProxy?.stop();
      await rest?.stop();
      await rm(warehouse, { recursive: true, force: true });
    });

    for (const [catalog, mode, seed] of [
      ['rest', 'replace', 20261202],
      ['jdbc', 'append', 20261203],
    ] as const)
      it(
        `${catalog}, ${mode}: at ${KILLS} seeded moments the table is the previous snapshot or the killed run's, both readers agree, and the re-run of its run id is exact`,
        async () => {
          const table = `kills_${catalog}.incidents`;
          const job = `kills_${catalog}`;
          const settings =
            catalog === 'rest'
              ? { type: 'rest', uri: proxy.origin }
              : {
                  type: 'jdbc',
                  catalogName: 'tilehouse_kills',
                  host: '127.0.0.1',
                  port: pgProxy.port,
                  database: database.name,
                  user: server!.user,
                  password: `\${${TEST_PASSWORD_VARIABLE}}`,
                  sslmode: 'disable',
                };
          const location = path.join(warehouse, catalog);
          const ws = await icebergWorkspace(
            path.join(fixture.root, catalog),
            fixture.sandbox,
            [faultJob(job, table, mode)],
            { catalog: settings, location },
            { itemsPerPage: INCIDENTS / PAGES, concurrency: 1 },
          );
          const env = { ...sandboxEnv(fixture.sandbox), [TEST_PASSWORD_VARIABLE]: server!.password };
          const reader: PyicebergTable =
            catalog === 'rest'
              ? { catalog: { type: 'rest', uri: rest!.uri }, table }
              : {
                  catalog: {
                    type: 'sql',
                    uri: `postgresql+psycopg2://${encodeURIComponent(server!.user)}:${encodeURIComponent(server!.password)}@${server!.host}:${server!.port}/${database.name}`,
                  },
                  catalogName: 'tilehouse_kills',
                  table,
                };
          const args = (runId: string) => ['run', '--run-id', runId, '--config', ws.configFile, '--jobs', ws.jobsDir];
          /** The job exports incidents above 0 (60 rows) or above 20 (40 rows): each night differs from the one before. */
          const setNight = (above: number) => writeFile(path.join(ws.jobsDir, `${job}.yaml`), stringify(faultJob(job, table, mode, above)));
          const lineage = mode === 'append';

          const first = await runCli(args('night-0'), { env });
          expect(first.exitCode, first.stderr).toBe(0);
          let expected = sortedLines(await csvRows(ws, job, 'night-0', lineage));
          expect(expected).toHaveLength(INCIDENTS);
          expect((await readTable(reader, 'the first night')).rows).toEqual(expected);

          const random = seededRandom(seed);
          const seen = { previous: 0, killed: 0, leftFiles: 0 };
          for (let kill = 0; kill < KILLS; kill += 1) {
            const runId = `kill-${kill}`;
            await setNight(kill % 2 === 0 ? 20 : 0);
            const moment = momentOf(kill, random);
            const before = fixture.sandbox.requests.length;
            const child = spawnCli(args(runId), { env: { ...process.env, ...env }, stdio: 'ignore' });
            let exitedAlready = false;
            const exited = once(child, 'exit').then(() => (exitedAlready = true));
            const killNow = () => child.kill('SIGKILL');
            if (moment.phase === 'export') {
              const pagesRequested = () => fixture.sandbox.requests.slice(before).filter((request) => request.endpoint === 'export').length;
              while (!exitedAlready && pagesRequested() < moment.page) await sleep(2);
              killNow();
            } else if (catalog === 'rest') {
              // The proxy holds the commit unsent (drop) or applied with its answer held (stall), and kills the writer there.
              proxy.faults.splice(0, proxy.faults.length, moment.phase === 'commit-unsent' ? 'drop' : 'stall');
              proxy.onCommit = killNow;
            } else {
              // The UPDATE that commits: dropped with the connection (never applied), or passed on as the writer dies.
              let update = false;
              pgProxy.rule((message) => {
                if (message.type === 'P' && message.body.includes('UPDATE iceberg_tables')) update = true;
                if (!update || message.type !== 'S') return 'pass';
                update = false;
                killNow();
                pgProxy.rule(() => 'pass');
                return moment.phase === 'commit-unsent' ? 'cut-before' : 'pass';
              });
            }
            await exited;
            proxy.onCommit = undefined;
            proxy.faults.splice(0);
            pgProxy.rule(() => 'pass');
            // A kill after the last page may come after the run ended on its own: then it succeeded.
            if (moment.phase === 'export' && child.signalCode === null) expect(child.exitCode, `kill ${kill}: a run that outran its kill`).toBe(0);
            else expect(child.signalCode, `kill ${kill} (${moment.phase}): the writer was killed, not finished`).toBe('SIGKILL');

            const afterKill = await readTable(reader, `kill ${kill} (${moment.phase})`);
            const previous = expected;
            const files = await readdir(path.join(location, 'kills_' + catalog, 'incidents', 'data')).catch(() => [] as string[]);
            if (files.some((name) => name.startsWith(`${runId}-`))) seen.leftFiles += 1;

            const rerun = await runCli(args(runId), { env });
            expect(rerun.exitCode, rerun.stderr).toBe(0);
            const night = sortedLines(await csvRows(ws, job, runId, lineage));
            expected =
              mode === 'append'
                ? sortedLines([...previous.map((line) => JSON.parse(line) as (string | null)[]), ...night.map((line) => JSON.parse(line) as (string | null)[])])
                : night;
            if (afterKill.rows.length === previous.length && afterKill.rows.every((line, index) => line === previous[index])) {
              expect(afterKill.runIds, `kill ${kill}: the previous snapshot is the current one`).not.toContain(runId);
              seen.previous += 1;
            } else {
              expect(afterKill.rows, `kill ${kill} (${moment.phase}) left a table that is neither the previous night nor the killed run's`).toEqual(expected);
              expect(afterKill.runIds.at(-1)).toBe(runId);
              seen.killed += 1;
            }
            const afterRerun = await readTable(reader, `the re-run of kill ${kill}`);
            expect(afterRerun.rows, `the re-run of kill ${kill} (${moment.phase}) is exact`).toEqual(expected);
            expect(
              afterRerun.runIds.filter((id) => id === runId),
              'one snapshot of the run id',
            ).toHaveLength(1);
          }
          // The seeded moments hit both outcomes, and runs killed after their data file began left it (unreferenced) for later.
          expect(seen.previous).toBeGreaterThan(0);
          expect(seen.killed).toBeGreaterThan(0);
          expect(seen.leftFiles).toBeGreaterThan(0);
        },
        TEST_MS,
      );
  },
);
