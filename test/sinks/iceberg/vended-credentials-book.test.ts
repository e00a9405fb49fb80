import { describe, expect, it } from 'vitest';
import { icebergEnvironmentSchema } from '../../../src/config/iceberg-sink-schema.js';
import { scrubSecrets } from '../../../src/secret-scrubber.js';
import { type StorageCredential, VendedCredentialBook, vendedCredentialsIn } from '../../../src/sinks/iceberg/vended-credentials.js';
import { vendedS3Credentials } from '../../../src/sinks/stores/s3/vended-identity.js';

const TABLE = 's3://lake/warehouse/ns/t';

function keys(name: string, expiresAtMs?: number): Record<string, string> {
  return {
    's3.access-key-id': `ASIA${name.toUpperCase()}KEYID`,
    's3.secret-access-key': `secret-of-${name}-0123456789`,
    's3.session-token': `token-of-${name}-0123456789`,
    ...(expiresAtMs === undefined ? {} : { 's3.session-token-expires-at-ms': String(expiresAtMs) }),
    's3.endpoint': 'https://s3.eu-west-1.amazonaws.com',
  };
}

describe('vendedCredentialsIn', () => {
  it('takes the storage-credentials list before config, and config for the whole table when the list is absent', () => {
    const listed = vendedCredentialsIn('ns.t', { config: keys('config'), 'storage-credentials': [{ prefix: `${TABLE}/data`, config: keys('listed') }] }, TABLE);
    expect(listed).toEqual([{ prefix: `${TABLE}/data`, config: keys('listed') }]);
    expect(vendedCredentialsIn('ns.t', { config: keys('config') }, TABLE)).toEqual([{ prefix: TABLE, config: keys('config') }]);
  });

  it('finds none in an answer without credential properties (an endpoint and a region are not credentials)', () => {
    expect(vendedCredentialsIn('ns.t', { config: { 's3.endpoint': 'https://s3', 'client.region': 'eu-west-1' } }, TABLE)).toEqual([]);
    expect(vendedCredentialsIn('ns.t', { 'storage-credentials': [] }, TABLE)).toEqual([]);
    expect(vendedCredentialsIn('ns.t', {}, TABLE)).toEqual([]);
  });

  it('registers every key, secret and token with the scrubber as it reads them', () => {
    vendedCredentialsIn('ns.t', { 'storage-credentials': [{ prefix: TABLE, config: keys('scrubbed') }] }, TABLE);
    const { 's3.access-key-id': id, 's3.secret-access-key': secret, 's3.session-token': token } = keys('scrubbed');
    expect(scrubSecrets(`id ${id} secret ${secret} token ${token}`)).toBe('id [redacted] secret [redacted] token [redacted]');
  });

  it('refuses a malformed list with iceberg_vended_credentials_failed, naming the field, never the value', () => {
    const malformed = () => vendedCredentialsIn('ns.t', { 'storage-credentials': [{ prefix: TABLE, config: { 's3.secret-access-key': 12345678 } }] }, TABLE);
    expect(malformed).toThrow(
      expect.objectContaining({
        code: 'iceberg_vended_credentials_failed',
        message: "Iceberg table ns.t: the REST catalog's storage credentials are malformed: storage-credentials.0.config.s3.secret-access-key",
      }),
    );
  });
});

