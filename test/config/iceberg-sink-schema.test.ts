import { describe, expect, it } from 'vitest';
import type { EnvironmentConfig } from '../../src/config/environment-schema.js';
import type { LoadedJob } from '../../src/config/load-config.js';
import { icebergEnvironmentSchema, icebergIncrementalIssues, icebergSinkSchema } from '../../src/config/iceberg-sink-schema.js';
import { icebergSinkKind } from '../../src/sinks/iceberg/descriptor.js';
import { openConfiguredCatalog } from '../../src/sinks/iceberg/catalog-settings.js';
import { ConfigError } from '../../src/config/config-error.js';
import { loadEnvironment } from '../../src/config/load-config.js';
import { configErrorOf, configFilesEachTest } from '../support/config-files.js';

const issues = (result: { success: boolean; error?: { issues: Array<{ path: PropertyKey[]; message: string }> } }) =>
  (result.error?.issues ?? []).map((issue) => `${issue.path.join('.')}: ${issue.message}`);

describe('icebergSinkSchema', () => {
  it('takes <namespace>.<table> and a write mode, replace by default', () => {
    expect(icebergSinkSchema.parse({ type: 'iceberg', table: 'tiles.incidents' })).toEqual({ type: 'iceberg', table: 'tiles.incidents', writeMode: 'replace' });
    expect(issues(icebergSinkSchema.safeParse({ type: 'iceberg', table: 'incidents' }))).toEqual([
      'table: must be <namespace>.<table>, each of letters, digits and _ (e.g. tiles.incidents)',
    ]);
    expect(issues(icebergSinkSchema.safeParse({ type: 'iceberg', table: 'a.b.c' }))).toHaveLength(1);
  });

  it("takes partition with partitionBy and merge with primaryKey, with the PostgreSQL sink's rules, latestBy with merge only", () => {
    expect(issues(icebergSinkSchema.safeParse({ type: 'iceberg', table: 't.a', writeMode: 'partition', partitionBy: { column: 'Day' } }))).toEqual([]);
    expect(issues(icebergSinkSchema.safeParse({ type: 'iceberg', table: 't.a', writeMode: 'merge', primaryKey: ['Number', 'Day'] }))).toEqual([]);
    expect(issues(icebergSinkSchema.safeParse({ type: 'iceberg', table: 't.a', writeMode: 'merge' }))).toEqual([
      'writeMode: writeMode: merge needs primaryKey: the columns whose values identify a row',
    ]);
    expect(issues(icebergSinkSchema.safeParse({ type: 'iceberg', table: 't.a', writeMode: 'partition' }))).toEqual([
      'writeMode: writeMode: partition needs partitionBy.column: the DATE or TIMESTAMP column whose days a run replaces',
    ]);
    expect(issues(icebergSinkSchema.safeParse({ type: 'iceberg', table: 't.a', partitionBy: { column: 'Day' } }))).toEqual([
      "partitionBy: only with writeMode: partition (this sink's is replace)",
    ]);
    expect(issues(icebergSinkSchema.safeParse({ type: 'iceberg', table: 't.a', writeMode: 'append', primaryKey: ['n'] }))).toEqual([
      "primaryKey: only with writeMode: merge (this sink's is append)",
    ]);
    expect(issues(icebergSinkSchema.safeParse({ type: 'iceberg', table: 't.a', writeMode: 'merge', primaryKey: ['n', 'n'] }))).toEqual([
      'primaryKey.1: listed twice',
    ]);
    expect(issues(icebergSinkSchema.safeParse({ type: 'iceberg', table: 't.a', writeMode: 'merge', primaryKey: ['n'], latestBy: 'updated' }))).toEqual([]);
    expect(
      issues(icebergSinkSchema.safeParse({ type: 'iceberg', table: 't.a', writeMode: 'partition', partitionBy: { column: 'Day' }, latestBy: 'u' })),
    ).toEqual(["latestBy: only with writeMode: merge (this sink's is partition)"]);
  });
});

