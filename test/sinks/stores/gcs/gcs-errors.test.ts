// A Cloud Storage failure names the job and the target with the word of the format written there,
// as a local file's failure does (`job j: parquet gs://…`, never `csv gs://…` for a Parquet sink),
// and has the code the same failure has at every target, with `targetKind: 'gcs'`.
import type { Storage } from '@google-cloud/storage';
import { describe, expect, it } from 'vitest';
import { checkBucketWritable } from '../../../../src/sinks/stores/gcs/check-bucket.js';
import { GcsError, gcsFailure, GcsPublishOutcomeUnknownError } from '../../../../src/sinks/stores/gcs/gcs-errors.js';

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
  it("opens its message with the job, the format's word and the URL, and keeps the URL as its target", () => {
    const error = new GcsError('write_failed', { jobName: 'j', format: 'parquet', url: 'gs://b/out/t.parquet' }, 'rewriting the target failed');
    expect(error.message).toBe('job j: parquet gs://b/out/t.parquet: rewriting the target failed');
    expect(error.target).toBe('gs://b/out/t.parquet');
    expect([error.code, error.targetKind, error.format]).toEqual(['write_failed', 'gcs', 'parquet']);
  });

  it('names a bare URL as it is (a temp object, a sweep prefix: no format is claimed)', () => {
    const error = new GcsError('write_failed', 'gs://b/out/.t.tmp', 'the stored object does not match the bytes sent');
    expect(error.message).toBe('gs://b/out/.t.tmp: the stored object does not match the bytes sent');
    expect(error.message).not.toMatch(/^csv /);
    expect(error.format).toBeUndefined();
  });

  it('is named again with the job, format and target by gcsFailure when met deep in an upload', () => {
    const deep = new GcsError('write_failed', 'gs://b/out/.t.tmp', 'the upload session is gone after 8 bytes were persisted');
    const where = { target: { jobName: 'j', format: 'csv', url: 'gs://b/out/t.csv' }, bucket: 'b', operation: 'uploading the temp object', permission: 'x' };
    const named = gcsFailure(deep, where);
    expect(named.message).toBe(
      'job j: csv gs://b/out/t.csv: uploading the temp object failed: gs://b/out/.t.tmp: the upload session is gone after 8 bytes were persisted',
    );
    expect([named.code, named.target, named.format]).toEqual(['write_failed', 'gs://b/out/t.csv', 'csv']);
    expect(gcsFailure(named, where)).toBe(named);
  });

  it('keeps the word through gcsFailure and the outcome-unknown error', () => {
    const where = {
      target: { jobName: 'j', format: 'parquet', url: 'gs://b/t.parquet' },
      bucket: 'b',
      operation: 'reading the target object',
      permission: 'storage.objects.get',
    };
    const denied = gcsFailure(refused(403, 'forbidden'), where);
    expect(denied.code).toBe('permission_denied');
    expect(denied.message).toMatch(
      /^job j: parquet gs:\/\/b\/t\.parquet: reading the target object failed: permission storage\.objects\.get is missing on bucket b/,
    );
    expect(gcsFailure(refused(404, 'No such bucket'), where).code).toBe('bucket_not_found');
    const unknown = new GcsPublishOutcomeUnknownError({ jobName: 'j', format: 'csv', url: 'gs://b/t.csv' }, 'rewriting failed');
    expect(unknown.message).toBe('job j: csv gs://b/t.csv: rewriting failed');
    expect(unknown.code).toBe('publish_outcome_unknown');
  });
});

describe('checkBucketWritable', () => {
  it("names the job, and a Parquet sink's bucket with parquet and a CSV sink's with csv", async () => {
    const storage = storageThat({ granted: ['storage.objects.get', 'storage.objects.list'] });
    await expect(checkBucketWritable(storage, 'b', 'nightly/', { jobName: 'j', format: 'parquet' })).rejects.toMatchObject({
      code: 'permission_denied',
      message:
        'job j: parquet gs://b/nightly/: missing storage.objects.create, storage.objects.delete on bucket b (grant roles/storage.objectUser on the bucket)',
    });
    await expect(
      checkBucketWritable(storageThat({ listing: refused(404, 'bucket gone') }), 'b', 'nightly/', { jobName: 'j', format: 'csv' }),
    ).rejects.toMatchObject({
      code: 'bucket_not_found',
      message: expect.stringMatching(/^job j: csv gs:\/\/b\/nightly\/: listing the bucket failed: bucket b does not exist/),
    });
  });

  it('answers writable when every permission is granted', async () => {
    const storage = storageThat({ granted: ['storage.objects.create', 'storage.objects.delete', 'storage.objects.get', 'storage.objects.list'] });
    expect(await checkBucketWritable(storage, 'b', 'nightly/', { jobName: 'j', format: 'parquet' })).toBe('gs://b/nightly/: writable');
  });
});