describe('VendedCredentialBook', () => {
  it('answers the credential of the longest prefix that holds a file, none for a file outside every prefix', async () => {
    const book = new VendedCredentialBook();
    const credentials: StorageCredential[] = [
      { prefix: TABLE, config: keys('table') },
      { prefix: `${TABLE}/data`, config: keys('data') },
    ];
    book.record('ns.t', TABLE, credentials, () => Promise.resolve(credentials));
    expect(await book.lookup(`${TABLE}/data/a.parquet`)?.current()).toEqual(keys('data'));
    expect(await book.lookup(`${TABLE}/metadata/m.avro`)?.current()).toEqual(keys('table'));
    expect(book.lookup(`${TABLE}2/metadata/m.avro`)).toBeUndefined();
    expect(book.lookup('s3://lake/elsewhere/x')).toBeUndefined();
    expect(book.holds('ns.t')).toBe(true);
  });

  it('renews once when the keys are in the last quarter of their life, the asks meanwhile sharing the renewal', async () => {
    let now = 1_000_000;
    const book = new VendedCredentialBook(() => now);
    let renewals = 0;
    book.record('ns.t', TABLE, [{ prefix: TABLE, config: keys('first', now + 4_000) }], async () => {
      renewals += 1;
      await new Promise((resolve) => setTimeout(resolve, 10));
      return [{ prefix: TABLE, config: keys(`renewed${renewals}`, now + 4_000) }];
    });
    const vended = book.lookup(`${TABLE}/data/a.parquet`)!;
    now += 2_999;
    expect(await vended.current()).toEqual(keys('first', 1_004_000));
    now += 1;
    const asks = await Promise.all([vended.current(), vended.current(), vended.current()]);
    expect(renewals).toBe(1);
    expect(asks).toEqual([1, 2, 3].map(() => keys('renewed1', 1_007_000)));
    expect(await vended.current()).toEqual(keys('renewed1', 1_007_000));
    expect(renewals).toBe(1);
  });

  it('fails a renewal the catalog refused, or answered with none, with iceberg_vended_credentials_failed', async () => {
    let now = 0;
    const book = new VendedCredentialBook(() => now);
    book.record('ns.t', TABLE, [{ prefix: TABLE, config: keys('first', 1_000) }], () => Promise.reject(new Error('connection refused')));
    now = 1_000;
    await expect(book.lookup(`${TABLE}/x`)!.current()).rejects.toMatchObject({
      code: 'iceberg_vended_credentials_failed',
      message: 'Iceberg table ns.t: renewing the storage credentials the REST catalog vended failed: connection refused',
    });
    book.record('ns.u', `${TABLE}u`, [{ prefix: `${TABLE}u`, config: keys('first', 1_000) }], () => Promise.resolve([]));
    await expect(book.lookup(`${TABLE}u/x`)!.current()).rejects.toMatchObject({ code: 'iceberg_vended_credentials_failed' });
  });
});

describe('vendedS3Credentials', () => {
  it('answers the S3 keys as the SDK identity, its expiration the session token expiry', async () => {
    const provider = vendedS3Credentials({ prefix: TABLE, current: () => Promise.resolve(keys('sdk', 1_765_000_000_000)) });
    expect(await provider()).toEqual({
      accessKeyId: 'ASIASDKKEYID',
      secretAccessKey: 'secret-of-sdk-0123456789',
      sessionToken: 'token-of-sdk-0123456789',
      expiration: new Date(1_765_000_000_000),
    });
  });

  it('refuses credentials without S3 keys as permission_denied, naming the properties it was given, not their values', async () => {
    const provider = vendedS3Credentials({ prefix: TABLE, current: () => Promise.resolve({ 'gcs.oauth2.token': 'ya29.secret-token-value' }) });
    await expect(provider()).rejects.toMatchObject({
      code: 'permission_denied',
      message: expect.stringContaining(
        `the catalog vended credentials for ${TABLE} without S3 keys (s3.access-key-id and s3.secret-access-key): gcs.oauth2.token`,
      ),
    });
  });
});

describe('sinks.iceberg.catalog.accessDelegation', () => {
  const environment = (catalog: Record<string, unknown>) => ({
    catalog: { type: 'rest', uri: 'https://polaris.example/api/catalog', ...catalog },
    location: 's3://lake/warehouse',
  });
  const issues = (value: unknown) =>
    (icebergEnvironmentSchema.safeParse(value).error?.issues ?? []).map((issue) => `${issue.path.join('.')}: ${issue.message}`);

  it('takes vended-credentials on a REST catalog, and refuses another value or a JDBC catalog naming the field', () => {
    expect(icebergEnvironmentSchema.parse(environment({ accessDelegation: 'vended-credentials' })).catalog).toMatchObject({
      accessDelegation: 'vended-credentials',
    });
    expect(issues(environment({ accessDelegation: 'remote-signing' }))).toEqual(['catalog.accessDelegation: Invalid input: expected "vended-credentials"']);
    expect(
      issues({
        catalog: { type: 'jdbc', catalogName: 'c', host: 'db', database: 'lake', user: 'u', password: '${PW}', accessDelegation: 'vended-credentials' },
        location: '/w',
      }),
    ).toEqual(['catalog: Unrecognized key: "accessDelegation"']);
  });
});