describe('the iceberg kind and windows', () => {
  const jobWith = (sink: Record<string, unknown>) => ({ name: 'daily', file: 'jobs/daily.yaml', sinks: [sink] }) as unknown as LoadedJob;
  const windowed = (sink: Record<string, unknown>) => icebergSinkKind.forWindows(sink as never, 0, jobWith(sink));

  it('takes partition and merge for windowed jobs, merges one window at a time, and refuses replace and append naming file, field and value', () => {
    expect(windowed({ type: 'iceberg', table: 't.a', writeMode: 'partition', partitionBy: { column: 'Day' } }).problems).toEqual([]);
    expect(windowed({ type: 'iceberg', table: 't.a', writeMode: 'merge', primaryKey: ['n'] }).problems).toEqual([]);
    expect(windowed({ type: 'iceberg', table: 't.a', writeMode: 'append' }).problems).toEqual([
      {
        file: 'jobs/daily.yaml',
        field: 'sinks[0].writeMode',
        value: '"append"',
        message: "a backfill replaces each window's days, or merges each window by key: use writeMode: partition or merge",
      },
    ]);
    expect(icebergSinkKind.takesWindowsOneAtATime({ type: 'iceberg', table: 't.a', writeMode: 'merge', primaryKey: ['n'] } as never)).toBe(true);
    expect(icebergSinkKind.takesWindowsOneAtATime({ type: 'iceberg', table: 't.a', writeMode: 'partition', partitionBy: { column: 'd' } } as never)).toBe(
      false,
    );
    expect(
      icebergIncrementalIssues(icebergSinkSchema.parse({ type: 'iceberg', table: 't.a', writeMode: 'partition', partitionBy: { column: 'd' } }), 0),
    ).toEqual([]);
    expect(icebergIncrementalIssues(icebergSinkSchema.parse({ type: 'iceberg', table: 't.a' }), 1)[0]).toMatchObject({
      path: ['sinks', 1, 'writeMode'],
      input: 'replace',
    });
  });
});

describe('icebergEnvironmentSchema', () => {
  const location = '/var/lib/tilehouse/warehouse';

  it('refuses a literal REST token and a relative location; takes ${ENV} or a file', () => {
    expect(issues(icebergEnvironmentSchema.safeParse({ catalog: { type: 'rest', uri: 'https://cat.example', token: 'abc' }, location }))).toEqual([
      'catalog.token: must be a reference like ${TILEHOUSE_ICEBERG_TOKEN}; literal secrets are refused in YAML',
    ]);
    expect(issues(icebergEnvironmentSchema.safeParse({ catalog: { type: 'rest', uri: 'https://cat.example' }, location: 'warehouse' }))).toEqual([
      'location: must be an absolute directory, a file: URI, or a prefix in Cloud Storage (gs://bucket/object) and S3 (s3://bucket/key) (e.g. /var/lib/tilehouse/warehouse or s3://bucket/warehouse)',
    ]);
    expect(
      issues(icebergEnvironmentSchema.safeParse({ catalog: { type: 'rest', uri: 'https://cat.example', token: '${T}', tokenFile: '/t' }, location })),
    ).toEqual(['catalog.token: set one of token or tokenFile']);
  });

  it("takes a bucket's prefix in the stores' URL grammar as the location, and refuses a malformed one by the store's rule", () => {
    const catalog = { type: 'rest', uri: 'https://cat.example' };
    for (const good of ['gs://lake-bucket/warehouse', 's3://lake-bucket/warehouse', 's3://lake-bucket', 's3://lake-bucket/warehouse/'])
      expect(issues(icebergEnvironmentSchema.safeParse({ catalog, location: good })), good).toEqual([]);
    expect(issues(icebergEnvironmentSchema.safeParse({ catalog, location: 's3://Lake_Bucket/warehouse' }))).toEqual([
      'location: bucket name "Lake_Bucket" must use lowercase letters, digits, "-" and "." and start and end with a letter or digit',
    ]);
    expect(issues(icebergEnvironmentSchema.safeParse({ catalog, location: 's3://lake-bucket/a//b' }))).toEqual([
      'location: empty path segments ("//" or a leading "/") are not allowed',
    ]);
    expect(issues(icebergEnvironmentSchema.safeParse({ catalog, location: 'S3://lake-bucket/warehouse' }))[0]).toMatch(
      /^location: an S3 URL starts with "s3:\/\/"/,
    );
    expect(issues(icebergEnvironmentSchema.safeParse({ catalog, location: 'abfss://lake@acct.dfs.core.windows.net/w' }))).toEqual([
      'location: must be an absolute directory, a file: URI, or a prefix in Cloud Storage (gs://bucket/object) and S3 (s3://bucket/key), written in lowercase',
    ]);
  });

  it("takes the JDBC catalog's connection as sinks.postgres takes one", () => {
    const jdbc = { type: 'jdbc', catalogName: 'lake', host: 'db', database: 'lake', user: 'tilehouse' };
    expect(issues(icebergEnvironmentSchema.safeParse({ catalog: { ...jdbc, password: 'hunter2' }, location }))).toEqual([
      'catalog.password: must be a reference like ${TILEHOUSE_POSTGRES_PASSWORD}; literal secrets are refused in YAML',
    ]);
    expect(issues(icebergEnvironmentSchema.safeParse({ catalog: jdbc, location }))).toEqual([
      'catalog.password: set exactly one of password (${ENV_NAME}) or passwordFile',
    ]);
    expect(issues(icebergEnvironmentSchema.safeParse({ catalog: { ...jdbc, password: '${P}', schema: 'x' }, location }))[0]).toMatch(/catalog/);
  });
});

