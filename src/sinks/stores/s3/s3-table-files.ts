import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { DeleteObjectCommand, GetObjectCommand, type GetObjectCommandOutput, type S3Client } from '@aws-sdk/client-s3';
import { parseS3ObjectUrl } from '../../../config/s3-url.js';
import { createLogger } from '../../../log.js';
import type { TableFiles } from '../object-store.js';
import { s3Failure } from './s3-errors.js';
import type { S3WriteSettings } from './s3-object-writer.js';
import { S3Requests } from './s3-requests.js';
import { TempUpload } from './temp-upload.js';

/**
 * A table format's files on S3, each written straight to its own fresh key (no temp key and copy, as
 * a file sink's target needs: nothing names the key until the table's commit does): a file below one
 * part is one PutObject, a larger one a multipart upload (temp-upload.ts) that becomes an object only
 * when completed, so readers never see a part of it. On failure the upload is aborted and a key
 * that may have been created is deleted.
 */
export function s3TableFiles(client: S3Client, settings: { s3Write?: S3WriteSettings | undefined; requestTimeoutMs?: number | undefined }): TableFiles {
  // Its retries are not logged: a table's writer reports the run's outcome, and a failure names the file.
  const logger = createLogger({ level: 'silent' });
  const requests = () =>
    new S3Requests({
      client,
      logger,
      ...(settings.s3Write?.limits ? { limits: settings.s3Write.limits } : {}),
      ...(settings.s3Write?.budget ? { budget: settings.s3Write.budget } : {}),
      ...((settings.s3Write?.requestTimeoutMs ?? settings.requestTimeoutMs) !== undefined
        ? { requestTimeoutMs: settings.s3Write?.requestTimeoutMs ?? settings.requestTimeoutMs }
        : {}),
    });
  return {
    async writeNew(location, pieces) {
      const { bucket, key } = parseS3ObjectUrl(location);
      const through = requests();
      const upload = new TempUpload({
        requests: through,
        bucket,
        key,
        contentType: 'application/octet-stream',
        metadata: {},
        ...(settings.s3Write?.partBytes !== undefined ? { partBytes: settings.s3Write.partBytes } : {}),
      });
      try {
        await pipeline(Readable.from(pieces, { objectMode: false }), upload);
        return upload.finished!.size;
      } catch (error) {
        upload.destroy();
        await upload.abortUpload(through).catch(() => undefined);
        if (upload.mayHaveCreated) await through.send('DeleteObject', new DeleteObjectCommand({ Bucket: bucket, Key: key })).catch(() => undefined);
        throw s3Failure(error, { target: location, bucket, operation: 'writing the file', action: 's3:PutObject' });
      }
    },
    async read(location) {
      const { bucket, key } = parseS3ObjectUrl(location);
      try {
        const answer = await requests().send<GetObjectCommandOutput>('GetObject', new GetObjectCommand({ Bucket: bucket, Key: key }));
        return Buffer.from(await answer.Body!.transformToByteArray());
      } catch (error) {
        throw s3Failure(error, { target: location, bucket, operation: 'reading the file', action: 's3:GetObject' });
      }
    },
    async remove(location) {
      const { bucket, key } = parseS3ObjectUrl(location);
      try {
        await requests().send('DeleteObject', new DeleteObjectCommand({ Bucket: bucket, Key: key }));
      } catch (error) {
        throw s3Failure(error, { target: location, bucket, operation: 'removing the file', action: 's3:DeleteObject' });
      }
    },
  };
}
