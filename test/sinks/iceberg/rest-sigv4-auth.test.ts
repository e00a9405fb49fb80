import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path, { join } from 'node:path';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { openRestCatalog } from '../../../src/sinks/iceberg/rest-catalog.js';
import { runCli, sandboxEnv } from '../../support/cli-harness.js';
import { sandboxAndRootForAll } from '../../support/sandbox-fixture.js';
import { writeIcebergRun } from '../../../src/sinks/iceberg/table-writer.js';
import { icebergPythonOrSkip } from '../../support/iceberg-readers.js';
import { icebergRestLibOrSkip, type RunningIcebergRest, startIcebergRest } from '../../support/iceberg-rest-server.js';
import { icebergSparkOrSkip, startIcebergSpark } from '../../support/iceberg-spark.js';
import { botocorePythonOrSkip, type SigV4Proxy, startSigV4Proxy } from '../../support/sigv4-proxy.js';
import { describeUnless, missing } from '../../support/skip.js';
import { faultJob, icebergWorkspace } from './iceberg-cli-support.js';
import { asText, COLUMNS, readBoth, rowsOf, sortedLines } from './iceberg-test-rows.js';

const lib = icebergRestLibOrSkip();
const python = icebergPythonOrSkip();
const botocore = botocorePythonOrSkip();
const spark = icebergSparkOrSkip();

const ACCOUNT = '123456789012';
const REGION = 'eu-west-1';
const SIGV4 = { type: 'sigv4', signingName: 'glue', signingRegion: REGION } as const;

/** Temporary credentials (a role session, as IRSA's), valid for an hour. */
const SESSION = {
  id: 'ASIATILEHOUSESESS001',
  secret: 'tilehouse/session+secret/0a1b2c3d4e5f6a7b8c9d0e1f',
  token: 'IQoJb3JpZ2luX2VjEtilehouse-session-token-5f6a7b8c9d0e1f2a3b4c',
};
/** A long-term key (a profile's). */
const LONG_TERM = { id: 'AKIATILEHOUSELONG001', secret: 'tilehouse/long+term/secret/9f8e7d6c5b4a39281706' };
/** A role session that ended a minute ago. */
const ENDED = {
  id: 'ASIATILEHOUSEENDED01',
  secret: 'tilehouse/ended+secret/11223344556677889900',
  token: 'IQoJb3JpZ2luX2VjEtilehouse-ended-token-99887766554433',
};

const AWS_VARIABLES = [
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
];

/**
 * The AWS environment of this process, as the credential chain reads it: only `variables`, the
 * shared files pointed at files that do not exist (none of this machine's), no instance metadata.
 */
function awsEnvironment(directory: string, variables: Record<string, string>): void {
  for (const name of AWS_VARIABLES) delete process.env[name];
  Object.assign(
    process.env,
    { AWS_SHARED_CREDENTIALS_FILE: join(directory, 'none'), AWS_CONFIG_FILE: join(directory, 'none'), AWS_EC2_METADATA_DISABLED: 'true' },
    variables,
  );
}

const session = (directory: string) =>
  awsEnvironment(directory, { AWS_ACCESS_KEY_ID: SESSION.id, AWS_SECRET_ACCESS_KEY: SESSION.secret, AWS_SESSION_TOKEN: SESSION.token });

/**
 * The REST catalog behind AWS SigV4, as AWS Glue's Iceberg endpoint serves it: a front that
 * recomputes every signature with botocore's signer (sigv4_proxy.py) in front of the Apache
 * Iceberg REST server, signing name `glue`, warehouse an account id, prefix `catalogs/<account>`.
 */
