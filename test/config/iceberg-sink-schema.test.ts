import { describe, expect, it } from 'vitest';
import type { EnvironmentConfig } from '../../src/config/environment-schema.js';
import type { LoadedJob } from '../../src/config/load-config.js';
import { icebergEnvironmentSchema, icebergSinkSchema } from '../../src/config/iceberg-sink-schema.js';
import { icebergSinkKind } from '../../src/sinks/iceberg/descriptor.js';
import { openConfiguredCatalog } from '../../src/sinks/iceberg/catalog-settings.js';
import { ConfigError } from '../../src/config/config-error.js';

const issues = (result: { success: boolean; error?: { issues: Array<{ path: PropertyKey[]; message: string }> } }) =>
  (result.error?.issues ?? []).map((issue) => `${issue.path.join('.')}: ${issue.message}`);

describe('icebergSinkSchema', () => {
  it('takes <namespace>.<table> and replace or append, replace by default', () => {
    expect(icebergSinkSchema.parse({ type: 'iceberg', table: 'tiles.incidents' })).toEqual({ type: 'iceberg', table: 'tiles.incidents', writeMode: 'replace' });
    expect(issues(icebergSinkSchema.safeParse({ type: 'iceberg', table: 'incidents' }))).toEqual([
      'table: must be <namespace>.<table>, each of letters, digits and _ (e.g. tiles.incidents)',
    ]);
    expect(issues(icebergSinkSchema.safeParse({ type: 'iceberg', table: 'a.b.c' }))).toHaveLength(1);
    expect(issues(icebergSinkSchema.safeParse({ type: 'iceberg', table: 'tiles.incidents', writeMode: 'merge' }))[0]).toMatch(/^writeMode: /);
    expect(issues(icebergSinkSchema.safeParse({ type: 'iceberg', table: 'tiles.incidents', partitionBy: { column: 'Day' } }))[0]).toMatch(/partitionBy/);
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
});
