// tilehouse run into an Iceberg table on s3:// with `accessDelegation: vended-credentials`: Apache
// Iceberg's REST server behind a proxy that vends short-lived S3 keys with loadTable and createTable
// (and renews them at the specification's credentials endpoint), and moto behind a front that takes
// only those keys, until they expire, and refuses the environment's. pyiceberg and DuckDB read back
// exactly the rows of the CSV the same run wrote; a run that outlives its keys renews them; the keys
// are in no byte tilehouse printed, logged or stored; a catalog that vends none leaves the table's
// files to the environment's credentials, and a log line says so.
import { readdir, readFile, rm, writeFile, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { SANDBOX_TILE } from '../../../sandbox/index.js';
import { type CliResult, runCli, sandboxEnv, summaryOf, writeWorkspace } from '../../support/cli-harness.js';
import { icebergPythonOrSkip, type PyicebergTable } from '../../support/iceberg-readers.js';
import { icebergRestLibOrSkip, type RunningIcebergRest, startIcebergRest } from '../../support/iceberg-rest-server.js';
import { describeWithS3, getBytes, keysOf, TEST_AWS_ENV, type TestS3 } from '../../support/s3-server.js';
import { sandboxAndRootForAll } from '../../support/sandbox-fixture.js';
import { describeUnless, missing } from '../../support/skip.js';
import { S3KeyIssuer, startVendingCatalogProxy, type VendingCatalogProxy, type VendingShape } from '../../support/vending-catalog.js';
import { COLUMN_TYPES, csvAsReaderText, EXPECTED_COLUMNS, typedQueryAbove } from './iceberg-run-job.js';
import { readBoth, sortedLines } from './iceberg-test-rows.js';

const lib = icebergRestLibOrSkip();
const python = icebergPythonOrSkip();

const READS_TIMEOUT_MS = 600_000;
/** A loadTable's path, and a createTable's (a commit is a POST to the load path: no credentials in its answer). */
const LOAD_PATH = /^\/v1\/(?:[^/]+\/)?namespaces\/[^/]+\/tables\/[^/]+$/;
const CREATE_PATH = /^\/v1\/(?:[^/]+\/)?namespaces\/[^/]+\/tables$/;

describeUnless(missing('the Iceberg REST catalog server', lib) ?? missing('the Iceberg readers', python))(
  'tilehouse run with storage credentials the REST catalog vends',
  () => {
    const fixture = sandboxAndRootForAll({ incidents: 60 });
    let rest: RunningIcebergRest | undefined;
    let local: string;
    beforeAll(async () => {
      local = await mkdtemp(path.join(tmpdir(), 'tilehouse-vended-'));
      rest = await startIcebergRest(lib!);
    }, 180_000);
    afterAll(async () => {
      await rest?.stop();
      await rm(local, { recursive: true, force: true });
    });

    describeWithS3('a warehouse in a bucket only the vended keys open', (s3: TestS3) => {
      let catalog: VendingCatalogProxy | undefined;
      afterEach(async () => {
        s3.proxy.admit(undefined);
        s3.proxy.refused.splice(0);
        await catalog?.close();
        catalog = undefined;
      });

      /** The environment's key pair (the SDK's chain finds it in process.env): what the front refuses unless told. */
      const environmentKey = TEST_AWS_ENV.AWS_ACCESS_KEY_ID;

      /** A workspace whose catalog is the vending proxy over the REST server; the bucket, its table and the CLI. */
      async function workspace(name: string, issuer: S3KeyIssuer, shape: VendingShape, advertiseCredentialsEndpoint: boolean) {
        catalog = await startVendingCatalogProxy(rest!.uri, issuer, { shape, advertiseCredentialsEndpoint, s3Endpoint: s3.endpoint });
        const bucket = await s3.newBucket(`vended-${name}`);
        const table = `vended_${name}.incidents`;
        const job = (above: number) => ({
          name: `vended_${name}`,
          tile: SANDBOX_TILE,
          query: typedQueryAbove(above),
          columns: COLUMN_TYPES,
          sinks: [
            { type: 'csv', path: '{name}-{runId}.csv' },
            { type: 'iceberg', table },
          ],
        });
        const ws = await writeWorkspace(path.join(fixture.root, `vended-${name}`), fixture.sandbox, [job(0)]);
        const environment = parse(await readFile(ws.configFile, 'utf8')) as { sinks: Record<string, unknown> };
        environment.sinks.s3 = { endpoint: s3.endpoint, region: TEST_AWS_ENV.AWS_REGION };
        const metadata = path.join(local, `${name}-metadata`);
        environment.sinks.iceberg = {
          catalog: {
            type: 'rest',
            uri: catalog.uri,
            accessDelegation: 'vended-credentials',
            // The test server has no S3 file IO: its metadata JSON stays on this machine.
            tableProperties: { 'write.metadata.path': pathToFileURL(metadata).href },
          },
          location: `s3://${bucket}/warehouse`,
        };
        await writeFile(ws.configFile, stringify(environment));
        const cli = (args: string[]) => runCli([...args, '--config', ws.configFile, '--jobs', ws.jobsDir], { env: sandboxEnv(fixture.sandbox) });
        // The readers go straight to moto and the REST server, with keys of their own.
        const reader: PyicebergTable = {
          catalog: {
            type: 'rest',
            uri: rest!.uri,
            's3.endpoint': s3.serverOrigin,
            's3.access-key-id': TEST_AWS_ENV.AWS_ACCESS_KEY_ID,
            's3.secret-access-key': TEST_AWS_ENV.AWS_SECRET_ACCESS_KEY,
            's3.region': TEST_AWS_ENV.AWS_REGION,
          },
          table,
        };
        const expectTable = async (runId: string) => {
          const expected = csvAsReaderText(await readFile(path.join(ws.outDir, `${job(0).name}-${runId}.csv`), 'utf8'));
          expect(expected.length).toBeGreaterThan(0);
          const { pyiceberg, duckdb } = await readBoth(python!, reader, {
            endpoint: s3.serverOrigin,
            region: TEST_AWS_ENV.AWS_REGION,
            keyId: TEST_AWS_ENV.AWS_ACCESS_KEY_ID,
            secret: TEST_AWS_ENV.AWS_SECRET_ACCESS_KEY,
          });
          expect(pyiceberg.columns).toEqual(EXPECTED_COLUMNS);
          expect(duckdb.columns).toEqual(EXPECTED_COLUMNS);
          expect(sortedLines(pyiceberg.rows)).toEqual(sortedLines(expected));
          expect(sortedLines(duckdb.rows)).toEqual(sortedLines(expected));
        };
        /** Every byte tilehouse left: the workspace (CSV, run history), the catalog's metadata JSON, the bucket's objects. */
        const storedBytes = async (): Promise<string> => {
          const texts: string[] = [];
          for (const root of [ws.root, metadata]) {
            const entries = await readdir(root, { recursive: true, withFileTypes: true }).catch(() => []);
            for (const entry of entries) if (entry.isFile()) texts.push(await readFile(path.join(entry.parentPath, entry.name), 'latin1'));
          }
          for (const key of await keysOf(s3.client, bucket))
            if (!key.endsWith('(upload)')) texts.push((await getBytes(s3.client, bucket, key)).toString('latin1'));
          return texts.join('\n');
        };
        return { bucket, table, job, ws, cli, expectTable, storedBytes };
      }

      /** Whether any vended key, secret or session token is in `text` (each one named, never printed). */
      const leaked = (issuer: S3KeyIssuer, text: string) => issuer.secrets().filter((secret) => text.includes(secret)).length;
      const everything = (result: CliResult) => [result.stdout, result.stderr, ...result.logs.map((line) => JSON.stringify(line))].join('\n');

      it(
        'storage-credentials: two nights write the table with the keys vended for it, renewed at the credentials endpoint when they expire mid-run; the environment key is never used and no key is in any output',
        async () => {
          // Keys live 2 s; the front holds the first data file's upload 2.5 s: the run's next request needs new keys.
          const issuer = new S3KeyIssuer(2_000);
          const { bucket, table, job, ws, cli, expectTable, storedBytes } = await workspace('renewed', issuer, 'storage-credentials', true);
          s3.proxy.admit(issuer.admission({ accessKeyId: environmentKey, admitted: false }));
          s3.proxy.hold({ on: 'put', urlContains: '.parquet', ms: 2_500 });

          const first = await cli(['run', '--run-id', 'night-1', '--json']);
          expect(first.exitCode, first.stderr).toBe(0);
          expect(summaryOf(first.stdout, 'run').tiles[0]!.outputs.find((output) => output.sink === 'iceberg')).toMatchObject({ target: table, rows: 60 });
          expect(catalog!.renewals).toBeGreaterThanOrEqual(1);
          expect(s3.proxy.refused).toEqual([]);
          await expectTable('night-1');

          // The table exists now: the second night's keys come with loadTable.
          await writeFile(path.join(ws.jobsDir, `${job(0).name}.yaml`), stringify(job(20)));
          const second = await cli(['run', '--run-id', 'night-2', '--json']);
          expect(second.exitCode, second.stderr).toBe(0);
          expect(summaryOf(second.stdout, 'run').tiles[0]!.outputs.find((output) => output.sink === 'iceberg')).toMatchObject({ target: table, rows: 40 });
          expect(s3.proxy.refused).toEqual([]);
          await expectTable('night-2');

          // Every load and create asked for credentials, and the front saw the table's files only with vended keys.
          const tableRequests = catalog!.requests.filter(
            (request) => (request.method === 'GET' && LOAD_PATH.test(request.path)) || (request.method === 'POST' && CREATE_PATH.test(request.path)),
          );
          expect(tableRequests.length).toBeGreaterThanOrEqual(3);
          expect(tableRequests.filter((request) => request.delegation !== 'vended-credentials')).toEqual([]);
          expect(s3.proxy.seen.some((line) => line.includes(`/${bucket}/warehouse/vended_renewed/incidents/data/`))).toBe(true);

          // The front does refuse a key once it has expired (what made the renewal necessary).
          const expired = issuer.issued[0]!;
          const stale = new S3Client({
            endpoint: s3.endpoint,
            region: 'us-east-1',
            forcePathStyle: true,
            maxAttempts: 1,
            credentials: { accessKeyId: expired.accessKeyId, secretAccessKey: expired.secretAccessKey, sessionToken: expired.sessionToken },
          });
          await expect(stale.send(new PutObjectCommand({ Bucket: bucket, Key: 'warehouse/probe', Body: 'x' }))).rejects.toMatchObject({ name: 'ExpiredToken' });
          stale.destroy();

          const check = await cli(['check']);
          expect(check.exitCode, check.stderr).toBe(0);
          expect(check.stdout + check.stderr).toContain(
            `s3://${bucket}/warehouse/vended_renewed/incidents/metadata is writable with the credentials the catalog vended`,
          );

          expect(issuer.issued.length).toBeGreaterThanOrEqual(3);
          expect(leaked(issuer, [everything(first), everything(second), everything(check), await storedBytes()].join('\n'))).toBe(0);
        },
        READS_TIMEOUT_MS,
      );

      it(
        "config: keys in the answer's config are renewed by loading the table again when the catalog lists no credentials endpoint",
        async () => {
          const issuer = new S3KeyIssuer(2_000);
          const { bucket, table, cli, expectTable } = await workspace('reloaded', issuer, 'config', false);
          s3.proxy.admit(issuer.admission({ accessKeyId: environmentKey, admitted: false }));

          // Before the first run there is no table and no credentials: check writes no probe (the environment's key would be refused).
          const check = await cli(['check']);
          expect(check.exitCode, check.stderr).toBe(0);
          expect(check.stdout + check.stderr).toContain(
            `table absent; a run creates it at s3://${bucket}/warehouse/vended_reloaded/incidents with namespace vended_reloaded; the catalog vends the credentials its files are written with when a run creates it`,
          );
          expect(s3.proxy.seen.filter((line) => line.includes(`/${bucket}/`))).toEqual([]);
          s3.proxy.hold({ on: 'put', urlContains: '.parquet', ms: 2_500 });

          const run = await cli(['run', '--run-id', 'night-1', '--json']);
          expect(run.exitCode, run.stderr).toBe(0);
          expect(summaryOf(run.stdout, 'run').tiles[0]!.outputs.find((output) => output.sink === 'iceberg')).toMatchObject({ target: table, rows: 60 });
          expect(s3.proxy.refused).toEqual([]);
          expect(catalog!.renewals).toBe(0);
          // Created with the first keys, loaded again for the next ones.
          const loads = catalog!.requests.filter((request) => request.method === 'GET' && /tables\/incidents$/.test(request.path));
          expect(loads.length).toBeGreaterThanOrEqual(2);
          expect(issuer.issued.length).toBeGreaterThanOrEqual(2);
          await expectTable('night-1');
        },
        READS_TIMEOUT_MS,
      );

      it(
        'a refusal that quotes the vended keys fails the run with every key redacted from its output, summary, logs and history',
        async () => {
          const issuer = new S3KeyIssuer();
          const { cli, storedBytes } = await workspace('echoed', issuer, 'storage-credentials', true);
          const admitted = issuer.admission({ accessKeyId: environmentKey, admitted: false });
          // An S3-compatible store that echoes the credentials it refused (S3's own SignatureDoesNotMatch quotes the key id).
          s3.proxy.admit((request) => {
            if (request.kind === 'put' && request.url.includes('.parquet')) {
              const key = issuer.issued.find((candidate) => candidate.accessKeyId === request.accessKeyId);
              return {
                status: 403,
                code: 'AccessDenied',
                message: `key ${request.accessKeyId} secret ${key?.secretAccessKey} token ${request.sessionToken} may not write here`,
              };
            }
            return admitted(request);
          });
          const run = await cli(['run', '--run-id', 'night-1', '--json']);
          expect(run.exitCode).toBe(1);
          const tile = summaryOf(run.stdout, 'run').tiles[0]!;
          expect(tile.error?.code).toBe('permission_denied');
          expect(tile.error?.message).toContain('may not write here');
          expect(run.stdout).toContain('key [redacted] secret [redacted] token [redacted]');
          expect(issuer.issued.length).toBeGreaterThanOrEqual(1);
          expect(leaked(issuer, [everything(run), await storedBytes()].join('\n'))).toBe(0);
        },
        READS_TIMEOUT_MS,
      );

      it(
        "a catalog that vends none: the table is written with the environment's credentials, and a log line says so",
        async () => {
          const issuer = new S3KeyIssuer();
          const { table, cli, expectTable } = await workspace('none', issuer, 'none', true);
          s3.proxy.admit(issuer.admission({ accessKeyId: environmentKey, admitted: true }));
          const run = await cli(['run', '--run-id', 'night-1', '--json']);
          expect(run.exitCode, run.stderr).toBe(0);
          expect(summaryOf(run.stdout, 'run').tiles[0]!.outputs.find((output) => output.sink === 'iceberg')).toMatchObject({ target: table, rows: 60 });
          expect(issuer.issued).toEqual([]);
          expect(s3.proxy.refused).toEqual([]);
          const told = run.logs.filter((line) => String(line.msg).includes('vended no storage credentials'));
          expect(told.map((line) => [line.level, line.msg])).toEqual([
            [
              40,
              `iceberg ${table}: the REST catalog vended no storage credentials for the table (accessDelegation: vended-credentials); its files are written with the environment's credentials`,
            ],
          ]);
          await expectTable('night-1');
        },
        READS_TIMEOUT_MS,
      );
    });
  },
);
