// tilehouse run with an iceberg sink whose warehouse is an s3:// prefix (moto, behind the test
// proxy), configured as a user configures it: `sinks.iceberg.location: s3://bucket/warehouse` and
// `sinks.s3.endpoint`, the credentials from the AWS chain. Through the JDBC catalog on the suite's
// PostgreSQL and Apache Iceberg's REST server, pyiceberg and DuckDB read back exactly the rows of the
// CSV the same run wrote; `check` writes and removes its probe in the bucket; `status` names the run.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { SANDBOX_TILE } from '../../../sandbox/index.js';
import { runCli, sandboxEnv, summaryOf, writeWorkspace } from '../../support/cli-harness.js';
import { icebergPythonOrSkip, type PyicebergTable, readIceberg } from '../../support/iceberg-readers.js';
import { icebergRestLibOrSkip, type RunningIcebergRest, startIcebergRest } from '../../support/iceberg-rest-server.js';
import { postgresBlocker, postgresOrSkip, TEST_PASSWORD_VARIABLE, usePostgresDatabase } from '../../support/postgres.js';
import { describeWithS3, keysOf, TEST_AWS_ENV } from '../../support/s3-server.js';
import { sandboxAndRootForAll } from '../../support/sandbox-fixture.js';
import { describeUnless, missing } from '../../support/skip.js';
import { COLUMN_TYPES, csvAsReaderText, EXPECTED_COLUMNS, typedQueryAbove } from './iceberg-run-job.js';
import { readBoth, sortedLines } from './iceberg-test-rows.js';

const lib = icebergRestLibOrSkip();
const python = icebergPythonOrSkip();
const server = postgresOrSkip();

const READS_TIMEOUT_MS = 600_000;

