// Spark (3.5.9, Iceberg's Java readers) reads what the other Spark files leave out: a windowed table
// (`tilehouse backfill` of three days into writeMode partition) and a table on s3:// written with the
// storage credentials the REST catalog vends (vending-catalog.ts: Apache Iceberg's REST server behind
// a proxy that vends S3 keys; moto behind a front that takes only those). Spark, pyiceberg and DuckDB
// each read exactly the rows the CSVs of the same runs hold. One Spark session serves the file.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parse as parseCsv } from 'csv-parse/sync';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { SANDBOX_TILE } from '../../../sandbox/index.js';
import { runCli, sandboxEnv, summaryOf, writeWorkspace } from '../../support/cli-harness.js';
import { icebergPythonOrSkip, type PyicebergTable, readIceberg } from '../../support/iceberg-readers.js';
import { icebergRestLibOrSkip, type RunningIcebergRest, startIcebergRest } from '../../support/iceberg-rest-server.js';
import { type IcebergSpark, icebergSparkOrSkip, sparkS3Missing, startIcebergSpark } from '../../support/iceberg-spark.js';
import { incidentDaysQuery } from '../../support/queries.js';
import { describeWithS3, TEST_AWS_ENV, type TestS3 } from '../../support/s3-server.js';
import { sandboxAndRootForAll } from '../../support/sandbox-fixture.js';
import { describeUnless, missing } from '../../support/skip.js';
import { S3KeyIssuer, startVendingCatalogProxy, type VendingCatalogProxy } from '../../support/vending-catalog.js';
import { readBoth, sortedLines } from './iceberg-test-rows.js';

const python = icebergPythonOrSkip();
const lib = icebergRestLibOrSkip();
const spark = icebergSparkOrSkip();

// The REST server and one Spark session start at once (spark-interop's figures: 51 s at the slowest).
const START_TIMEOUT_MS = 360_000;
const TEST_TIMEOUT_MS = 600_000;

/** The CSV's rows (its header skipped) as the readers give text back: an unquoted empty field is null. */
function csvRows(csv: string): (string | null)[][] {
  return parseCsv(csv, { cast: (value, context) => (value === '' && !context.quoting ? null : value), from_line: 2 }) as (string | null)[][];
}

