import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  AbortMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  type GetObjectCommandOutput,
  ListMultipartUploadsCommand,
  type ListMultipartUploadsCommandOutput,
  ListObjectsV2Command,
  type ListObjectsV2CommandOutput,
  type S3Client,
} from '@aws-sdk/client-s3';
import { parseS3ObjectUrl, splitS3Url } from '../../../config/s3-url.js';
import { createLogger } from '../../../log.js';
import type { ListedTableFile, TableFiles } from '../object-store.js';
import { isTilehouseError } from '../../../errors.js';
import { S3Error, s3CodeOf, s3Failure } from './s3-errors.js';
import type { S3WriteSettings } from './s3-object-writer.js';
import { S3Requests } from './s3-requests.js';
import { TempUpload } from './temp-upload.js';

/**
 * A table format's files on S3, each written straight to its own fresh key (no temp key and copy, as
 * a file sink's target needs: nothing names the key until the table's commit does): a file below one
 * part is one PutObject, a larger one a multipart upload (temp-upload.ts) that becomes an object only
 * when completed, so readers never see a part of it. On failure the upload is aborted and a key
 * that may have been created is deleted; a writer killed mid-upload leaves the upload's parts,
 * kept (and billed) until aborted: `abortUnfinished` ends those begun before a cutoff. Listings
 * (ListObjectsV2 by continuation token, ListMultipartUploads by key and upload-id markers) are
 * read to their last page.
 */
export function s3TableFiles(
  /** The client for a file: the store's own, or one signing with the credentials a catalog vended for it. */
  clientFor: (location: string) => Promise<S3Client>,
  settings: { s3Write?: S3WriteSettings | undefined; requestTimeoutMs?: number | undefined },
): TableFiles {
  // Its retries are not logged: a table's writer reports the run's outcome, and a failure names the file.
  const logger = createLogger({ level: 'silent' });
  const requests = async (location: string) =>
    new S3Requests({
      client: await clientFor(location),
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
      const through = await requests(location);
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
        throw failure(error, { target: location, bucket, operation: 'writing the file', action: 's3:PutObject' });
      }
    },
    async read(location) {
      const { bucket, key } = parseS3ObjectUrl(location);
      try {
        const answer = await (await requests(location)).send<GetObjectCommandOutput>('GetObject', new GetObjectCommand({ Bucket: bucket, Key: key }));
        return Buffer.from(await answer.Body!.transformToByteArray());
      } catch (error) {
        throw failure(error, { target: location, bucket, operation: 'reading the file', action: 's3:GetObject' });
      }
    },
    async remove(location) {
      const { bucket, key } = parseS3ObjectUrl(location);
      try {
        await (await requests(location)).send('DeleteObject', new DeleteObjectCommand({ Bucket: bucket, Key: key }));
      } catch (error) {
        throw failure(error, { target: location, bucket, operation: 'removing the file', action: 's3:DeleteObject' });
      }
    },
    list: async (location) => listKeys(await requests(location), location, settings.s3Write?.listPageSize),
    abortUnfinished: async (location, startedAtMs) => abortUploadsBegunBy(await requests(location), location, startedAtMs, settings.s3Write?.listPageSize),
  };
}

/** A failure as S3's coded one; a coded failure of the vended credentials (their renewal) keeps its own code. */
function failure(error: unknown, where: Parameters<typeof s3Failure>[1]): Error {
  if (isTilehouseError(error) && !(error instanceof S3Error)) return error;
  return s3Failure(error, where);
}

/** Every key below the folder `location`, read page by page (`pageSize` keys each, else S3's 1000). */
async function listKeys(through: S3Requests, location: string, pageSize: number | undefined): Promise<ListedTableFile[]> {
  const { bucket, prefix } = folderOf(location);
  const files: ListedTableFile[] = [];
  let token: string | undefined;
  try {
    do {
      const page: ListObjectsV2CommandOutput = await through.send(
        'ListObjectsV2',
        new ListObjectsV2Command({
          Bucket: bucket,
          Prefix: prefix,
          ...(pageSize !== undefined ? { MaxKeys: pageSize } : {}),
          ...(token !== undefined ? { ContinuationToken: token } : {}),
        }),
      );
      for (const object of page.Contents ?? [])
        if (object.Key !== undefined)
          files.push({ location: `s3://${bucket}/${object.Key}`, modifiedMs: object.LastModified?.getTime() ?? Number.POSITIVE_INFINITY });
      token = page.IsTruncated === true ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
  } catch (error) {
    throw failure(error, { target: location, bucket, operation: 'listing the files', action: 's3:ListBucket', notFoundIsBucket: true });
  }
  return files;
}

/** Aborts the multipart uploads below the folder `location` begun at or before `startedAtMs`, and names them. */
async function abortUploadsBegunBy(through: S3Requests, location: string, startedAtMs: number, pageSize: number | undefined): Promise<string[]> {
  const { bucket, prefix } = folderOf(location);
  const old: { key: string; uploadId: string }[] = [];
  try {
    let keyMarker: string | undefined;
    let uploadIdMarker: string | undefined;
    for (;;) {
      const page: ListMultipartUploadsCommandOutput = await through.send(
        'ListMultipartUploads',
        new ListMultipartUploadsCommand({
          Bucket: bucket,
          Prefix: prefix,
          ...(pageSize !== undefined ? { MaxUploads: pageSize } : {}),
          ...(keyMarker !== undefined ? { KeyMarker: keyMarker } : {}),
          ...(uploadIdMarker !== undefined ? { UploadIdMarker: uploadIdMarker } : {}),
        }),
      );
      for (const upload of page.Uploads ?? [])
        if (upload.Key !== undefined && upload.UploadId !== undefined && (upload.Initiated?.getTime() ?? Number.POSITIVE_INFINITY) <= startedAtMs)
          old.push({ key: upload.Key, uploadId: upload.UploadId });
      if (page.IsTruncated !== true) break;
      keyMarker = page.NextKeyMarker;
      uploadIdMarker = page.NextUploadIdMarker;
    }
  } catch (error) {
    throw failure(error, {
      target: location,
      bucket,
      operation: 'listing the unfinished multipart uploads',
      action: 's3:ListBucketMultipartUploads',
      notFoundIsBucket: true,
    });
  }
  const aborted: string[] = [];
  for (const { key, uploadId } of old) {
    try {
      await through.send('AbortMultipartUpload', new AbortMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: uploadId }));
    } catch (error) {
      // Completed or aborted meanwhile: nothing left to end.
      if (s3CodeOf(error) === 'NoSuchUpload') continue;
      throw failure(error, {
        target: `s3://${bucket}/${key}`,
        bucket,
        operation: 'aborting an unfinished multipart upload',
        action: 's3:AbortMultipartUpload',
      });
    }
    aborted.push(`s3://${bucket}/${key}`);
  }
  return aborted;
}

/** The bucket and the key prefix of a folder location (`s3://bucket/a/b` → `a/b/`: never `a/b2/…`). */
function folderOf(location: string): { bucket: string; prefix: string } {
  const { bucket, rest } = splitS3Url(location)!;
  return { bucket, prefix: `${rest.replace(/\/+$/, '')}/` };
}
