// `sinks.iceberg` settings through `tilehouse run` / `check` / `status`: the REST catalog's OAuth2
// client credentials (a token endpoint as Polaris serves it, in front of a proxy that lets through
// only the tokens it gave out; the client secret never printed), and the housekeeping policy
// (keepSnapshots 2: after four nights the table keeps two snapshots, and the older nights' files are
// gone), read back by pyiceberg and DuckDB.
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { SANDBOX_TILE } from '../../../sandbox/index.js';
import { type BearerProxy, startBearerProxy } from '../../support/bearer-proxy.js';
import { runCli, sandboxEnv, summaryOf, writeWorkspace } from '../../support/cli-harness.js';
import { type ClientCredentialsServer, startClientCredentialsServer } from '../../support/client-credentials-server.js';
import { TokenBook } from '../../support/google-token-book.js';
import { icebergPythonOrSkip, readIceberg } from '../../support/iceberg-readers.js';
import { icebergRestLibOrSkip, type RunningIcebergRest, startIcebergRest } from '../../support/iceberg-rest-server.js';
import { postgresBlocker, postgresOrSkip, TEST_PASSWORD_VARIABLE, usePostgresDatabase } from '../../support/postgres.js';
import { sandboxAndRootForAll } from '../../support/sandbox-fixture.js';
import { describeUnless, missing } from '../../support/skip.js';
import { COLUMN_TYPES, csvAsReaderText, EXPECTED_COLUMNS, typedQueryAbove } from './iceberg-run-job.js';
import { readBoth, sortedLines } from './iceberg-test-rows.js';

const lib = icebergRestLibOrSkip();
const python = icebergPythonOrSkip();
const server = postgresOrSkip();

const CLIENT_ID = 'tilehouse-loader';
const CLIENT_SECRET = 'polaris-client-secret-5b1e77c2d9';
const SECRET_VARIABLE = 'TILEHOUSE_TEST_ICEBERG_CLIENT_SECRET';
const READS_TIMEOUT_MS = 600_000;

