import { describe, expect, it } from 'vitest';
import { environmentSchema } from '../../../src/config/environment-schema.js';
import { storeKindOf, storeOptionsFrom } from '../../../src/sinks/stores/registry.js';

describe('storeKindOf', () => {
  it('gives a bucket URL to its store and every other location to the local one', () => {
    expect(storeKindOf('gs://acme-lake/exports/').name).toBe('gcs');
    expect(storeKindOf('s3://acme-lake/exports/a.csv').name).toBe('s3');
    expect(storeKindOf('/var/exports/').name).toBe('local');
    expect(storeKindOf('out').name).toBe('local');
    // Legal but unusual local paths that merely contain a scheme's letters.
    expect(storeKindOf('exports/gs://x.csv').name).toBe('local');
    expect(storeKindOf('s3-exports/a.csv').name).toBe('local');
  });

  it('gives a malformed attempt at a bucket URL to that store, whose grammar refuses it, never to the local file system', () => {
    expect(storeKindOf('GS://acme-lake/a.csv').name).toBe('gcs');
    expect(storeKindOf('s3:/acme-lake/a.csv').name).toBe('s3');
  });

  it('says which stores need a volume, an IRSA role, and publish before a rename', () => {
    const [local, gcs, s3] = ['out', 'gs://b/', 's3://b/'].map(storeKindOf);
    expect([local!.onThisMachine, gcs!.onThisMachine, s3!.onThisMachine]).toEqual([true, false, false]);
    expect(s3!.serviceAccountAnnotations?.()).toEqual({ 'eks.amazonaws.com/role-arn': 'arn:aws:iam::ACCOUNT_ID:role/tilehouse' });
    expect(gcs!.serviceAccountAnnotations?.()).toBeUndefined();
    expect(gcs!.publishRank).toBeLessThan(local!.publishRank);
    expect(s3!.publishRank).toBeLessThan(local!.publishRank);
  });
});

describe('storeOptionsFrom', () => {
  it("gathers each store's settings from the environment file", () => {
    const environment = environmentSchema.parse({
      source: { baseUrl: 'https://acme.example.com', authUrl: 'https://auth.example.com', clientId: 'c', clientSecret: '${SECRET}' },
      sinks: { gcs: { apiEndpoint: 'https://storage.europe-west3.rep.googleapis.com' }, s3: { region: 'eu-west-1' } },
    });
    expect(storeOptionsFrom(environment)).toMatchObject({
      gcsClient: { apiEndpoint: 'https://storage.europe-west3.rep.googleapis.com' },
      s3: { region: 'eu-west-1' },
    });
  });
});