describeUnless(
  missing('the Iceberg REST catalog server', lib) ??
    missing('the Iceberg readers', python) ??
    missing("moto's venv (botocore)", botocore) ??
    missing('Spark', spark),
)('the REST catalog with AWS SigV4 (Apache Iceberg REST server behind a botocore-verifying front)', () => {
  let rest: RunningIcebergRest | undefined;
  let front: SigV4Proxy | undefined;
  let directory: string;
  const fixture = sandboxAndRootForAll({ incidents: 12 });
  const saved = Object.fromEntries(AWS_VARIABLES.map((name) => [name, process.env[name]]));

  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'tilehouse-sigv4-'));
    rest = await startIcebergRest(lib!);
    front = await startSigV4Proxy(botocore!, { upstream: rest.uri, region: REGION, service: 'glue', warehouse: ACCOUNT });
    const now = Math.floor(Date.now() / 1000);
    await front.setState({
      keys: {
        [SESSION.id]: { secret: SESSION.secret, sessionToken: SESSION.token, expiresAt: now + 3600 },
        [LONG_TERM.id]: { secret: LONG_TERM.secret },
        [ENDED.id]: { secret: ENDED.secret, sessionToken: ENDED.token, expiresAt: now - 60 },
      },
    });
  }, 180_000);
  afterEach(async () => {
    await front?.setState({ clockOffsetSeconds: 0, echo: null });
  });
  afterAll(async () => {
    for (const name of AWS_VARIABLES) {
      if (saved[name] === undefined) delete process.env[name];
      else process.env[name] = saved[name];
    }
    await front?.stop();
    await rest?.stop();
    await rm(directory, { recursive: true, force: true });
  });

  it('signs every request with the chain’s session credentials, each signature recomputed by botocore, and the table lands exactly for pyiceberg, DuckDB and Spark', async () => {
    session(directory);
    // Spark's session starts while tilehouse writes (tens of seconds).
    const starting = startIcebergSpark(spark!);
    starting.catch(() => undefined);
    try {
      const before = (await front!.requests()).length;
      const catalog = await openRestCatalog({ uri: front!.uri, warehouse: ACCOUNT, auth: SIGV4 });
      const rows = rowsOf(0, 9);
      const result = await writeIcebergRun({
        catalog,
        table: { namespace: 'glue', name: 'signed' },
        columns: COLUMNS,
        rows: [rows],
        mode: 'replace',
        runId: 'sigv4-1',
      });
      expect(result.committed).toBe(true);
      expect(await catalog.checkPrivileges!()).toBe('signs requests as ASIA…S001/eu-west-1/glue (AWS SigV4); the catalog answered GET /v1/config with them');

      const sent = (await front!.requests()).slice(before);
      expect(sent.map((request) => `${request.method} ${request.path}`)).toEqual([
        `GET /iceberg/v1/config?warehouse=${ACCOUNT}`,
        `GET /iceberg/v1/catalogs/${ACCOUNT}/namespaces/glue/tables/signed`,
        `POST /iceberg/v1/catalogs/${ACCOUNT}/namespaces`,
        `POST /iceberg/v1/catalogs/${ACCOUNT}/namespaces/glue/tables`,
        `POST /iceberg/v1/catalogs/${ACCOUNT}/namespaces/glue/tables/signed`,
      ]);
      expect(sent.map(({ verdict, accessKeyId, region, service, signedHeaders }) => ({ verdict, accessKeyId, region, service, signedHeaders }))).toEqual(
        sent.map(() => ({
          verdict: 'valid',
          accessKeyId: SESSION.id,
          region: REGION,
          service: 'glue',
          signedHeaders: 'accept;content-type;host;x-amz-content-sha256;x-amz-date;x-amz-security-token',
        })),
      );
      expect(sent.map((request) => request.status)).toEqual([200, 404, 200, 200, 200]);

      const expected = sortedLines(rows.map(asText));
      const { pyiceberg, duckdb } = await readBoth(python!, { catalog: { type: 'rest', uri: rest!.uri }, table: 'glue.signed' });
      expect(sortedLines(pyiceberg.rows)).toEqual(expected);
      expect(sortedLines(duckdb.rows)).toEqual(expected);
      const sparkSession = await starting;
      await sparkSession.addCatalog('glue_rest', { type: 'rest', uri: rest!.uri, 'cache-enabled': 'false' });
      const bySpark = await sparkSession.read('glue_rest.glue.signed');
      expect(bySpark.columns).toEqual(COLUMNS.map((column) => column.name));
      expect(sortedLines(bySpark.rows)).toEqual(expected);
      expect(bySpark.count).toBe(rows.length);
    } finally {
      // Stopped however the test ends: a session left running would outlive the test file.
      await starting.then(
        (started) => started.stop(),
        () => undefined,
      );
    }
  }, 420_000);

  it('takes a profile of the shared credentials file when the environment has no keys', async () => {
    const file = join(directory, 'credentials');
    await writeFile(
      file,
      `[default]\naws_access_key_id = nobody\naws_secret_access_key = nothing-at-all\n\n[loader]\naws_access_key_id = ${LONG_TERM.id}\naws_secret_access_key = ${LONG_TERM.secret}\n`,
    );
    awsEnvironment(directory, { AWS_SHARED_CREDENTIALS_FILE: file, AWS_PROFILE: 'loader' });
    const before = (await front!.requests()).length;
    const catalog = await openRestCatalog({ uri: front!.uri, warehouse: ACCOUNT, auth: SIGV4 });
    const table = { namespace: 'glue', name: 'profiled' };
    await writeIcebergRun({ catalog, table, columns: COLUMNS, rows: [rowsOf(0, 2)], mode: 'replace', runId: 'sigv4-profile' });
    const sent = (await front!.requests()).slice(before);
    expect(sent.length).toBe(5);
    expect(new Set(sent.map((request) => `${request.verdict} ${request.accessKeyId} ${request.signedHeaders}`))).toEqual(
      new Set([`valid ${LONG_TERM.id} accept;content-type;host;x-amz-content-sha256;x-amz-date`]),
    );
  });

  /** The refusal of opening the catalog, the requests the front saw for it, and everything the error carries as text. */
  const refusedOpen = async (): Promise<{ error: Record<string, unknown>; text: string; sent: number }> => {
    const before = (await front!.requests()).length;
    const error = (await openRestCatalog({ uri: front!.uri, warehouse: ACCOUNT, auth: SIGV4 }).catch((thrown: unknown) => thrown)) as Error;
    return { error: error as unknown as Record<string, unknown>, text: `${error.message}\n${error.stack}`, sent: (await front!.requests()).length - before };
  };

  it('a wrong secret key is refused with aws_signature_mismatch, once, naming the catalog, the request and the key, never the secret or token the refusal echoes', async () => {
    const wrong = 'tilehouse/not+the/session-secret/0000111122223333';
    awsEnvironment(directory, { AWS_ACCESS_KEY_ID: SESSION.id, AWS_SECRET_ACCESS_KEY: wrong, AWS_SESSION_TOKEN: SESSION.token });
    await front!.setState({ echo: wrong });
    const { error, text, sent } = await refusedOpen();
    expect(error).toMatchObject({ code: 'aws_signature_mismatch', catalog: front!.uri, status: 403 });
    expect(error.message).toBe(
      `Iceberg REST catalog ${front!.uri}: GET /v1/config?warehouse=${ACCOUNT} was refused (403 InvalidSignatureException: The request signature we calculated does not match the signature you provided. ` +
        'Check your AWS Secret Access Key and signing method. Consult the service documentation for details. (request credentials: [redacted], [redacted])): ' +
        "AWS computed another signature: the secret access key is not the one of access key ASIA…S001, or the signing name glue or region eu-west-1 is not the catalog's; " +
        'signed as ASIA…S001/eu-west-1/glue',
    );
    expect(text).not.toContain(wrong);
    expect(text).not.toContain(SESSION.token);
    expect(sent).toBe(1);
    expect((await front!.requests()).at(-1)).toMatchObject({ verdict: 'mismatch', status: 403 });
  });

  it('a clock more than 5 minutes off is refused with aws_clock_skewed, saying by how much', async () => {
    session(directory);
    await front!.setState({ clockOffsetSeconds: 600 });
    const { error, text, sent } = await refusedOpen();
    expect(error).toMatchObject({ code: 'aws_clock_skewed', catalog: front!.uri, status: 403 });
    expect(error.message).toMatch(
      new RegExp(
        `^Iceberg REST catalog ${front!.uri}: GET /v1/config\\?warehouse=${ACCOUNT} was refused \\(403 InvalidSignatureException: Signature expired: \\d{8}T\\d{6}Z is now earlier than \\d{8}T\\d{6}Z \\(\\d{8}T\\d{6}Z - 5 min\\.\\) \\(request credentials: \\[redacted\\]\\)\\): ` +
          `this machine's clock \\(\\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z\\) is more than 5 minutes from the catalog's \\(its answer's Date: \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z, this clock (599|600|601) s behind\\): sync it \\(NTP\\); signed as ASIA…S001/eu-west-1/glue$`,
      ),
    );
    expect(text).not.toContain(SESSION.token);
    expect(sent).toBe(1);
    expect((await front!.requests()).at(-1)).toMatchObject({ verdict: 'skewed', status: 403 });
  });

  it('an expired session token is refused with aws_credentials_expired, naming the key, never the token', async () => {
    awsEnvironment(directory, { AWS_ACCESS_KEY_ID: ENDED.id, AWS_SECRET_ACCESS_KEY: ENDED.secret, AWS_SESSION_TOKEN: ENDED.token });
    const { error, text, sent } = await refusedOpen();
    expect(error).toMatchObject({ code: 'aws_credentials_expired', catalog: front!.uri, status: 403 });
    expect(error.message).toBe(
      `Iceberg REST catalog ${front!.uri}: GET /v1/config?warehouse=${ACCOUNT} was refused (403 ExpiredTokenException: The security token included in the request is expired (request credentials: [redacted])): ` +
        "the session token of access key ASIA…ED01 has expired: renew the temporary credentials (AWS_SESSION_TOKEN, the role's session); signed as ASIA…ED01/eu-west-1/glue",
    );
    expect(text).not.toContain(ENDED.token);
    expect(text).not.toContain(ENDED.secret);
    expect(sent).toBe(1);
  });

  it('no AWS credentials anywhere fails with aws_credentials_unavailable before any request', async () => {
    awsEnvironment(directory, {});
    const { error, sent } = await refusedOpen();
    expect(error).toMatchObject({ code: 'aws_credentials_unavailable', catalog: front!.uri });
    expect(error.message).toMatch(
      new RegExp(
        `^Iceberg REST catalog ${front!.uri}: no AWS credentials to sign requests with \\(.+\\): set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or the pod's IAM role \\(IRSA\\)$`,
      ),
    );
    expect(sent).toBe(0);
  });

  it('from the environment file: `check` says who signs and that the catalog answered, `run` lands, and a wrong key fails the tile with aws_signature_mismatch, printing no secret', async () => {
    const ws = await icebergWorkspace(path.join(fixture.root, 'cli'), fixture.sandbox, [faultJob('signed', 'cli.signed', 'replace')], {
      catalog: { type: 'rest', uri: front!.uri, warehouse: ACCOUNT, auth: { type: 'sigv4', signingName: 'glue', signingRegion: REGION } },
      location: path.join(directory, 'warehouse'),
    });
    const env = sandboxEnv(fixture.sandbox);
    const args = ['--config', ws.configFile, '--jobs', ws.jobsDir];
    session(directory);
    const before = (await front!.requests()).length;
    const check = await runCli(['check', ...args], { env });
    expect(check.exitCode, check.stderr).toBe(0);
    const warehouse = `file://${path.join(directory, 'warehouse')}`;
    expect(check.stderr).toBe('');
    expect(check.stdout.split('\n')).toEqual([
      `ok job signed: 12 rows in the tile, 2 columns; iceberg rest ${front!.uri} cli.signed: table absent; a run creates it at ${warehouse}/cli/signed with namespace cli; ` +
        `${warehouse} is writable; signs requests as ASIA…S001/eu-west-1/glue (AWS SigV4); the catalog answered GET /v1/config with them`,
      `  ${path.join(ws.outDir, 'signed-check.csv')} guard: passes: 12 rows; no target yet`,
      '  cli.signed guard: passes: 12 rows; no target yet',
      '',
    ]);
    const run = await runCli(['run', ...args], { env });
    expect(run.exitCode, run.stderr).toBe(0);
    const sent = (await front!.requests()).slice(before);
    expect(sent.length).toBeGreaterThan(5);
    expect(sent.filter((request) => request.verdict !== 'valid')).toEqual([]);

    const wrong = 'tilehouse/cli+wrong/secret/44556677889900aabbcc';
    awsEnvironment(directory, { AWS_ACCESS_KEY_ID: SESSION.id, AWS_SECRET_ACCESS_KEY: wrong, AWS_SESSION_TOKEN: SESSION.token });
    await front!.setState({ echo: wrong });
    const refused = await runCli(['run', ...args], { env });
    expect(refused.exitCode).toBe(1);
    const printed = `${refused.stdout}\n${refused.stderr}\n${JSON.stringify(refused.logs)}`;
    expect(refused.stdout).toBe('');
    // The times a run prints are the machine's: told apart from the rest.
    const lines = refused.stderr.replace(/\(\d+\.\d s\)/g, '(T s)').split('\n');
    expect(lines[0]).toMatch(/^run \d{8}T\d{6}Z-[0-9a-f]{6}: 0 succeeded, 1 failed in [\d.]+ s$/);
    expect(lines.slice(1)).toEqual([
      `  FAIL signed (T s): aws_signature_mismatch: Iceberg REST catalog ${front!.uri}: GET /v1/config?warehouse=${ACCOUNT} was refused (403 InvalidSignatureException: ` +
        'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. ' +
        'Consult the service documentation for details. (request credentials: [redacted], [redacted])): ' +
        "AWS computed another signature: the secret access key is not the one of access key ASIA…S001, or the signing name glue or region eu-west-1 is not the catalog's; " +
        'signed as ASIA…S001/eu-west-1/glue',
      '',
    ]);
    expect(printed).not.toContain(wrong);
    expect(printed).not.toContain(SESSION.token);
  });
});
