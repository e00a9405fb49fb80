import { describe, expect, it } from 'vitest';
import { FilePathTemplate } from '../../src/sinks/files/path-template.js';
import { csvFormat } from '../../src/sinks/csv/csv-format.js';
import { bucketNameProblem, gcsUrlProblem, parseGcsObjectUrl } from '../../src/config/gcs-url.js';

const values = { name: 'incidents', tile: 'tile 7', date: '2026-07-01', runId: 'r1' };

describe('parseGcsObjectUrl', () => {
  it('splits a gs:// URL into bucket and object', () => {
    expect(parseGcsObjectUrl('gs://my-bucket/exports/a.csv')).toEqual({ bucket: 'my-bucket', object: 'exports/a.csv' });
    // Legal but unusual: dots in the bucket name, unicode and spaces in the object name.
    expect(parseGcsObjectUrl('gs://exports.example.com/ü b/a.csv')).toEqual({ bucket: 'exports.example.com', object: 'ü b/a.csv' });
  });

  it.each([
    ['gs://', /no bucket name/],
    ['gs://bucket', /no object name/],
    ['gs://bucket/', /no object name/],
    ['gs://Bucket/a.csv', /lowercase/],
    ['gs://ab/a.csv', /3 to 63/],
    ['gs://googbucket/a.csv', /goog/],
    ['gs://192.168.1.1/a.csv', /IP address/],
    ['gs://bucket/a/', /directory/],
    ['gs://bucket/a//b.csv', /empty path segments/],
    ['gs://bucket/a/../b.csv', /"\.\."/],
    ['GS://bucket/a.csv', /lowercase/],
  ])('refuses %s', (url, reason) => {
    expect(() => parseGcsObjectUrl(url)).toThrow(reason);
  });

  it('accepts a bucket prefix with or without a trailing slash as a directory', () => {
    expect(gcsUrlProblem('gs://bucket', { object: 'optional' })).toBeUndefined();
    expect(gcsUrlProblem('gs://bucket/exports/', { object: 'optional' })).toBeUndefined();
    expect(gcsUrlProblem('gs://bucket//', { object: 'optional' })).toBeDefined();
    expect(gcsUrlProblem('gs://bucket/a//b', { object: 'optional' })).toMatch(/empty path segments/);
  });

  it('knows the 63-character limit becomes 222 with dots', () => {
    expect(bucketNameProblem('a'.repeat(63))).toBeUndefined();
    expect(bucketNameProblem('a'.repeat(64))).toMatch(/3 to 63/);
    expect(bucketNameProblem(`${'a'.repeat(60)}.${'b'.repeat(60)}`)).toBeUndefined();
  });
});

describe('FilePathTemplate (CSV) with Cloud Storage', () => {
  it('renders a gs:// template without passing it through node:path', () => {
    const template = new FilePathTemplate(csvFormat, 'gs://bucket/prefix/{name}/{date}.csv');
    expect(template.resolve(values, '/var/out')).toBe('gs://bucket/prefix/incidents/2026-07-01.csv');
  });

  it('resolves a relative template under a gs:// directory, with or without its trailing slash', () => {
    const template = new FilePathTemplate(csvFormat, '{tile}/{date}.csv.gz');
    expect(template.resolve(values, 'gs://bucket/prefix')).toBe('gs://bucket/prefix/tile_7/2026-07-01.csv.gz');
    expect(template.resolve(values, 'gs://bucket/prefix/')).toBe('gs://bucket/prefix/tile_7/2026-07-01.csv.gz');
    expect(template.resolve(values, 'gs://bucket')).toBe('gs://bucket/tile_7/2026-07-01.csv.gz');
  });

  it('keeps an absolute local template local under a gs:// directory', () => {
    expect(new FilePathTemplate(csvFormat, '/exports/{name}.csv').resolve(values, 'gs://bucket/prefix')).toBe('/exports/incidents.csv');
  });

  it.each([
    ['gs://bucket/', /directory/],
    ['gs://bucket', /no object name/],
    ['gs://{name}/a.csv', /bucket must be fixed text/],
    ['gs://Bad_Bucket/a.csv', /lowercase/],
    ['gs:/bucket/a.csv', /only Cloud Storage \(gs:\/\/bucket\/object\) and S3 \(s3:\/\/bucket\/key\) URLs/],
    ['az://bucket/a.csv', /only Cloud Storage \(gs:\/\/bucket\/object\) and S3 \(s3:\/\/bucket\/key\) URLs/],
    ['gs://bucket/../a.csv', /"\.\."/],
  ])('refuses the template %s at construction (path_invalid)', (text, reason) => {
    expect(() => new FilePathTemplate(csvFormat, text)).toThrow(reason);
    try {
      new FilePathTemplate(csvFormat, text);
    } catch (error) {
      expect((error as { code: string }).code).toBe('path_invalid');
    }
  });

  it('refuses a rendered object name with an empty segment', () => {
    expect(() => new FilePathTemplate(csvFormat, 'gs://bucket/a/{name}//{date}.csv').resolve(values, 'out')).toThrow(/empty path segments/);
  });

  it('scopes the sweep to the fixed prefix of the object names', () => {
    expect(new FilePathTemplate(csvFormat, 'gs://bucket/prefix/{name}/{date}.csv').sweepScope('out')).toEqual({ root: 'gs://bucket/prefix/', recursive: true });
    expect(new FilePathTemplate(csvFormat, 'gs://bucket/x.csv').sweepScope('out')).toEqual({ root: 'gs://bucket/', recursive: false });
    expect(new FilePathTemplate(csvFormat, '{name}.csv').sweepScope('gs://bucket/p/')).toEqual({ root: 'gs://bucket/p/', recursive: false });
  });
});
