// tilehouse run (a CSV sink and an iceberg sink) through a catalog that misbehaves in one way per
// test: the Apache Iceberg REST server behind a proxy that answers a commit 409, loses its answer
// after the server applied it (503), cuts it and stays unreachable, or stalls it past the
// catalog's requestTimeoutMs; the JDBC catalog on the suite's PostgreSQL behind a proxy that cuts
// the connection right after the commit's UPDATE reached the server. Exit codes, the lines a
// person reads, and the table as pyiceberg and DuckDB read it.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { exitWithin, spawnCli } from '../../support/child-process.js';
import { runCli, sandboxEnv, summaryOf } from '../../support/cli-harness.js';
import { icebergPythonOrSkip, type PyicebergTable } from '../../support/iceberg-readers.js';
import { icebergRestLibOrSkip, type RunningIcebergRest, startIcebergRest } from '../../support/iceberg-rest-server.js';
import { type PostgresProxy, startPostgresProxy } from '../../support/postgres-proxy.js';
import { postgresBlocker, postgresOrSkip, TEST_PASSWORD_VARIABLE, usePostgresDatabase } from '../../support/postgres.js';
import { sandboxAndRootForAll } from '../../support/sandbox-fixture.js';
import { describeUnless, missing } from '../../support/skip.js';
import { csvRows, faultJob, icebergWorkspace, type RestCommitProxy, startRestCommitProxy, tableState } from './iceberg-cli-support.js';
import { sortedLines } from './iceberg-test-rows.js';

const lib = icebergRestLibOrSkip();
const python = icebergPythonOrSkip();
const server = postgresOrSkip();
const TEST_MS = 240_000;