describe('the iceberg kind', () => {
  const job = { name: 'j', file: 'jobs/j.yaml', sinks: [{ type: 'iceberg', table: 'tiles.t', writeMode: 'replace' }] } as unknown as LoadedJob;
  const environmentWith = (catalog: Record<string, unknown>) =>
    ({ sinks: { iceberg: icebergEnvironmentSchema.parse({ catalog, location: '/w' }) } }) as unknown as EnvironmentConfig;

  it("names the REST token and the JDBC catalog's password for tilehouse k8s", () => {
    expect(icebergSinkKind.secrets(environmentWith({ type: 'rest', uri: 'https://cat.example', token: '${ICE_TOKEN}' }), [job])).toEqual([
      { field: 'sinks.iceberg.catalog.token', key: 'iceberg-token', reference: '${ICE_TOKEN}' },
    ]);
    expect(
      icebergSinkKind.secrets(environmentWith({ type: 'jdbc', catalogName: 'c', host: 'h', database: 'd', user: 'u', passwordFile: '/s/p' }), [job]),
    ).toEqual([{ field: 'sinks.iceberg.catalog.passwordFile', key: 'iceberg-catalog-password', file: '/s/p' }]);
    expect(icebergSinkKind.secrets(environmentWith({ type: 'rest', uri: 'https://cat.example', token: '${ICE_TOKEN}' }), [])).toEqual([]);
  });

  it('a token variable that is not set is a configuration error naming the field and the reference, never a value', async () => {
    const settings = icebergEnvironmentSchema.parse({ catalog: { type: 'rest', uri: 'http://127.0.0.1:9', token: '${ICE_UNSET_TOKEN}' }, location: '/w' });
    const error = await openConfiguredCatalog(settings, 'config/prod.yaml', { jobName: 'j', target: 'tiles.t' }, {}).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([
      {
        file: 'config/prod.yaml',
        field: 'sinks.iceberg.catalog.token',
        value: '"${ICE_UNSET_TOKEN}"',
        message: 'environment variable ICE_UNSET_TOKEN is not set',
      },
    ]);
  });

  it('names the OAuth2 client secret for tilehouse k8s (iceberg-client-secret), by reference or file; the client id is no secret', () => {
    const auth = { type: 'oauth2', clientId: 'loader' };
    expect(
      icebergSinkKind.secrets(environmentWith({ type: 'rest', uri: 'https://cat.example', auth: { ...auth, clientSecret: '${ICE_SECRET}' } }), [job]),
    ).toEqual([{ field: 'sinks.iceberg.catalog.auth.clientSecret', key: 'iceberg-client-secret', reference: '${ICE_SECRET}' }]);
    expect(icebergSinkKind.secrets(environmentWith({ type: 'rest', uri: 'https://cat.example', auth: { ...auth, clientSecretFile: '/s/c' } }), [job])).toEqual([
      { field: 'sinks.iceberg.catalog.auth.clientSecretFile', key: 'iceberg-client-secret', file: '/s/c' },
    ]);
  });

  it('an unset client secret variable is a configuration error naming the field and the reference', async () => {
    const settings = icebergEnvironmentSchema.parse({
      catalog: { type: 'rest', uri: 'http://127.0.0.1:9', auth: { type: 'oauth2', clientId: 'loader', clientSecret: '${ICE_UNSET_SECRET}' } },
      location: '/w',
    });
    const error = await openConfiguredCatalog(settings, 'config/prod.yaml', { jobName: 'j', target: 'tiles.t' }, {}).catch((thrown: unknown) => thrown);
    expect((error as ConfigError).problems).toEqual([
      {
        file: 'config/prod.yaml',
        field: 'sinks.iceberg.catalog.auth.clientSecret',
        value: '"${ICE_UNSET_SECRET}"',
        message: 'environment variable ICE_UNSET_SECRET is not set',
      },
    ]);
  });
});