describeUnless(missing('the Iceberg readers', python) ?? missing('the Iceberg REST catalog server', lib) ?? missing('Spark with the Iceberg runtime', spark))(
  'Spark reads a windowed Iceberg table and one on s3:// written with vended credentials',
  () => {
    const fixture = sandboxAndRootForAll({ incidents: 4000, now: new Date('2026-07-05T12:00:00Z') });
    let session: IcebergSpark | undefined;
    let rest: RunningIcebergRest | undefined;
    let local: string;

    beforeAll(async () => {
      local = await mkdtemp(path.join(tmpdir(), 'tilehouse-spark-windows-s3-'));
      const [started, restServer] = await Promise.allSettled([startIcebergSpark(spark!), startIcebergRest(lib!)]);
      if (started.status === 'fulfilled') session = started.value;
      if (restServer.status === 'fulfilled') rest = restServer.value;
      if (started.status === 'rejected') throw started.reason;
      if (restServer.status === 'rejected') throw restServer.reason;
      // Not cached: Spark's catalog keeps a loaded table 30 s by default, and the tests commit beside it.
      await started.value.addCatalog('tilehouse_rest', { type: 'rest', uri: restServer.value.uri, 'cache-enabled': 'false' });
    }, START_TIMEOUT_MS);

    afterAll(async () => {
      await session?.stop();
      await rest?.stop();
      await rm(local, { recursive: true, force: true });
    });

    /** A workspace of `job` whose sinks.iceberg is `iceberg`, with the CLI bound to it. */
    async function workspace(name: string, job: Record<string, unknown>, iceberg: (ws: { root: string }) => Record<string, unknown>, source = {}) {
      const ws = await writeWorkspace(path.join(fixture.root, name), fixture.sandbox, [job], { concurrency: 1, ...source });
      const environment = parse(await readFile(ws.configFile, 'utf8')) as { sinks: Record<string, unknown> };
      Object.assign(environment.sinks, iceberg(ws));
      await writeFile(ws.configFile, stringify(environment));
      const cli = (args: string[]) => runCli([...args, '--config', ws.configFile, '--jobs', ws.jobsDir], { env: sandboxEnv(fixture.sandbox) });
      return { ws, cli };
    }

    it(
      'a backfill of three days into writeMode partition: Spark reads every window, and its snapshots carry each window',
      async () => {
        const table = 'spark_windows.days';
        const job = {
          name: 'spark_days',
          tile: SANDBOX_TILE,
          query: { ...incidentDaysQuery, options: { pageNumber: 0, itemsPerPage: 5 } },
          columns: { Number: { type: 'INT64' }, Day: { type: 'DATE' } },
          backfill: { item: 'day', bucketColumn: 'Day' },
          sinks: [
            { type: 'csv', path: 'days/{date}.csv', manifest: true },
            { type: 'iceberg', table, writeMode: 'partition', partitionBy: { column: 'Day' } },
          ],
        };
        const { ws, cli } = await workspace(
          'windows',
          job,
          () => ({
            iceberg: { catalog: { type: 'rest', uri: rest!.uri }, location: path.join(local, 'windows') },
          }),
          { itemsPerPage: 5 },
        );
        const days = ['2026-07-01', '2026-07-02', '2026-07-03'];
        const result = await cli(['backfill', '--job', job.name, '--from', days[0]!, '--to', '2026-07-04', '--run-id', 'backfill-1', '--json']);
        expect(result.exitCode, result.stderr).toBe(0);
        expect((JSON.parse(result.stdout) as { windows: Array<{ window: { from: string } }> }).windows.map((window) => window.window.from)).toEqual(days);

        const expected = (await Promise.all(days.map(async (day) => csvRows(await readFile(path.join(ws.outDir, 'days', `${day}.csv`), 'utf8'))))).flat();
        expect(expected.length).toBeGreaterThan(days.length);
        const columns = ['number', 'day', 'severity'];
        const bySpark = await session!.read(`tilehouse_rest.${table}`);
        const reader: PyicebergTable = { catalog: { type: 'rest', uri: rest!.uri }, table };
        const { pyiceberg, duckdb } = await readBoth(python!, reader);
        expect({ spark: bySpark.columns, pyiceberg: pyiceberg.columns, duckdb: duckdb.columns }).toEqual({
          spark: columns,
          pyiceberg: columns,
          duckdb: columns,
        });
        expect(bySpark.types).toEqual(['bigint', 'date', 'string']);
        expect(sortedLines(bySpark.rows), 'Spark reads the CSV rows').toEqual(sortedLines(expected));
        expect(bySpark.count, "Spark's COUNT(*) from the manifests").toBe(expected.length);
        expect(sortedLines(pyiceberg.rows)).toEqual(sortedLines(expected));
        expect(sortedLines(duckdb.rows)).toEqual(sortedLines(expected));

        // Each window is a snapshot of its own, as Iceberg's Java library reads the metadata.
        const snapshots = await session!.snapshots(`tilehouse_rest.${table}`);
        expect(
          snapshots.snapshots
            .map((snapshot) => [snapshot.summary['tilehouse.window-from'], snapshot.summary['tilehouse.window-to'], snapshot.operation])
            .sort(),
        ).toEqual(days.map((day) => [day, new Date(Date.parse(day) + 86_400_000).toISOString().slice(0, 10), 'overwrite']));
        const partitions = await session!.partitions(`tilehouse_rest.${table}`);
        expect(partitions.partitioning).toEqual(['days(day)']);
        expect(partitions.files.map((file) => file.partition).sort()).toEqual(days.map((day) => `day_day=${day}`));
      },
      TEST_TIMEOUT_MS,
    );

    describeUnless(sparkS3Missing(spark))('a table on s3://', () => {
      describeWithS3('written with the keys the catalog vends', (s3: TestS3) => {
        let catalog: VendingCatalogProxy | undefined;
        afterEach(async () => {
          s3.proxy.admit(undefined);
          await catalog?.close();
        });

        it(
          'Spark (S3FileIO), pyiceberg and DuckDB read exactly the CSV rows of the run',
          async () => {
            const issuer = new S3KeyIssuer();
            catalog = await startVendingCatalogProxy(rest!.uri, issuer, {
              shape: 'storage-credentials',
              advertiseCredentialsEndpoint: true,
              s3Endpoint: s3.endpoint,
            });
            // The environment's key pair is refused: the table's files can only go with the vended keys.
            s3.proxy.admit(issuer.admission({ accessKeyId: TEST_AWS_ENV.AWS_ACCESS_KEY_ID, admitted: false }));
            const bucket = await s3.newBucket('spark-vended');
            const table = 'spark_s3.incidents';
            const job = {
              name: 'spark_s3',
              tile: SANDBOX_TILE,
              // The last hundred incidents.
              query: {
                ...incidentDaysQuery,
                items: incidentDaysQuery.items.map((item, index) => (index === 0 ? { ...item, filters: [{ operator: 'gt', values: ['3900'] }] } : item)),
              },
              columns: { Number: { type: 'INT64' }, Day: { type: 'DATE' } },
              sinks: [
                { type: 'csv', path: '{name}-{runId}.csv' },
                { type: 'iceberg', table },
              ],
            };
            const { ws, cli } = await workspace('s3', job, () => ({
              s3: { endpoint: s3.endpoint, region: TEST_AWS_ENV.AWS_REGION },
              iceberg: {
                catalog: {
                  type: 'rest',
                  uri: catalog!.uri,
                  accessDelegation: 'vended-credentials',
                  // The test server has no S3 file IO: its metadata JSON stays on this machine.
                  tableProperties: { 'write.metadata.path': pathToFileURL(path.join(local, 's3-metadata')).href },
                },
                location: `s3://${bucket}/warehouse`,
              },
            }));
            const run = await cli(['run', '--run-id', 'night-1', '--json']);
            expect(run.exitCode, run.stderr).toBe(0);
            expect(s3.proxy.refused).toEqual([]);
            expect(issuer.issued.length).toBeGreaterThanOrEqual(1);
            const rows = summaryOf(run.stdout, 'run').tiles[0]!.outputs.find((output) => output.sink === 'iceberg')!.rows;
            const expected = csvRows(await readFile(path.join(ws.outDir, `${job.name}-night-1.csv`), 'utf8'));
            expect(expected).toHaveLength(rows);
            expect(rows).toBeGreaterThan(0);

            // Spark's own reach to the bucket: S3FileIO for s3://, Hadoop's for the metadata JSON's file: location.
            await session!.addCatalog('tilehouse_s3', {
              type: 'rest',
              uri: rest!.uri,
              'cache-enabled': 'false',
              'io-impl': 'org.apache.iceberg.io.ResolvingFileIO',
              's3.endpoint': s3.serverOrigin,
              's3.path-style-access': 'true',
              's3.access-key-id': TEST_AWS_ENV.AWS_ACCESS_KEY_ID,
              's3.secret-access-key': TEST_AWS_ENV.AWS_SECRET_ACCESS_KEY,
              'client.region': TEST_AWS_ENV.AWS_REGION,
            });
            const bySpark = await session!.read(`tilehouse_s3.${table}`);
            const described = await readIceberg(python!, 'pyiceberg-table', {
              catalog: {
                type: 'rest',
                uri: rest!.uri,
                's3.endpoint': s3.serverOrigin,
                's3.access-key-id': TEST_AWS_ENV.AWS_ACCESS_KEY_ID,
                's3.secret-access-key': TEST_AWS_ENV.AWS_SECRET_ACCESS_KEY,
                's3.region': TEST_AWS_ENV.AWS_REGION,
              },
              table,
            });
            expect(described.location).toBe(`s3://${bucket}/warehouse/spark_s3/incidents`);
            const { pyiceberg, duckdb } = await readBoth(
              python!,
              {
                catalog: {
                  type: 'rest',
                  uri: rest!.uri,
                  's3.endpoint': s3.serverOrigin,
                  's3.access-key-id': TEST_AWS_ENV.AWS_ACCESS_KEY_ID,
                  's3.secret-access-key': TEST_AWS_ENV.AWS_SECRET_ACCESS_KEY,
                  's3.region': TEST_AWS_ENV.AWS_REGION,
                },
                table,
              },
              { endpoint: s3.serverOrigin, region: TEST_AWS_ENV.AWS_REGION, keyId: TEST_AWS_ENV.AWS_ACCESS_KEY_ID, secret: TEST_AWS_ENV.AWS_SECRET_ACCESS_KEY },
            );
            const columns = ['number', 'day', 'severity'];
            expect({ spark: bySpark.columns, pyiceberg: pyiceberg.columns, duckdb: duckdb.columns }).toEqual({
              spark: columns,
              pyiceberg: columns,
              duckdb: columns,
            });
            expect(sortedLines(bySpark.rows), 'Spark reads the CSV rows').toEqual(sortedLines(expected));
            expect(bySpark.count).toBe(expected.length);
            expect(sortedLines(pyiceberg.rows)).toEqual(sortedLines(expected));
            expect(sortedLines(duckdb.rows)).toEqual(sortedLines(expected));
          },
          TEST_TIMEOUT_MS,
        );
      });
    });
  },
);
