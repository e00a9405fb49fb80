// tilehouse run into an Iceberg table with writeMode merge, beside a CSV of the same run, through
// the JDBC catalog on the suite's PostgreSQL: `latestBy` chooses among a run's rows sharing a key
// (the PostgreSQL and BigQuery sinks' rule), and a merge opens only the data files whose column
// bounds may hold the run's keys (counted as the GETs a warehouse on s3:// (moto) receives).
// pyiceberg and DuckDB read back exactly the rows the CSVs say the table holds.
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { SANDBOX_TILE } from '../../../sandbox/index.js';
import { runCli, sandboxEnv, summaryOf, writeWorkspace } from '../../support/cli-harness.js';
import { icebergPythonOrSkip, type PyicebergTable } from '../../support/iceberg-readers.js';
import { postgresBlocker, postgresOrSkip, TEST_PASSWORD_VARIABLE, usePostgresDatabase } from '../../support/postgres.js';
import { describeWithS3, TEST_AWS_ENV } from '../../support/s3-server.js';
import { sandboxAndRootForAll } from '../../support/sandbox-fixture.js';
import { describeUnless, missing } from '../../support/skip.js';
import { COLUMN_TYPES, csvAsReaderText, EXPECTED_COLUMNS, typedQuery } from './iceberg-run-job.js';
import { readBoth, sortedLines } from './iceberg-test-rows.js';
import { jdbcCatalogSettings, sqlCatalogTable } from '../../support/iceberg-jdbc-catalog.js';

const python = icebergPythonOrSkip();
const server = postgresOrSkip();

const READS_TIMEOUT_MS = 900_000;
const NUMBER = 0;
const DESCRIPTION = 3;
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, index) => String(from + index));

/** typedQuery's columns (every type the sink maps) for the incidents numbered `numbers`. */
const queryOf = (numbers: string[]) => ({
  ...typedQuery,
  items: typedQuery.items.map((item, index) => (index === 0 ? { ...item, filters: [{ operator: 'in', values: numbers }] } : item)),
});

