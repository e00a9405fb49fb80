import { describe, expect, it } from 'vitest';
import { environmentSchema } from '../../src/config/environment-schema.js';
import { parseS3ObjectUrl, s3BucketNameProblem, s3UrlProblem } from '../../src/config/s3-url.js';
import { csvFormat } from '../../src/sinks/csv/csv-format.js';
import { FilePathTemplate } from '../../src/sinks/files/path-template.js';
import { storeKindOf } from '../../src/sinks/stores/registry.js';

const values = { name: 'incidents', tile: 'tile/7', date: '2026-07-01', runId: 'r1' };

describe('s3:// URLs', () => {
  it('accepts S3 bucket names and refuses what S3 refuses', () => {
    expect(s3BucketNameProblem('acme-lake')).toBeUndefined();
    expect(s3BucketNameProblem('acme.lake.eu')).toBeUndefined();
    expect(s3BucketNameProblem('Acme_Lake')).toMatch(/lowercase/);
    expect(s3BucketNameProblem('ab')).toMatch(/3 to 63/);
    expect(s3BucketNameProblem('a..b')).toMatch(/adjacent dots/);
    expect(s3BucketNameProblem('192.168.1.1')).toMatch(/IP address/);
    expect(s3BucketNameProblem('xn--lake')).toMatch(/reserves/);
    // An underscore is legal for Cloud Storage, not for S3.
    expect(s3BucketNameProblem('acme_lake')).toMatch(/lowercase/);
  });

  it('parses an object URL and refuses folder-like keys', () => {
    expect(parseS3ObjectUrl('s3://acme-lake/a/b.parquet')).toEqual({ bucket: 'acme-lake', key: 'a/b.parquet' });
    expect(s3UrlProblem('s3://acme-lake/a//b.csv', { object: 'required' })).toMatch(/empty path segments/);
    expect(s3UrlProblem('s3://acme-lake/a/', { object: 'required' })).toMatch(/directory/);
    expect(s3UrlProblem('s3://acme-lake/prefix/', { object: 'optional' })).toBeUndefined();
    expect(s3UrlProblem('S3://acme-lake/a.csv', { object: 'required' })).toMatch(/lowercase/);
  });
});

describe('a path template naming S3', () => {
  it('resolves a full s3:// template and a relative one under an s3:// directory, never through node:path', () => {
    expect(new FilePathTemplate(csvFormat, 's3://acme-lake/{tile}/{date}.csv').resolve(values, 'out')).toBe('s3://acme-lake/tile_7/2026-07-01.csv');
    const relative = new FilePathTemplate(csvFormat, '{name}/{date}.csv').resolve(values, 's3://acme-lake/tilehouse/');
    expect(relative).toBe('s3://acme-lake/tilehouse/incidents/2026-07-01.csv');
    expect(storeKindOf(relative).name).toBe('s3');
    expect(new FilePathTemplate(csvFormat, '/exports/{name}.csv').resolve(values, 's3://acme-lake/p')).toBe('/exports/incidents.csv');
  });

  it('scopes the sweep to the fixed prefix, and keys a target by its URL', () => {
    expect(new FilePathTemplate(csvFormat, 's3://acme-lake/prefix/{name}/{date}.csv').sweepScope('out')).toEqual({
      root: 's3://acme-lake/prefix/',
      recursive: true,
    });
    expect(new FilePathTemplate(csvFormat, '{name}.csv').sweepScope('s3://acme-lake/p')).toEqual({ root: 's3://acme-lake/p/', recursive: false });
    expect(new FilePathTemplate(csvFormat, '{name}.csv').targetKey({ name: 'n', tile: 't' }, 's3://acme-lake/p')).toBe('s3://acme-lake/p/n.csv');
  });

  it.each([
    ['s3://{name}/a.csv', /bucket must be fixed text/],
    ['s3://Bad_Bucket/a.csv', /lowercase/],
    ['s3://acme-lake', /no object name/],
    ['s3://acme-lake/../a.csv', /"\.\."/],
    // A malformed attempt at an S3 URL is refused, as a Cloud Storage one is, never written as a local `<dir>/s3:/…`.
    ['s3:/acme-lake/a.csv', /only Cloud Storage \(gs:\/\/bucket\/object\) and S3 \(s3:\/\/bucket\/key\) URLs are supported/],
  ])('refuses the template %s at construction (path_invalid)', (text, reason) => {
    expect(() => new FilePathTemplate(csvFormat, text)).toThrow(reason);
  });
});

describe('an environment directory naming S3', () => {
  const environment = (directory: string) =>
    environmentSchema.safeParse({
      source: { baseUrl: 'https://acme.example.com', authUrl: 'https://auth.example.com', clientId: 'c', clientSecret: '${SECRET}' },
      sinks: { csv: { directory } },
    });

  it('takes a bucket prefix and refuses a malformed attempt at one, never taking it for a local directory', () => {
    expect(environment('s3://acme-lake/tilehouse/').success).toBe(true);
    const refused = environment('s3:/acme-lake/tilehouse');
    expect(refused.success).toBe(false);
    expect(refused.error?.issues[0]?.message).toMatch(/an S3 URL starts with "s3:\/\/"/);
  });
});