describeUnless(missing('the Iceberg REST catalog server', lib) ?? missing('the Iceberg readers', python) ?? postgresBlocker(server))(
  'sinks.iceberg settings through tilehouse run (OAuth2 client credentials, housekeeping)',
  () => {
    const fixture = sandboxAndRootForAll({ incidents: 60 });
    const database = usePostgresDatabase(server!);
    let rest: RunningIcebergRest | undefined;
    let proxy: BearerProxy;
    let front: ClientCredentialsServer;
    let warehouse: string;
    const book = new TokenBook();
    beforeAll(async () => {
      warehouse = await mkdtemp(path.join(tmpdir(), 'tilehouse-iceberg-settings-'));
      rest = await startIcebergRest(lib!);
      proxy = await startBearerProxy(rest.uri, book);
      front = await startClientCredentialsServer({ upstream: proxy.origin, book, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET });
    }, 180_000);
    afterAll(async () => {
      await front?.close();
      await proxy?.close();
      await rest?.stop();
      await rm(warehouse, { recursive: true, force: true });
    });

    /** A workspace of one job (a CSV and an iceberg sink) with `sinks.iceberg` as given. */
    async function workspace(name: string, table: string, iceberg: Record<string, unknown>) {
      const job = (above: number) => ({
        name,
        tile: SANDBOX_TILE,
        query: typedQueryAbove(above),
        columns: COLUMN_TYPES,
        sinks: [
          { type: 'csv', path: '{name}-{runId}.csv' },
          { type: 'iceberg', table },
        ],
      });
      const ws = await writeWorkspace(path.join(fixture.root, name), fixture.sandbox, [job(0)]);
      const environment = parse(await readFile(ws.configFile, 'utf8')) as { sinks: Record<string, unknown> };
      environment.sinks.iceberg = iceberg;
      await writeFile(ws.configFile, stringify(environment));
      return {
        ws,
        setNight: (above: number) => writeFile(path.join(ws.jobsDir, `${name}.yaml`), stringify(job(above))),
        csvOf: async (runId: string) => csvAsReaderText(await readFile(path.join(ws.outDir, `${name}-${runId}.csv`), 'utf8')),
      };
    }

    it(
      'OAuth2 client credentials from ${ENV}: run, check and status get a token and send only it; pyiceberg and DuckDB read the CSV rows; the secret is on no line; a wrong secret fails with iceberg_catalog_auth_failed',
      async () => {
        const table = 'oauth.incidents';
        const { ws, csvOf } = await workspace('nightly_oauth', table, {
          catalog: { type: 'rest', uri: front.origin, auth: { type: 'oauth2', clientId: CLIENT_ID, clientSecret: `\${${SECRET_VARIABLE}}` } },
          location: path.join(warehouse, 'oauth'),
        });
        const lines: string[] = [];
        const cli = async (args: string[], secret = CLIENT_SECRET) => {
          // The catalog's settings read the process's environment, as the iceberg runs test gives its token.
          process.env[SECRET_VARIABLE] = secret;
          const result = await runCli([...args, '--config', ws.configFile, '--jobs', ws.jobsDir], {
            env: { ...sandboxEnv(fixture.sandbox), [SECRET_VARIABLE]: secret },
          });
          lines.push(...result.stdout.split('\n'), ...result.stderr.split('\n'), ...result.logs.map((line) => JSON.stringify(line)));
          return result;
        };
        const grantsBefore = front.grants.length;
        const requestsBefore = proxy.requests.length;

        const run = await cli(['run', '--run-id', 'oauth-1', '--json']);
        expect(run.exitCode, run.stderr).toBe(0);
        expect(summaryOf(run.stdout, 'run').tiles[0]!.outputs.find((output) => output.sink === 'iceberg')).toMatchObject({ target: table, rows: 60 });
        const { pyiceberg, duckdb } = await readBoth(python!, { catalog: { type: 'rest', uri: rest!.uri }, table });
        const expected = await csvOf('oauth-1');
        expect(pyiceberg.columns).toEqual(EXPECTED_COLUMNS);
        expect(sortedLines(pyiceberg.rows)).toEqual(sortedLines(expected));
        expect(sortedLines(duckdb.rows)).toEqual(sortedLines(expected));

        const check = await cli(['check']);
        expect(check.exitCode, check.stderr).toBe(0);
        expect(check.stdout + check.stderr).toContain(`iceberg rest ${front.origin} ${table}: table exists at `);
        const status = await cli(['status']);
        expect(status.stdout).toMatch(/iceberg oauth\.incidents.*oauth-1/);

        const grants = front.grants.slice(grantsBefore);
        expect(grants.length).toBeGreaterThan(0);
        for (const grant of grants)
          expect(grant).toEqual({
            fields: { grant_type: 'client_credentials', client_id: CLIENT_ID, client_secret: '(matched)', scope: 'PRINCIPAL_ROLE:ALL' },
            contentType: 'application/x-www-form-urlencoded',
            status: 200,
          });
        const sent = proxy.requests.slice(requestsBefore);
        expect(sent.map((request) => `${request.method} ${request.path.split('?')[0]}`)).toContain('POST /v1/namespaces/oauth/tables/incidents');
        expect(sent.filter((request) => request.verdict !== 'valid')).toEqual([]);

        const refused = await cli(['run', '--run-id', 'oauth-2'], 'not-the-secret-3c9d');
        expect(refused.exitCode).not.toBe(0);
        expect(refused.stderr).toContain('iceberg_catalog_auth_failed');
        expect(refused.stderr).toContain(`refused client "${CLIENT_ID}"`);
        expect(front.grants.at(-1)).toMatchObject({ status: 401, fields: { client_secret: '(wrong)' } });
        for (const line of lines) {
          expect(line).not.toContain(CLIENT_SECRET);
          expect(line).not.toContain('not-the-secret-3c9d');
        }
        // The table holds only the first night: the refused run committed nothing.
        expect((await readIceberg(python!, 'pyiceberg-table', { catalog: { type: 'rest', uri: rest!.uri }, table })).snapshots).toHaveLength(1);
      },
      READS_TIMEOUT_MS,
    );

    it(
      'housekeeping keepSnapshots 2 (no age kept): after four nights the table has two snapshots and two data files; the result reports what expired and was deleted',
      async () => {
        const table = 'kept.incidents';
        const location = path.join(warehouse, 'kept');
        const catalogName = 'tilehouse_kept';
        const { ws, setNight, csvOf } = await workspace('nightly_kept', table, {
          catalog: {
            type: 'jdbc',
            catalogName,
            host: server!.host,
            port: server!.port,
            database: database.name,
            user: server!.user,
            password: `\${${TEST_PASSWORD_VARIABLE}}`,
            sslmode: 'disable',
          },
          location,
          housekeeping: { keepSnapshots: 2, maxSnapshotAgeDays: 0 },
        });
        process.env[TEST_PASSWORD_VARIABLE] = server!.password;
        const env = { ...sandboxEnv(fixture.sandbox), [TEST_PASSWORD_VARIABLE]: server!.password };
        const nights: Array<{ expiredSnapshots: unknown; deletedFiles: unknown }> = [];
        for (const [index, above] of [0, 10, 20, 30].entries()) {
          await setNight(above);
          const result = await runCli(['run', '--run-id', `kept-${index + 1}`, '--json', '--config', ws.configFile, '--jobs', ws.jobsDir], { env });
          expect(result.exitCode, result.stderr).toBe(0);
          const tile = summaryOf(result.stdout, 'run').tiles[0]!;
          expect(tile.warnings).toEqual([]);
          const output = tile.outputs.find((candidate) => candidate.sink === 'iceberg')!;
          expect(output.rows).toBe(60 - above);
          nights.push({ expiredSnapshots: output.details?.expiredSnapshots, deletedFiles: output.details?.deletedFiles });
        }
        // Nights 1 and 2 keep everything; 3 and 4 each expire the oldest snapshot, and delete its
        // manifest list, manifest and data file (the files only it referenced).
        expect(nights).toEqual([
          { expiredSnapshots: 0, deletedFiles: 0 },
          { expiredSnapshots: 0, deletedFiles: 0 },
          { expiredSnapshots: 1, deletedFiles: 3 },
          { expiredSnapshots: 1, deletedFiles: 3 },
        ]);
        const reader = {
          catalog: {
            type: 'sql',
            uri: `postgresql+psycopg2://${encodeURIComponent(server!.user)}:${encodeURIComponent(server!.password)}@${server!.host}:${server!.port}/${database.name}`,
          },
          catalogName,
          table,
        };
        const described = await readIceberg(python!, 'pyiceberg-table', reader);
        expect(described.snapshots.map((snapshot) => snapshot.summary['tilehouse.run-id'])).toEqual(['kept-3', 'kept-4']);
        const { pyiceberg, duckdb } = await readBoth(python!, reader);
        const expected = await csvOf('kept-4');
        expect(sortedLines(pyiceberg.rows)).toEqual(sortedLines(expected));
        expect(sortedLines(duckdb.rows)).toEqual(sortedLines(expected));
        const dataFiles = await readdir(path.join(location, 'kept', 'incidents', 'data'));
        expect(dataFiles.filter((name) => name.endsWith('.parquet')).sort()).toHaveLength(2);
        expect(dataFiles.every((name) => name.startsWith('kept-3') || name.startsWith('kept-4'))).toBe(true);
      },
      READS_TIMEOUT_MS,
    );
  },
);
