import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/config-error.js';
import { icebergEnvironmentSchema } from '../../src/config/iceberg-sink-schema.js';
import { openConfiguredCatalog } from '../../src/sinks/iceberg/catalog-settings.js';

const issues = (result: { success: boolean; error?: { issues: Array<{ path: PropertyKey[]; message: string }> } }) =>
  (result.error?.issues ?? []).map((issue) => `${issue.path.join('.')}: ${issue.message}`);
const location = 's3://lake/warehouse';
const GLUE = 'https://glue.eu-west-1.amazonaws.com/iceberg';

describe('sinks.iceberg.catalog.auth: sigv4 and google', () => {
  it('takes sigv4 with the signing name and region from an amazonaws.com uri, or given; refuses a signing name it cannot find', () => {
    expect(
      issues(icebergEnvironmentSchema.safeParse({ catalog: { type: 'rest', uri: GLUE, warehouse: '123456789012', auth: { type: 'sigv4' } }, location })),
    ).toEqual([]);
    const local = { type: 'rest', uri: 'https://catalog.internal/iceberg' };
    expect(
      issues(icebergEnvironmentSchema.safeParse({ catalog: { ...local, auth: { type: 'sigv4', signingName: 'glue', signingRegion: 'us-east-1' } }, location })),
    ).toEqual([]);
    expect(issues(icebergEnvironmentSchema.safeParse({ catalog: { ...local, auth: { type: 'sigv4' } }, location }))).toEqual([
      "catalog.auth.signingName: set signingName (glue for AWS Glue, s3tables for Amazon S3 Tables): the uri's host is not <service>.<region>.amazonaws.com",
    ]);
    expect(
      issues(icebergEnvironmentSchema.safeParse({ catalog: { ...local, auth: { type: 'sigv4', signingName: 'Glue', signingRegion: 'Ireland' } }, location })),
    ).toEqual([
      'catalog.auth.signingName: must be an AWS signing name such as glue or s3tables',
      'catalog.auth.signingRegion: must be an AWS region such as eu-west-1',
    ]);
    expect(
      issues(icebergEnvironmentSchema.safeParse({ catalog: { type: 'rest', uri: GLUE, auth: { type: 'sigv4', secretAccessKey: 'x' } }, location }))[0],
    ).toMatch(/^catalog\.auth: Unrecognized key: "secretAccessKey"/);
    expect(issues(icebergEnvironmentSchema.safeParse({ catalog: { type: 'rest', uri: GLUE, token: '${T}', auth: { type: 'sigv4' } }, location }))).toEqual([
      'catalog.auth: set one of auth or token: the catalog takes one kind of credentials',
    ]);
  });

  it('takes google with an optional user project', () => {
    const biglake = { type: 'rest', uri: 'https://biglake.googleapis.com/iceberg/v1/restcatalog', warehouse: 'gs://lake-bucket' };
    expect(issues(icebergEnvironmentSchema.safeParse({ catalog: { ...biglake, auth: { type: 'google', userProject: 'lake-billing-7' } }, location }))).toEqual(
      [],
    );
    expect(issues(icebergEnvironmentSchema.safeParse({ catalog: { ...biglake, auth: { type: 'google' } }, location }))).toEqual([]);
    expect(issues(icebergEnvironmentSchema.safeParse({ catalog: { ...biglake, auth: { type: 'google', userProject: 'Lake Billing' } }, location }))).toEqual([
      'catalog.auth.userProject: must be a Google Cloud project id',
    ]);
  });

  it('a sigv4 region neither given, nor in the uri, nor in AWS_REGION / AWS_DEFAULT_REGION is a configuration error naming the field', async () => {
    const settings = icebergEnvironmentSchema.parse({
      catalog: { type: 'rest', uri: 'https://catalog.internal/iceberg', auth: { type: 'sigv4', signingName: 'glue' } },
      location,
    });
    const error = await openConfiguredCatalog(settings, 'config/prod.yaml', { jobName: 'j', target: 'tiles.t' }, {}).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([
      {
        file: 'config/prod.yaml',
        field: 'sinks.iceberg.catalog.auth.signingRegion',
        message: 'the uri https://catalog.internal/iceberg names no AWS region and neither AWS_REGION nor AWS_DEFAULT_REGION is set: set signingRegion',
      },
    ]);
  });
});
