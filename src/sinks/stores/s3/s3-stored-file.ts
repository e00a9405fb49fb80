import { PassThrough, Readable } from 'node:stream';
import type { GetObjectCommandOutput, HeadObjectCommandOutput, S3Client } from '@aws-sdk/client-s3';
import { GetObjectCommand, HeadObjectCommand } from '@aws-sdk/client-s3';
import type { StoredFile } from '../file-bytes.js';
import { s3StatusOf } from './s3-errors.js';
import { RUN_ID_METADATA_KEY } from './temp-keys.js';

/** An S3 object to read a format's columns from (a CSV header, a Parquet footer); undefined when there is none. */
export async function s3StoredFile(client: S3Client, bucket: string, key: string): Promise<StoredFile | undefined> {
  let head: HeadObjectCommandOutput;
  try {
    head = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
  } catch (error) {
    if (s3StatusOf(error) === 404) return undefined;
    throw error;
  }
  const size = head.ContentLength ?? 0;
  return {
    location: `s3://${bucket}/${key}`,
    size: () => Promise.resolve(size),
    written: () => {
      const runId = head.Metadata?.[RUN_ID_METADATA_KEY];
      return Promise.resolve({ at: (head.LastModified ?? new Date(0)).toISOString(), ...(runId === undefined ? {} : { runId }) });
    },
    version: () => Promise.resolve(`${head.ETag ?? ''}:${size}:${head.LastModified?.toISOString() ?? ''}`),
    read(range) {
      // A range read of the object as it was when headed: If-Match keeps a replaced object out.
      const out = new PassThrough();
      const Range = range === undefined ? undefined : `bytes=${range.start}-${range.end ?? ''}`;
      client
        .send(new GetObjectCommand({ Bucket: bucket, Key: key, ...(Range ? { Range } : {}), ...(head.ETag ? { IfMatch: head.ETag } : {}) }))
        .then((answer: GetObjectCommandOutput) => {
          const body = answer.Body as Readable;
          body.on('error', (error) => out.destroy(error));
          body.pipe(out);
          out.on('close', () => body.destroy());
        })
        .catch((error: unknown) => out.destroy(error as Error));
      return out;
    },
  };
}
