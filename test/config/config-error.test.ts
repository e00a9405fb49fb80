import { describe, expect, it } from 'vitest';
import { ConfigError, formatProblem, isSecretField, shownValue } from '../../src/config/config-error.js';

const SECRET = '"S3cr3t-hunter2-Zq9"';

describe('isSecretField', () => {
  it.each([
    'source.clientSecret',
    'sinks.postgres.password',
    'sinks.postgres.url',
    'sinks.iceberg.catalog.password',
    'sinks.iceberg.catalog.url',
    'sinks.iceberg.catalog.token',
    'sinks.iceberg.catalog.auth.clientSecret',
    'sinks.iceberg.catalog.auth.clientId',
    'lineage.transport.auth',
    'lineage.transport.auth.apiKey',
    'sinks.postgres.passwordFile',
    'sinks.iceberg.catalog.tokenFile',
    'keyFile',
    'x.credentials',
    'x.dsn',
    'sinks.postgres',
    'sinks.iceberg.catalog',
    'lineage.transport',
  ])('%s holds (or may hold) a secret', (field) => expect(isSecretField(field)).toBe(true));

  it.each([
    'source.baseUrl',
    'source.tokenScope',
    'googleCredentialsWaitMs',
    'sinks[0].primaryKey',
    'sinks[0]',
    'sinks',
    'columns.Incident',
    'query.items[2].header',
    'metrics.pushgatewayUrl',
  ])('%s does not', (field) => expect(isSecretField(field)).toBe(false));
});

describe('shownValue', () => {
  it('never shows a secret field, whatever the type given, but an ${ENV_NAME} reference', () => {
    for (const value of [SECRET, `[${SECRET}]`, `{"k":${SECRET}}`, '42', 'true'])
      expect(shownValue({ field: 'sinks.postgres.password', value })).toBeUndefined();
    expect(shownValue({ field: 'sinks.postgres.password', value: '"${PGPASSWORD}"' })).toBe('"${PGPASSWORD}"');
  });

  it("shows a secret file's path, not a secret pasted into the file field", () => {
    expect(shownValue({ field: 'source.clientSecretFile', value: '"/var/run/secrets/tilehouse/client-secret"' })).toBe(
      '"/var/run/secrets/tilehouse/client-secret"',
    );
    expect(shownValue({ field: 'source.clientSecretFile', value: '"secret.txt"' })).toBe('"secret.txt"');
    expect(shownValue({ field: 'source.clientSecretFile', value: SECRET })).toBeUndefined();
    expect(shownValue({ field: 'source.clientSecretFile', value: '"eyJhbGciOi.eyJzdWIiOiIx.c2ln"' })).toBeUndefined();
  });

  it("hides a URL's credentials in any field, and a map or list with a secret's key in it", () => {
    expect(shownValue({ field: 'metrics.pushgatewayUrl', value: '"https://push:S3cr3t@push.internal"' })).toBeUndefined();
    expect(shownValue({ field: 'sinks.s3.endpoint', value: '"https://minio.internal/?token=S3cr3t"' })).toBeUndefined();
    expect(shownValue({ field: 'x', value: '{"password":"S3cr3t"}' })).toBeUndefined();
    expect(shownValue({ field: 'columns.Incident', value: '{"type":"INT64"}' })).toBe('{"type":"INT64"}');
    expect(shownValue({ field: 'sinks[1].primaryKey', value: '["Type"]' })).toBe('["Type"]');
  });
});

describe('ConfigError', () => {
  it('keeps no secret value in its problems nor its message, however the problem was built', () => {
    const error = new ConfigError([{ file: 'env.yaml', line: 14, field: 'sinks.postgres.password', value: SECRET, message: 'must be a reference' }]);
    expect(error.message).toBe('env.yaml:14: sinks.postgres.password: must be a reference');
    expect(error.problems).toEqual([{ file: 'env.yaml', line: 14, field: 'sinks.postgres.password', message: 'must be a reference' }]);
    expect(formatProblem({ file: 'env.yaml', field: 'source.clientSecret', value: SECRET, message: 'm' })).toBe('env.yaml: source.clientSecret: m');
  });
});
