// The catalog paths issue 64 asks to be read back by all three readers that the other files cover
// only in part: `tilehouse run` through AWS SigV4 (signing name glue) with vended credentials onto
// s3:// (tilehouse → the botocore-verifying SigV4 front, which insists the delegation header is
// signed → the vending proxy → Apache Iceberg's REST server; moto behind a front that admits only
// the vended keys), and through Google-authenticated REST (the fake metadata server's tokens, a
// bearer check in front of the same REST server). Spark (one session for the file), pyiceberg and
// DuckDB each read exactly the rows of the CSV the same run wrote; no key, secret, session token or
// Google token is in any byte the runs printed, logged or stored.
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parse as parseCsv } from 'csv-parse/sync';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { SANDBOX_TILE } from '../../../sandbox/index.js';
import { type BearerProxy, startBearerProxy } from '../../support/bearer-proxy.js';
import { type CliResult, runCli, sandboxEnv, summaryOf, writeWorkspace } from '../../support/cli-harness.js';
import { startFakeMetadataServer } from '../../support/fake-metadata-server.js';
import { TokenBook } from '../../support/google-token-book.js';
import { icebergPythonOrSkip, type PyicebergTable } from '../../support/iceberg-readers.js';
import { icebergRestLibOrSkip, type RunningIcebergRest, startIcebergRest } from '../../support/iceberg-rest-server.js';
import { type IcebergSpark, icebergSparkOrSkip, sparkS3Missing, startIcebergSpark } from '../../support/iceberg-spark.js';
import { incidentDaysQuery } from '../../support/queries.js';
import { describeWithS3, getBytes, keysOf, TEST_AWS_ENV, type TestS3 } from '../../support/s3-server.js';
import { sandboxAndRootForAll } from '../../support/sandbox-fixture.js';
import { botocorePythonOrSkip, startSigV4Proxy } from '../../support/sigv4-proxy.js';
import { describeUnless, missing } from '../../support/skip.js';
import { S3KeyIssuer, startVendingCatalogProxy } from '../../support/vending-catalog.js';
import { readBoth, sortedLines } from './iceberg-test-rows.js';

const lib = icebergRestLibOrSkip();
const python = icebergPythonOrSkip();
const botocore = botocorePythonOrSkip();
const spark = icebergSparkOrSkip();

const START_TIMEOUT_MS = 360_000;
const TEST_TIMEOUT_MS = 600_000;

const ACCOUNT = '123456789012';
const REGION = 'eu-west-1';
const USER_PROJECT = 'lake-billing-7';
const COLUMNS = ['number', 'day', 'severity'];
/** The header that asks for vended credentials, as the SigV4 front sees it (lower case). */
const DELEGATION = 'x-iceberg-access-delegation';

/** The role session tilehouse signs the catalog's requests with (as IRSA's): the S3 front refuses it for the table's files. */
const SESSION = {
  id: 'ASIATILEHOUSECOMB001',
  secret: 'tilehouse/combined+secret/5a6b7c8d9e0f1a2b3c4d5e6f',
  token: 'IQoJb3JpZ2luX2VjEtilehouse-combined-token-0a9b8c7d6e5f4a3b',
};

/** The variables the AWS credential chain and google-auth-library read from this process's environment: set per test, restored after. */
const VARIABLES = [
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_SESSION_TOKEN',
  'AWS_PROFILE',
  'AWS_REGION',
  'AWS_DEFAULT_REGION',
  'AWS_ROLE_ARN',
  'AWS_WEB_IDENTITY_TOKEN_FILE',
  'AWS_SHARED_CREDENTIALS_FILE',
  'AWS_CONFIG_FILE',
  'AWS_EC2_METADATA_DISABLED',
  'AWS_CONTAINER_CREDENTIALS_RELATIVE_URI',
  'AWS_CONTAINER_CREDENTIALS_FULL_URI',
  'GCE_METADATA_HOST',
  'GCE_METADATA_IP',
  'METADATA_SERVER_DETECTION',
  'GOOGLE_APPLICATION_CREDENTIALS',
  'CLOUDSDK_CONFIG',
  'GOOGLE_CLOUD_PROJECT',
] as const;

/** The CSV's rows (its header skipped) as the readers give text back: an unquoted empty field is null. */
function csvRows(csv: string): (string | null)[][] {
  return parseCsv(csv, { cast: (value, context) => (value === '' && !context.quoting ? null : value), from_line: 2 }) as (string | null)[][];
}

const everything = (result: CliResult) => [result.stdout, result.stderr, ...result.logs.map((line) => JSON.stringify(line))].join('\n');