describeUnless(postgresBlocker(server) ?? missing('the Iceberg readers', python))(
  'tilehouse run into Iceberg with writeMode merge: latestBy, and the files a merge opens (JDBC catalog)',
  () => {
    const fixture = sandboxAndRootForAll({ incidents: 60 });
    const database = usePostgresDatabase(server!);
    const catalogSettings = (catalogName: string) => jdbcCatalogSettings(server!, database.name, catalogName);
    const readerOf = (catalogName: string, table: string, extra: Record<string, string> = {}): PyicebergTable =>
      sqlCatalogTable(server!, database.name, catalogName, table, extra);

    /** A workspace of one job (a CSV sink and `iceberg`) whose sinks.iceberg is `iceberg`; its cli, and the job file to rewrite between nights. */
    async function workspace(
      name: string,
      job: (numbers: string[]) => Record<string, unknown>,
      iceberg: Record<string, unknown>,
      s3?: Record<string, unknown>,
    ) {
      const ws = await writeWorkspace(path.join(fixture.root, name), fixture.sandbox, [job([])], { concurrency: 1 });
      const environment = parse(await readFile(ws.configFile, 'utf8')) as { sinks: Record<string, unknown> };
      environment.sinks.iceberg = iceberg;
      if (s3) environment.sinks.s3 = s3;
      await writeFile(ws.configFile, stringify(environment));
      process.env[TEST_PASSWORD_VARIABLE] = server!.password;
      const env = { ...sandboxEnv(fixture.sandbox), [TEST_PASSWORD_VARIABLE]: server!.password };
      const jobName = job([]).name as string;
      const night = async (runId: string, numbers: string[]) => {
        await writeFile(path.join(ws.jobsDir, `${jobName}.yaml`), stringify(job(numbers)));
        const result = await runCli(['run', '--run-id', runId, '--json', '--config', ws.configFile, '--jobs', ws.jobsDir], { env });
        expect(result.exitCode, result.stderr).toBe(0);
        const tile = summaryOf(result.stdout, 'run').tiles[0]!;
        // The CSV of the run, as the readers give text back, with the run id of the lineage.
        const csv = csvAsReaderText(await readFile(path.join(ws.outDir, `${jobName}-${runId}.csv`), 'utf8')).map((row) => [...row, runId]);
        return { tile, csv };
      };
      return { night };
    }

    /** The table as pyiceberg and DuckDB read it, `_extracted_at` left out (its instant is the run's clock): both must equal `expected`. */
    async function expectTable(reader: PyicebergTable, expected: (string | null)[][], s3?: Parameters<typeof readBoth>[2]) {
      const { pyiceberg, duckdb } = await readBoth(python!, reader, s3);
      const columns = [...EXPECTED_COLUMNS, '_run_id', '_extracted_at'];
      expect(pyiceberg.columns).toEqual(columns);
      expect(duckdb.columns).toEqual(columns);
      const project = (rows: (string | null)[][]) => sortedLines(rows.map((row) => row.slice(0, -1)));
      expect(project(pyiceberg.rows)).toEqual(sortedLines(expected));
      expect(project(duckdb.rows)).toEqual(sortedLines(expected));
    }

    it(
      "latestBy: keyed by Description, each description's highest Number wins in each night; the second night updates the descriptions it holds",
      async () => {
        const table = 'merge_keys.latest';
        const job = (numbers: string[]) => ({
          name: 'latest_by',
          tile: SANDBOX_TILE,
          query: queryOf(numbers),
          columns: COLUMN_TYPES,
          sinks: [
            { type: 'csv', path: '{name}-{runId}.csv' },
            { type: 'iceberg', table, writeMode: 'merge', primaryKey: ['Description'], latestBy: 'Number' },
          ],
        });
        const { night } = await workspace('latest', job, {
          catalog: catalogSettings('tilehouse_latest'),
          location: path.join(fixture.root, 'latest-warehouse'),
        });
        const reader = readerOf('tilehouse_latest', table);
        /** Of rows sharing a description, the one with the highest Number. */
        const latest = (rows: (string | null)[][]) => {
          const byKey = new Map<string, (string | null)[]>();
          for (const row of rows) {
            const held = byKey.get(row[DESCRIPTION]!);
            if (!held || BigInt(row[NUMBER]!) > BigInt(held[NUMBER]!)) byKey.set(row[DESCRIPTION]!, row);
          }
          return byKey;
        };

        const first = await night('night-1', range(1, 30));
        const firstLatest = latest(first.csv);
        // Descriptions repeat among the incidents: latestBy chose, where without it the run is refused.
        expect(firstLatest.size).toBeLessThan(first.csv.length);
        expect(first.tile.outputs.find((output) => output.sink === 'iceberg')).toMatchObject({ target: table, rows: firstLatest.size });
        await expectTable(reader, [...firstLatest.values()]);

        const second = await night('night-2', range(20, 60));
        const merged = new Map([...firstLatest, ...latest(second.csv)]);
        expect(merged.size).toBeGreaterThan(latest(second.csv).size);
        await expectTable(reader, [...merged.values()]);
      },
      READS_TIMEOUT_MS,
    );

    describeWithS3('a warehouse on s3://', (s3) => {
      it(
        'twenty nights merged by Number, one file each; a night of one key opens only the file whose bounds hold it, and the table reads back exactly',
        async () => {
          const bucket = await s3.newBucket('ice-merge-bounds');
          const table = 'merge_keys.by_number';
          const job = (numbers: string[]) => ({
            name: 'by_number',
            tile: SANDBOX_TILE,
            query: queryOf(numbers),
            columns: COLUMN_TYPES,
            sinks: [
              { type: 'csv', path: '{name}-{runId}.csv' },
              { type: 'iceberg', table, writeMode: 'merge', primaryKey: ['Number'] },
            ],
          });
          const { night } = await workspace(
            'bounds',
            job,
            { catalog: catalogSettings('tilehouse_bounds'), location: `s3://${bucket}/warehouse` },
            { endpoint: s3.endpoint, region: TEST_AWS_ENV.AWS_REGION },
          );
          const reader = readerOf('tilehouse_bounds', table, {
            's3.endpoint': s3.serverOrigin,
            's3.access-key-id': TEST_AWS_ENV.AWS_ACCESS_KEY_ID,
            's3.secret-access-key': TEST_AWS_ENV.AWS_SECRET_ACCESS_KEY,
            's3.region': TEST_AWS_ENV.AWS_REGION,
          });
          const duckdbS3 = {
            endpoint: s3.serverOrigin,
            region: TEST_AWS_ENV.AWS_REGION,
            keyId: TEST_AWS_ENV.AWS_ACCESS_KEY_ID,
            secret: TEST_AWS_ENV.AWS_SECRET_ACCESS_KEY,
          };
          const byNumber = new Map<string, (string | null)[]>();
          for (let index = 0; index < 20; index++) {
            const { csv } = await night(`night-${index + 1}`, range(3 * index + 1, 3 * index + 3));
            expect(csv).toHaveLength(3);
            for (const row of csv) byNumber.set(row[NUMBER]!, row);
          }
          // The proxy's lines are `<kind> <method> <url>`: a GetObject's URL has its key and the SDK's query.
          const dataGets = () => s3.proxy.seen.filter((line) => line.startsWith('get ') && /\.parquet(\?|$)/.test(line));
          const before = dataGets().length;

          // 31 is night-11's (31..33): the other nineteen files' bounds of Number exclude it.
          const { csv } = await night('night-21', ['31']);
          expect(csv).toHaveLength(1);
          const opened = dataGets().slice(before);
          expect(opened).toHaveLength(1);
          expect(opened[0]).toMatch(/\/data\/night-11-[^/?]+\.parquet(\?|$)/);
          byNumber.set('31', csv[0]!);
          await expectTable(reader, [...byNumber.values()], duckdbS3);
        },
        READS_TIMEOUT_MS,
      );
    });
  },
);
