// A Cloud Storage failure names the target with the word of the format written there, as a local
// file's failure does (`parquet gs://…`, never `csv gs://…` for a Parquet sink), and keeps its code.
import type { Storage } from '@google-cloud/storage';
import { describe, expect, it } from 'vitest';
import { checkBucketWritable } from '../../../src/sinks/gcs/check-bucket.js';
import { GcsError, gcsFailure, GcsPublishOutcomeUnknownError } from '../../../src/sinks/gcs/gcs-errors.js';

const refused = (status: number, message: string) => Object.assign(new Error(message), { code: status });

/** A Storage whose bucket listing fails with `listing`, or whose IAM test grants only `granted`. */
function storageThat(options: { listing?: Error; granted?: string[] }): Storage {
  const bucket = {
    getFiles: async () => {
      if (options.listing !== undefined) throw options.listing;
      return [[]];
    },
    iam: {
      testPermissions: async (asked: string[]) => [Object.fromEntries(asked.map((permission) => [permission, options.granted?.includes(permission) ?? false]))],
    },
  };
  return { bucket: () => bucket } as unknown as Storage;
}

describe('GcsError', () => {
  it("opens its message with the format's word and the URL, and keeps the URL as its target", () => {
    const error = new GcsError('write_failed', { format: 'parquet', url: 'gs://b/out/t.parquet' }, 'rewriting the target failed');
    expect(error.message).toBe('parquet gs://b/out/t.parquet: rewriting the target failed');
    expect(error.target).toBe('gs://b/out/t.parquet');
    expect(error.code).toBe('write_failed');
  });

  it('names a bare URL as it is (a temp object, a sweep prefix: no format is claimed)', () => {
    const error = new GcsError('write_failed', 'gs://b/out/.t.tmp', 'the stored object does not match the bytes sent');
    expect(error.message).toBe('gs://b/out/.t.tmp: the stored object does not match the bytes sent');
    expect(error.message).not.toMatch(/^csv /);
  });

  it('keeps the word through gcsFailure and the outcome-unknown error', () => {
    const where = {
      target: { format: 'parquet', url: 'gs://b/t.parquet' },
      bucket: 'b',
      operation: 'reading the target object',
      permission: 'storage.objects.get',
    };
    const denied = gcsFailure(refused(403, 'forbidden'), where);
    expect(denied.code).toBe('permission_denied');
    expect(denied.message).toMatch(/^parquet gs:\/\/b\/t\.parquet: reading the target object failed: permission storage\.objects\.get is missing on bucket b/);
    expect(gcsFailure(refused(404, 'No such bucket'), where).code).toBe('bucket_not_found');
    const unknown = new GcsPublishOutcomeUnknownError({ format: 'csv', url: 'gs://b/t.csv' }, 'rewriting failed');
    expect(unknown.message).toBe('csv gs://b/t.csv: rewriting failed');
    expect(unknown.code).toBe('publish_outcome_unknown');
  });
});

describe('checkBucketWritable', () => {
  it("names a Parquet sink's bucket with parquet and a CSV sink's with csv", async () => {
    const storage = storageThat({ granted: ['storage.objects.get', 'storage.objects.list'] });
    await expect(checkBucketWritable(storage, 'b', 'nightly/', 'parquet')).rejects.toMatchObject({
      code: 'permission_denied',
      message: 'parquet gs://b/nightly/: missing storage.objects.create, storage.objects.delete on bucket b (grant roles/storage.objectUser on the bucket)',
    });
    await expect(checkBucketWritable(storageThat({ listing: refused(404, 'bucket gone') }), 'b', 'nightly/', 'csv')).rejects.toMatchObject({
      code: 'bucket_not_found',
      message: expect.stringMatching(/^csv gs:\/\/b\/nightly\/: listing the bucket failed: bucket b does not exist/),
    });
  });

  it('answers writable when every permission is granted', async () => {
    const storage = storageThat({ granted: ['storage.objects.create', 'storage.objects.delete', 'storage.objects.get', 'storage.objects.list'] });
    expect(await checkBucketWritable(storage, 'b', 'nightly/', 'parquet')).toBe('gs://b/nightly/: writable');
  });
});