/** Every byte below `roots` (the workspace: CSV, run history; the catalog's metadata JSON), as text. */
async function bytesUnder(roots: string[]): Promise<string> {
  const texts: string[] = [];
  for (const root of roots) {
    const entries = await readdir(root, { recursive: true, withFileTypes: true }).catch(() => []);
    for (const entry of entries) if (entry.isFile()) texts.push(await readFile(path.join(entry.parentPath, entry.name), 'latin1'));
  }
  return texts.join('\n');
}

/** The secrets among `secrets` that `text` holds, as positions (never the values: a failure would print them). */
const leaked = (secrets: readonly string[], text: string) => secrets.flatMap((secret, index) => (text.includes(secret) ? [index] : []));

describeUnless(
  missing('the Iceberg REST catalog server', lib) ??
    missing('the Iceberg readers', python) ??
    missing("moto's venv (botocore)", botocore) ??
    missing('Spark with the Iceberg runtime', spark),
)('the catalog paths of AWS Glue with vended credentials and of BigLake, read back by Spark, pyiceberg and DuckDB', () => {
  const fixture = sandboxAndRootForAll({ incidents: 4000, now: new Date('2026-07-05T12:00:00Z') });
  let session: IcebergSpark | undefined;
  let rest: RunningIcebergRest | undefined;
  let local: string;
  const saved = Object.fromEntries(VARIABLES.map((name) => [name, process.env[name]]));
  const restore = () => {
    for (const name of VARIABLES) {
      if (saved[name] === undefined) delete process.env[name];
      else process.env[name] = saved[name];
    }
  };

  beforeAll(async () => {
    local = await mkdtemp(path.join(tmpdir(), 'tilehouse-catalog-paths-'));
    const [started, restServer] = await Promise.allSettled([startIcebergSpark(spark!), startIcebergRest(lib!)]);
    if (started.status === 'fulfilled') session = started.value;
    if (restServer.status === 'fulfilled') rest = restServer.value;
    if (started.status === 'rejected') throw started.reason;
    if (restServer.status === 'rejected') throw restServer.reason;
  }, START_TIMEOUT_MS);
  afterAll(async () => {
    restore();
    await session?.stop();
    await rest?.stop();
    await rm(local, { recursive: true, force: true });
  });

  /** A job of the day query into the CSV and `table`, its workspace with `sinks` merged in, and the CLI bound to it. */
  async function workspace(name: string, table: string, sinks: Record<string, unknown>) {
    const job = {
      name,
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
    const ws = await writeWorkspace(path.join(fixture.root, name), fixture.sandbox, [job], { concurrency: 1 });
    const environment = parse(await readFile(ws.configFile, 'utf8')) as { sinks: Record<string, unknown> };
    Object.assign(environment.sinks, sinks);
    await writeFile(ws.configFile, stringify(environment));
    const run = async (runId: string) => {
      const result = await runCli(['run', '--run-id', runId, '--json', '--config', ws.configFile, '--jobs', ws.jobsDir], { env: sandboxEnv(fixture.sandbox) });
      expect(result.exitCode, result.stderr).toBe(0);
      const rows = summaryOf(result.stdout, 'run').tiles[0]!.outputs.find((output) => output.sink === 'iceberg');
      expect(rows?.target).toBe(table);
      const expected = csvRows(await readFile(path.join(ws.outDir, `${name}-${runId}.csv`), 'utf8'));
      expect(expected).toHaveLength(100);
      expect(rows?.rows).toBe(expected.length);
      return { result, expected };
    };
    return { ws, run };
  }

  /** What Spark, pyiceberg and DuckDB read of `table` is exactly `expected`, in the same columns. */
  async function expectReadBack(sparkTable: string, reader: PyicebergTable, expected: (string | null)[][], s3?: Parameters<typeof readBoth>[2]) {
    const bySpark = await session!.read(sparkTable);
    const { pyiceberg, duckdb } = await readBoth(python!, reader, s3);
    expect({ spark: bySpark.columns, pyiceberg: pyiceberg.columns, duckdb: duckdb.columns }).toEqual({ spark: COLUMNS, pyiceberg: COLUMNS, duckdb: COLUMNS });
    expect(sortedLines(bySpark.rows), 'Spark reads the CSV rows').toEqual(sortedLines(expected));
    expect(bySpark.count, "Spark's COUNT(*) from the manifests").toBe(expected.length);
    expect(sortedLines(pyiceberg.rows), 'pyiceberg reads the CSV rows').toEqual(sortedLines(expected));
    expect(sortedLines(duckdb.rows), 'DuckDB reads the CSV rows').toEqual(sortedLines(expected));
  }

  it(
    'Google-authenticated REST (BigLake): the metadata server’s tokens on every request, the table read back exactly by Spark, pyiceberg and DuckDB, no token in any output',
    async () => {
      const book = new TokenBook();
      let proxy: BearerProxy | undefined;
      const metadata = await startFakeMetadataServer({ book, tokenLifetimeSeconds: 3600 });
      try {
        proxy = await startBearerProxy(rest!.uri, book);
        // Workload Identity as a pod on GKE sees it: a metadata server, no key file, no gcloud login.
        for (const name of VARIABLES) delete process.env[name];
        process.env.GCE_METADATA_HOST = metadata.host;
        process.env.CLOUDSDK_CONFIG = local;
        process.env.GOOGLE_CLOUD_PROJECT = 'test-project';
        const table = 'lake.google_incidents';
        const { ws, run } = await workspace('biglake', table, {
          iceberg: { catalog: { type: 'rest', uri: proxy.origin, auth: { type: 'google', userProject: USER_PROJECT } }, location: path.join(local, 'biglake') },
        });
        const { result, expected } = await run('night-1');

        expect(proxy.requests.length).toBeGreaterThan(3);
        // Told by method, path and verdict: a failure prints no token.
        expect(
          proxy.requests
            .filter((request) => request.verdict !== 'valid' || request.userProject !== USER_PROJECT)
            .map(({ method, path, verdict, userProject }) => ({ method, path, verdict, userProject })),
        ).toEqual([]);
        expect(book.issued.length).toBeGreaterThanOrEqual(1);
        expect(book.issued.every((issued) => issued.issuer === 'metadata')).toBe(true);
        expect(metadata.requests.every((request) => request.flavored)).toBe(true);

        await session!.addCatalog('biglake_rest', { type: 'rest', uri: rest!.uri, 'cache-enabled': 'false' });
        await expectReadBack(`biglake_rest.${table}`, { catalog: { type: 'rest', uri: rest!.uri }, table }, expected);

        const tokens = book.issued.map((issued) => issued.token);
        expect(leaked(tokens, [everything(result), await bytesUnder([ws.root, path.join(local, 'biglake')])].join('\n'))).toEqual([]);
      } finally {
        restore();
        const { gcpMetadata } = await import('google-auth-library');
        gcpMetadata.resetIsAvailableCache();
        await proxy?.close();
        await metadata.close();
      }
    },
    TEST_TIMEOUT_MS,
  );

  describeUnless(sparkS3Missing(spark))('a table on s3://', () => {
    describeWithS3('through AWS SigV4 (glue) with the keys the catalog vends', (s3: TestS3) => {
      it(
        "tilehouse → SigV4 front → vending proxy → REST server: every request signed, the delegation header among the signed ones, the files written only with the vended keys; Spark, pyiceberg and DuckDB read the CSV's rows; no key in any output",
        async () => {
          const issuer = new S3KeyIssuer();
          const vending = await startVendingCatalogProxy(rest!.uri, issuer, {
            shape: 'storage-credentials',
            advertiseCredentialsEndpoint: true,
            s3Endpoint: s3.endpoint,
          });
          let front: Awaited<ReturnType<typeof startSigV4Proxy>> | undefined;
          try {
            front = await startSigV4Proxy(botocore!, {
              upstream: vending.uri,
              region: REGION,
              service: 'glue',
              warehouse: ACCOUNT,
              requireSigned: [DELEGATION],
            });
            await front.setState({
              keys: { [SESSION.id]: { secret: SESSION.secret, sessionToken: SESSION.token, expiresAt: Math.floor(Date.now() / 1000) + 3600 } },
            });
            const bucket = await s3.newBucket('glue-vended');
            // The chain's only keys are the role session's, which the S3 front refuses: the table's files can only go with the vended keys.
            for (const name of VARIABLES) delete process.env[name];
            Object.assign(process.env, {
              AWS_ACCESS_KEY_ID: SESSION.id,
              AWS_SECRET_ACCESS_KEY: SESSION.secret,
              AWS_SESSION_TOKEN: SESSION.token,
              AWS_SHARED_CREDENTIALS_FILE: path.join(local, 'none'),
              AWS_CONFIG_FILE: path.join(local, 'none'),
              AWS_EC2_METADATA_DISABLED: 'true',
            });
            s3.proxy.admit(issuer.admission({ accessKeyId: SESSION.id, admitted: false }));
            const metadataPath = path.join(local, 'glue-metadata');
            const table = 'glue_vended.incidents';
            const { ws, run } = await workspace('glue_vended', table, {
              s3: { endpoint: s3.endpoint, region: TEST_AWS_ENV.AWS_REGION },
              iceberg: {
                catalog: {
                  type: 'rest',
                  uri: front.uri,
                  warehouse: ACCOUNT,
                  auth: { type: 'sigv4', signingName: 'glue', signingRegion: REGION },
                  accessDelegation: 'vended-credentials',
                  // The test server has no S3 file IO: its metadata JSON stays on this machine.
                  tableProperties: { 'write.metadata.path': pathToFileURL(metadataPath).href },
                },
                location: `s3://${bucket}/warehouse`,
              },
            });
            const { result, expected } = await run('night-1');
            expect(s3.proxy.refused).toEqual([]);
            expect(issuer.issued.length).toBeGreaterThanOrEqual(1);
            expect(s3.proxy.seen.some((line) => line.includes(`/${bucket}/warehouse/glue_vended/incidents/data/`))).toBe(true);

            // Every request passed botocore's check as the session's; those that ask for credentials signed the header that asks.
            const sent = await front.requests();
            const tables = `/iceberg/v1/catalogs/${ACCOUNT}/namespaces/glue_vended/tables`;
            expect(sent.filter((request) => request.verdict !== 'valid' || request.accessKeyId !== SESSION.id || request.service !== 'glue')).toEqual([]);
            const asking = sent.filter(
              (request) => (request.method === 'GET' && request.path === `${tables}/incidents`) || (request.method === 'POST' && request.path === tables),
            );
            // As the run asks: the table looked up twice before it exists, created, then loaded twice (each asking for keys).
            const order: [string, string, number][] = [
              ['GET', '/incidents', 404],
              ['GET', '/incidents', 404],
              ['POST', '', 200],
              ['GET', '/incidents', 200],
              ['GET', '/incidents', 200],
            ];
            expect(asking.map((request) => [request.method, request.path.slice(tables.length), request.status])).toEqual(order);
            expect(new Set(asking.map((request) => request.signedHeaders))).toEqual(
              new Set([`accept;content-type;host;x-amz-content-sha256;x-amz-date;x-amz-security-token;${DELEGATION}`]),
            );
            // …and the vending proxy behind the front received it on each.
            const behind = '/v1/namespaces/glue_vended/tables';
            expect(
              vending.requests
                .filter(
                  (request) => (request.method === 'GET' && request.path === `${behind}/incidents`) || (request.method === 'POST' && request.path === behind),
                )
                .map((request) => [request.method, request.path.slice(behind.length), request.delegation]),
            ).toEqual(order.map(([method, rest]) => [method, rest, 'vended-credentials']));

            // The readers go straight to the REST server and moto, with keys of their own.
            const s3Reader = {
              's3.endpoint': s3.serverOrigin,
              's3.access-key-id': TEST_AWS_ENV.AWS_ACCESS_KEY_ID,
              's3.secret-access-key': TEST_AWS_ENV.AWS_SECRET_ACCESS_KEY,
            };
            await session!.addCatalog('glue_s3', {
              type: 'rest',
              uri: rest!.uri,
              'cache-enabled': 'false',
              'io-impl': 'org.apache.iceberg.io.ResolvingFileIO',
              's3.path-style-access': 'true',
              'client.region': TEST_AWS_ENV.AWS_REGION,
              ...s3Reader,
            });
            await expectReadBack(
              `glue_s3.${table}`,
              { catalog: { type: 'rest', uri: rest!.uri, 's3.region': TEST_AWS_ENV.AWS_REGION, ...s3Reader }, table },
              expected,
              { endpoint: s3.serverOrigin, region: TEST_AWS_ENV.AWS_REGION, keyId: TEST_AWS_ENV.AWS_ACCESS_KEY_ID, secret: TEST_AWS_ENV.AWS_SECRET_ACCESS_KEY },
            );

            const objects: string[] = [];
            for (const key of await keysOf(s3.client, bucket)) objects.push((await getBytes(s3.client, bucket, key)).toString('latin1'));
            const secrets = [SESSION.id, SESSION.secret, SESSION.token, ...issuer.secrets()];
            expect(leaked(secrets, [everything(result), await bytesUnder([ws.root, metadataPath]), ...objects].join('\n'))).toEqual([]);
          } finally {
            restore();
            s3.proxy.admit(undefined);
            await front?.stop();
            await vending.close();
          }
        },
        TEST_TIMEOUT_MS,
      );
    });
  });
});
