import { describe, expect, it } from 'vitest';
import type { EnvironmentConfig } from '../../src/config/environment-schema.js';
import type { LoadedJob } from '../../src/config/load-config.js';
import { icebergEnvironmentSchema, icebergIncrementalIssues, icebergSinkSchema } from '../../src/config/iceberg-sink-schema.js';
import { icebergSinkKind } from '../../src/sinks/iceberg/descriptor.js';
import { openConfiguredCatalog } from '../../src/sinks/iceberg/catalog-settings.js';
import { ConfigError } from '../../src/config/config-error.js';

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

  it("takes partition with partitionBy and merge with primaryKey, with the PostgreSQL sink's rules, and refuses latestBy", () => {
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
    expect(issues(icebergSinkSchema.safeParse({ type: 'iceberg', table: 't.a', writeMode: 'merge', primaryKey: ['n'], latestBy: 'updated' }))).toEqual([
      'latestBy: an iceberg sink refuses a run whose rows share a primaryKey instead of choosing one of them: remove latestBy',
    ]);
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
      'location: must be an absolute directory or a file: URI (e.g. /var/lib/tilehouse/warehouse or file:///var/lib/tilehouse/warehouse)',
    ]);
    expect(
      issues(icebergEnvironmentSchema.safeParse({ catalog: { type: 'rest', uri: 'https://cat.example', token: '${T}', tokenFile: '/t' }, location })),
    ).toEqual(['catalog.token: set one of token or tokenFile']);
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