describeUnless(missing('the Iceberg REST catalog server', lib) ?? missing('the Iceberg readers', python) ?? postgresBlocker(server))(
  'tilehouse run into an Iceberg table on s3:// beside a CSV',
  () => {
    const fixture = sandboxAndRootForAll({ incidents: 60 });
    const database = usePostgresDatabase(server!);
    let rest: RunningIcebergRest | undefined;
    let local: string;
    beforeAll(async () => {
      local = await mkdtemp(path.join(tmpdir(), 'tilehouse-iceberg-runs-s3-'));
      rest = await startIcebergRest(lib!);
    }, 180_000);
    afterAll(async () => {
      await rest?.stop();
      await rm(local, { recursive: true, force: true });
    });

    describeWithS3('a warehouse in a bucket', (s3) => {
      const s3Properties = () => ({
        's3.endpoint': s3.serverOrigin,
        's3.access-key-id': TEST_AWS_ENV.AWS_ACCESS_KEY_ID,
        's3.secret-access-key': TEST_AWS_ENV.AWS_SECRET_ACCESS_KEY,
        's3.region': TEST_AWS_ENV.AWS_REGION,
      });
      const duckdbS3 = () => ({
        endpoint: s3.serverOrigin,
        region: TEST_AWS_ENV.AWS_REGION,
        keyId: TEST_AWS_ENV.AWS_ACCESS_KEY_ID,
        secret: TEST_AWS_ENV.AWS_SECRET_ACCESS_KEY,
      });
      const catalogs = [
        {
          name: 'jdbc',
          // The JDBC catalog's metadata files are the writer's own: all of the table is in the bucket.
          settings: () => ({
            type: 'jdbc',
            catalogName: 'tilehouse_s3_runs',
            host: server!.host,
            port: server!.port,
            database: database.name,
            user: server!.user,
            password: `\${${TEST_PASSWORD_VARIABLE}}`,
            sslmode: 'disable',
          }),
          reader: (table: string, bucket: string): PyicebergTable => ({
            catalog: {
              type: 'sql',
              uri: `postgresql+psycopg2://${encodeURIComponent(server!.user)}:${encodeURIComponent(server!.password)}@${server!.host}:${server!.port}/${database.name}`,
              warehouse: `s3://${bucket}/warehouse`,
              ...s3Properties(),
            },
            catalogName: 'tilehouse_s3_runs',
            table,
          }),
          env: (): Record<string, string> => ({ [TEST_PASSWORD_VARIABLE]: server!.password }),
          metadataInBucket: true,
        },
        {
          name: 'rest',
          // The test server has no S3 file IO: its metadata JSON stays on this machine (the table
          // property the environment gives new tables); the data files, manifests and lists are in the bucket.
          settings: () => ({
            type: 'rest',
            uri: rest!.uri,
            tableProperties: { 'write.metadata.path': pathToFileURL(path.join(local, 'rest-metadata')).href },
          }),
          reader: (table: string): PyicebergTable => ({ catalog: { type: 'rest', uri: rest!.uri, ...s3Properties() }, table }),
          env: (): Record<string, string> => ({}),
          metadataInBucket: false,
        },
      ] as const;

      for (const catalog of catalogs) {
        describe(`through the ${catalog.name} catalog`, () => {
          it(
            "two nights: the table in the bucket holds exactly each night's CSV rows; check probes the bucket and leaves nothing; status names the run",
            async () => {
              const bucket = await s3.newBucket(`ice-run-${catalog.name}`);
              const table = `s3_${catalog.name}.incidents`;
              const job = (above: number) => ({
                name: `nightly_s3_${catalog.name}`,
                tile: SANDBOX_TILE,
                query: typedQueryAbove(above),
                columns: COLUMN_TYPES,
                sinks: [
                  { type: 'csv', path: '{name}-{runId}.csv' },
                  { type: 'iceberg', table },
                ],
              });
              const ws = await writeWorkspace(path.join(fixture.root, `s3-${catalog.name}`), fixture.sandbox, [job(0)]);
              const environment = parse(await readFile(ws.configFile, 'utf8')) as { sinks: Record<string, unknown> };
              environment.sinks.s3 = { endpoint: s3.endpoint, region: TEST_AWS_ENV.AWS_REGION };
              environment.sinks.iceberg = { catalog: catalog.settings(), location: `s3://${bucket}/warehouse` };
              await writeFile(ws.configFile, stringify(environment));
              const env = { ...sandboxEnv(fixture.sandbox), ...catalog.env() };
              for (const [name, value] of Object.entries(catalog.env())) process.env[name] = value;
              const cli = (args: string[]) => runCli([...args, '--config', ws.configFile, '--jobs', ws.jobsDir], { env });
              const reader = catalog.reader(table, bucket);
              const expectTable = async (expected: (string | null)[][]) => {
                const { pyiceberg, duckdb } = await readBoth(python!, reader, duckdbS3());
                expect(pyiceberg.columns).toEqual(EXPECTED_COLUMNS);
                expect(duckdb.columns).toEqual(EXPECTED_COLUMNS);
                expect(sortedLines(pyiceberg.rows)).toEqual(sortedLines(expected));
                expect(sortedLines(duckdb.rows)).toEqual(sortedLines(expected));
              };
              const run = async (runId: string) => {
                const result = await cli(['run', '--run-id', runId, '--json']);
                expect(result.exitCode, result.stderr).toBe(0);
                return summaryOf(result.stdout, 'run').tiles[0]!;
              };
              const csvOf = async (runId: string) => csvAsReaderText(await readFile(path.join(ws.outDir, `${job(0).name}-${runId}.csv`), 'utf8'));

              const first = await run('night-1');
              expect(first.outputs.find((output) => output.sink === 'iceberg')).toMatchObject({ target: table, rows: 60 });
              const firstCsv = await csvOf('night-1');
              expect(firstCsv).toHaveLength(60);
              await expectTable(firstCsv);
              const described = await readIceberg(python!, 'pyiceberg-table', reader);
              expect(described.location).toBe(`s3://${bucket}/warehouse/s3_${catalog.name}/incidents`);
              if (catalog.metadataInBucket)
                expect(described.metadataLocation.startsWith(`s3://${bucket}/warehouse/s3_${catalog.name}/incidents/metadata/`)).toBe(true);

              await writeFile(path.join(ws.jobsDir, `${job(0).name}.yaml`), stringify(job(20)));
              const second = await run('night-2');
              expect(second.outputs.find((output) => output.sink === 'iceberg')).toMatchObject({ target: table, rows: 40 });
              await expectTable(await csvOf('night-2'));
              const keys = await keysOf(s3.client, bucket);
              expect(keys.every((key) => key.startsWith(`warehouse/s3_${catalog.name}/incidents/`))).toBe(true);
              expect(keys.filter((key) => key.endsWith('.parquet'))).toHaveLength(2);

              const check = await cli(['check']);
              expect(check.exitCode, check.stderr).toBe(0);
              expect(check.stdout + check.stderr).toContain(`table exists at s3://${bucket}/warehouse/s3_${catalog.name}/incidents`);
              expect(check.stdout + check.stderr).toContain(`s3://${bucket}/warehouse/s3_${catalog.name}/incidents/metadata is writable`);
              // The probe was written and removed: the bucket holds what it held.
              expect(await keysOf(s3.client, bucket)).toEqual(keys);
              expect(s3.proxy.seen.some((line) => line.includes('.tilehouse-access-'))).toBe(true);

              const status = await cli(['status']);
              expect(status.stdout).toMatch(new RegExp(`iceberg ${table.replace('.', '\\.')}.*night-2`));
            },
            READS_TIMEOUT_MS,
          );
        });
      }
    });
  },
);