describe('catalog.auth and housekeeping in the environment schema', () => {
  const location = '/var/lib/tilehouse/warehouse';
  const rest = { type: 'rest', uri: 'https://cat.example' };

  it('takes OAuth2 client credentials with the secret by reference or file only, and not beside a token', () => {
    const auth = { type: 'oauth2', clientId: 'loader' };
    expect(
      issues(icebergEnvironmentSchema.safeParse({ catalog: { ...rest, auth: { ...auth, clientSecret: '${S}', scope: 'PRINCIPAL_ROLE:loader' } }, location })),
    ).toEqual([]);
    expect(
      issues(
        icebergEnvironmentSchema.safeParse({
          catalog: { ...rest, auth: { ...auth, clientSecretFile: '/s/c', serverUri: 'https://idp.example/token' } },
          location,
        }),
      ),
    ).toEqual([]);
    expect(issues(icebergEnvironmentSchema.safeParse({ catalog: { ...rest, auth: { ...auth, clientSecret: 'hunter2' } }, location }))).toEqual([
      'catalog.auth.clientSecret: must be a reference like ${TILEHOUSE_ICEBERG_CLIENT_SECRET}; literal secrets are refused in YAML',
    ]);
    expect(issues(icebergEnvironmentSchema.safeParse({ catalog: { ...rest, auth }, location }))).toEqual([
      'catalog.auth.clientSecret: set exactly one of clientSecret (${ENV_NAME}) or clientSecretFile',
    ]);
    expect(
      issues(icebergEnvironmentSchema.safeParse({ catalog: { ...rest, auth: { ...auth, clientSecret: '${S}', clientSecretFile: '/s/c' } }, location })),
    ).toEqual(['catalog.auth.clientSecret: set exactly one of clientSecret (${ENV_NAME}) or clientSecretFile']);
    expect(issues(icebergEnvironmentSchema.safeParse({ catalog: { ...rest, token: '${T}', auth: { ...auth, clientSecret: '${S}' } }, location }))).toEqual([
      'catalog.auth: set one of auth or token: the catalog takes one kind of credentials',
    ]);
    expect(
      issues(icebergEnvironmentSchema.safeParse({ catalog: { ...rest, auth: { ...auth, clientSecret: '${S}', serverUri: 'ftp://idp' } }, location }))[0],
    ).toMatch(/^catalog\.auth\.serverUri: /);
  });

  it("takes the housekeeping policy's four values, each optional (the writer's defaults)", () => {
    const housekeeping = { keepSnapshots: 2, maxSnapshotAgeDays: 0.5, previousMetadataVersions: 0, orphanMinAgeHours: 24 };
    expect(icebergEnvironmentSchema.parse({ catalog: rest, location, housekeeping }).housekeeping).toEqual(housekeeping);
    expect(icebergEnvironmentSchema.parse({ catalog: rest, location, housekeeping: {} }).housekeeping).toEqual({});
    expect(icebergEnvironmentSchema.parse({ catalog: rest, location }).housekeeping).toBeUndefined();
  });

  const files = configFilesEachTest();
  const environmentText = (iceberg: string[]) =>
    [
      'source:', // 1
      '  baseUrl: http://127.0.0.1:9', // 2
      '  authUrl: http://127.0.0.1:9', // 3
      '  clientId: ${TEST_CLIENT_ID}', // 4
      '  clientSecret: ${TEST_CLIENT_SECRET}', // 5
      'sinks:', // 6
      '  iceberg:', // 7
      '    catalog:', // 8
      '      type: rest', // 9
      '      uri: https://cat.example', // 10
      ...iceberg, // 11...
      '',
    ].join('\n');

  it('refuses bad housekeeping values and a malformed bucket location, naming the file, the field, the line and the value', async () => {
    const file = await files.write(
      'env.yaml',
      environmentText([
        '    location: s3://Warehouse/tables', // 11
        '    housekeeping:', // 12
        '      keepSnapshots: 0', // 13
        '      maxSnapshotAgeDays: -1', // 14
        '      previousMetadataVersions: 2.5', // 15
        '      orphanMinAgeHours: soon', // 16
        '      keepDays: 3', // 17
      ]),
    );
    const error = await configErrorOf(loadEnvironment(file));
    const shown = error.problems.map(({ field, line, value, message }) => ({ field, line, value, message }));
    expect(shown).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          field: 'sinks.iceberg.location',
          line: 11,
          value: '"s3://Warehouse/tables"',
          message: expect.stringMatching(/bucket name "Warehouse"/),
        }),
        expect.objectContaining({
          field: 'sinks.iceberg.housekeeping.keepSnapshots',
          line: 13,
          value: '0',
          message: 'must be at least 1 (the current snapshot)',
        }),
        expect.objectContaining({ field: 'sinks.iceberg.housekeeping.maxSnapshotAgeDays', line: 14, value: '-1' }),
        expect.objectContaining({ field: 'sinks.iceberg.housekeeping.previousMetadataVersions', line: 15, value: '2.5' }),
        expect.objectContaining({ field: 'sinks.iceberg.housekeeping.orphanMinAgeHours', line: 16, value: '"soon"' }),
      ]),
    );
    expect(shown.some((problem) => /keepDays/.test(`${problem.field} ${problem.message}`))).toBe(true);
    for (const problem of error.problems) expect(problem.file).toBe(file);
  });
});
