import type { S3Client } from '@aws-sdk/client-s3';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import type { Logger } from 'pino';
import { s3Failure } from './s3-errors.js';
import { S3Requests } from './s3-requests.js';

/**
 * Whether a run could write below `prefix` of `bucket`, found without writing anything: one
 * listing (the bucket exists, these credentials may list it). S3 has no call that tells whether
 * a PutObject would be allowed without making one (IAM's policy simulator needs IAM permissions a
 * pod should not have), so a missing s3:PutObject shows at the run's first upload, before any
 * page is fetched past the first. Throws bucket_not_found or permission_denied.
 */
export async function checkBucketWritable(
  client: S3Client,
  bucket: string,
  prefix: string,
  named: { jobName: string; format: string },
  logger: Logger,
): Promise<string> {
  const url = `s3://${bucket}/${prefix}`;
  const requests = new S3Requests({ client, logger, limits: { maxAttempts: 3, baseDelayMs: 200, maxDelayMs: 2_000 } });
  try {
    await requests.send('ListObjectsV2', new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, MaxKeys: 1 }));
  } catch (error) {
    throw s3Failure(error, { target: { ...named, url }, bucket, operation: 'listing the bucket', action: 's3:ListBucket', notFoundIsBucket: true });
  }
  return `${url}: bucket found and listable; write permission (s3:PutObject) is proven by the first upload`;
}