describeUnless(missing('the Iceberg REST catalog server', lib) ?? missing('the Iceberg readers', python) ?? postgresBlocker(server))(
  'tilehouse run into an Iceberg table through a misbehaving catalog',
  () => {
    const fixture = sandboxAndRootForAll({ incidents: 30 });
    const database = usePostgresDatabase(server!);
    let rest: RunningIcebergRest | undefined;
    let proxy: RestCommitProxy;
    let pgProxy: PostgresProxy;
    let warehouse: string;
    beforeAll(async () => {
      warehouse = await mkdtemp(path.join(tmpdir(), 'tilehouse-iceberg-faults-'));
      rest = await startIcebergRest(lib!);
      proxy = await startRestCommitProxy(rest.uri);
      pgProxy = await startPostgresProxy({ host: server!.host, port: server!.port });
    }, 180_000);
    afterAll(async () => {
      await proxy?.close();
      await pgProxy?.stop();
      await rest?.stop();
      await rm(warehouse, { recursive: true, force: true });
    });

    /** A workspace of one job into `ns.name` through the REST proxy (requestTimeoutMs 4 s) or the JDBC proxy. */
    async function setUp(name: string, catalog: 'rest' | 'jdbc', mode: 'replace' | 'append' = 'replace', options: { table?: string; above?: number } = {}) {
      const table = `faults_${catalog}.${options.table ?? name}`;
      const job = `job_${name}`;
      const settings =
        catalog === 'rest'
          ? { type: 'rest', uri: proxy.origin, requestTimeoutMs: 4_000 }
          : {
              type: 'jdbc',
              catalogName: 'tilehouse_faults',
              host: '127.0.0.1',
              port: pgProxy.port,
              database: database.name,
              user: server!.user,
              password: `\${${TEST_PASSWORD_VARIABLE}}`,
              sslmode: 'disable',
            };
      const ws = await icebergWorkspace(path.join(fixture.root, name), fixture.sandbox, [faultJob(job, table, mode, options.above)], {
        catalog: settings,
        location: path.join(warehouse, options.table ?? name),
      });
      const env = { ...sandboxEnv(fixture.sandbox), [TEST_PASSWORD_VARIABLE]: server!.password };
      // The catalog's password reference is resolved from the process's environment.
      process.env[TEST_PASSWORD_VARIABLE] = server!.password;
      const reader: PyicebergTable =
        catalog === 'rest'
          ? { catalog: { type: 'rest', uri: rest!.uri }, table }
          : {
              catalog: {
                type: 'sql',
                uri: `postgresql+psycopg2://${encodeURIComponent(server!.user)}:${encodeURIComponent(server!.password)}@${server!.host}:${server!.port}/${database.name}`,
              },
              catalogName: 'tilehouse_faults',
              table,
            };
      const run = async (runId: string) => {
        const result = await runCli(['run', '--run-id', runId, '--json', '--config', ws.configFile, '--jobs', ws.jobsDir], { env });
        return { ...result, summary: summaryOf(result.stdout, 'run') };
      };
      const spawned = async (runId: string) => {
        const child = spawnCli(['run', '--run-id', runId, '--json', '--config', ws.configFile, '--jobs', ws.jobsDir], {
          env: { ...process.env, ...env },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        const out: Buffer[] = [];
        const err: Buffer[] = [];
        child.stdout!.on('data', (chunk: Buffer) => out.push(chunk));
        child.stderr!.on('data', (chunk: Buffer) => err.push(chunk));
        const exit = await exitWithin(child, 120_000);
        return { exitCode: exit.code, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') };
      };
      return { ws, job, table, reader, run, spawned };
    }

    it(
      'REST: a commit answered 409 once (another writer won) is re-applied and lands once; exit 0',
      async () => {
        const { ws, job, reader, run } = await setUp('conflict', 'rest');
        proxy.faults.splice(0, proxy.faults.length, 'conflict');
        const before = proxy.commits;
        const result = await run('conflict-1');
        expect(result.exitCode, result.stderr).toBe(0);
        expect(proxy.commits - before, 'the refused commit and its retry').toBe(2);
        const tile = result.summary.tiles[0]!;
        expect(tile.outputs.find((output) => output.sink === 'iceberg')).toMatchObject({ rows: 30, details: { tries: 2 } });
        const state = await tableState(python!, reader);
        expect(state.runIds).toEqual(['conflict-1']);
        expect(state.rows).toEqual(sortedLines(await csvRows(ws, job, 'conflict-1')));
      },
      TEST_MS,
    );

    it(
      'REST: a commit applied but answered 503 is judged by reading the table: success reported once, one snapshot; exit 0',
      async () => {
        const { ws, job, reader, run } = await setUp('lost503', 'rest', 'append');
        proxy.faults.splice(0, proxy.faults.length, 'lost-503');
        const before = proxy.commits;
        const result = await run('lost-1');
        expect(result.exitCode, result.stderr).toBe(0);
        expect(proxy.commits - before, 'the commit is not sent again').toBe(1);
        const outputs = result.summary.tiles[0]!.outputs.filter((output) => output.sink === 'iceberg');
        expect(outputs).toHaveLength(1);
        expect(outputs[0]).toMatchObject({ rows: 30, details: { tries: 1 } });
        const state = await tableState(python!, reader);
        expect(state.runIds).toEqual(['lost-1']);
        expect(state.rows).toEqual(sortedLines(await csvRows(ws, job, 'lost-1', true)));
      },
      TEST_MS,
    );

    it(
      'REST: a commit stalled past requestTimeoutMs after the server applied it is judged by reading the table; exit 0, one snapshot',
      async () => {
        const { ws, job, reader, run } = await setUp('stall', 'rest');
        proxy.faults.splice(0, proxy.faults.length, 'stall');
        const before = proxy.commits;
        const result = await run('stall-1');
        expect(result.exitCode, result.stderr).toBe(0);
        expect(proxy.commits - before).toBe(1);
        expect(result.summary.tiles[0]!.outputs.find((output) => output.sink === 'iceberg')).toMatchObject({ rows: 30 });
        const state = await tableState(python!, reader);
        expect(state.runIds).toEqual(['stall-1']);
        expect(state.rows).toEqual(sortedLines(await csvRows(ws, job, 'stall-1')));
      },
      TEST_MS,
    );

    it(
      'REST: a commit cut after it reached the server, the catalog unreachable after: publish_outcome_unknown names the run id and how to settle it; the re-run with that run id commits nothing',
      async () => {
        const { ws, job, reader, run } = await setUp('cut', 'rest');
        proxy.faults.splice(0, proxy.faults.length, 'cut');
        const before = { commits: proxy.commits, forwarded: proxy.forwarded };
        const result = await run('cut-1');
        proxy.unreachable = false;
        expect(proxy.forwarded - before.forwarded, 'the commit reached the server').toBe(1);
        // The iceberg sink publishes first; its outcome unknown with the CSV after it is a possible partial publish.
        expect(result.exitCode, result.stderr).toBe(3);
        const tile = result.summary.tiles[0]!;
        expect(tile.status).toBe('partially_published');
        expect(result.stderr).toContain('publish_outcome_unknown');
        expect(result.stderr).toContain('tilehouse.run-id cut-1');
        expect(result.stderr).toContain('--run-id cut-1');
        expect(result.stderr).toContain('the commit got no answer and the table could not be read afterwards');
        expect(result.stderr).toContain('outcome unknown (new run or previous, look before re-running): faults_rest.cut');
        expect(result.stderr).toContain('published (new run): none');
        // The CSV after it was not published (its `unpublished`): the run's rows are the re-run's CSV.
        expect(tile.outputs.map((output) => output.sink)).toEqual([]);
        const landed = await tableState(python!, reader);
        expect(landed.runIds).toEqual(['cut-1']);

        const commitsBefore = proxy.commits;
        const again = await run('cut-1');
        expect(again.exitCode, again.stderr).toBe(0);
        expect(proxy.commits - commitsBefore, 'the re-run commits nothing').toBe(0);
        expect(again.summary.tiles[0]!.outputs.find((output) => output.sink === 'iceberg')).toMatchObject({ rows: 30 });
        const after = await tableState(python!, reader);
        expect(after.runIds).toEqual(['cut-1']);
        expect(after.metadataLocation).toBe(landed.metadataLocation);
        expect(after.rows).toEqual(sortedLines(await csvRows(ws, job, 'cut-1')));
        expect(landed.rows).toEqual(after.rows);
      },
      TEST_MS,
    );

    it(
      "JDBC: the connection cut right after the commit's UPDATE reached PostgreSQL is judged by reading the table: exit 0, one snapshot",
      async () => {
        const { ws, job, reader, run } = await setUp('jdbclost', 'jdbc', 'append');
        let updateSeen = false;
        let cutsWanted = 1;
        pgProxy.rule((message) => {
          if (message.type === 'P' && message.body.includes('UPDATE iceberg_tables')) updateSeen = true;
          if (updateSeen && message.type === 'S' && cutsWanted > 0) {
            updateSeen = false;
            cutsWanted -= 1;
            return 'cut-after';
          }
          return 'pass';
        });
        const cuts = pgProxy.cuts;
        const result = await run('jdbc-lost-1');
        pgProxy.rule(() => 'pass');
        expect(pgProxy.cuts - cuts, "the UPDATE's answer was cut").toBe(1);
        expect(result.exitCode, result.stderr).toBe(0);
        expect(result.summary.tiles[0]!.outputs.find((output) => output.sink === 'iceberg')).toMatchObject({ rows: 30 });
        const state = await tableState(python!, reader);
        expect(state.runIds).toEqual(['jdbc-lost-1']);
        expect(state.rows).toEqual(sortedLines(await csvRows(ws, job, 'jdbc-lost-1', true)));
      },
      TEST_MS,
    );

    for (const catalog of ['rest', 'jdbc'] as const)
      for (const mode of ['replace', 'append'] as const)
        it(
          `${catalog}, ${mode}: two runs at once into one table (two processes, different run ids) both land in some order, or one refuses cleanly; the readers agree`,
          async () => {
            const name = `twice_${mode}`;
            const a = await setUp(`${name}_a`, catalog, mode, { table: name, above: 0 });
            const b = await setUp(`${name}_b`, catalog, mode, { table: name, above: 10 });
            // The REST proxy holds the first commit until the second arrives: both are tried on one parent.
            if (catalog === 'rest') proxy.barrier = 2;
            const commitsBefore = proxy.commits;
            const [first, second] = await Promise.all([a.spawned(`${name}-a`), b.spawned(`${name}-b`)]);
            proxy.barrier = 0;
            const results = [first, second];
            for (const result of results) {
              if (result.exitCode !== 0) {
                expect(result.exitCode, result.stderr).toBe(1);
                expect(result.stderr).toContain('iceberg_commit_conflict');
              }
            }
            const landed = [
              ...(first.exitCode === 0 ? [{ runId: `${name}-a`, side: a }] : []),
              ...(second.exitCode === 0 ? [{ runId: `${name}-b`, side: b }] : []),
            ];
            expect(landed.length, 'at least one run lands').toBeGreaterThan(0);
            const state = await tableState(python!, a.reader);
            expect([...state.runIds].sort()).toEqual(landed.map((run) => run.runId).sort());
            const csvs = new Map<string, (string | null)[][]>();
            for (const run of landed) csvs.set(run.runId, await csvRows(run.side.ws, run.side.job, run.runId, mode === 'append'));
            if (mode === 'append') expect(state.rows).toEqual(sortedLines([...csvs.values()].flat()));
            else expect(state.rows).toEqual(sortedLines(csvs.get(state.runIds.at(-1)!)!));
            if (catalog === 'rest') {
              expect(landed, 'both held commits land').toHaveLength(2);
              expect(proxy.commits - commitsBefore, 'the two held commits collided: the loser re-applied once').toBe(3);
            }
          },
          TEST_MS,
        );
  },
);
