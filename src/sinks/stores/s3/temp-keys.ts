import type { ListMultipartUploadsCommandOutput, ListObjectsV2CommandOutput, S3Client } from '@aws-sdk/client-s3';
import { AbortMultipartUploadCommand, DeleteObjectCommand, ListMultipartUploadsCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import type { Logger } from 'pino';
import { splitS3Url } from '../../../config/s3-url.js';
import { formatOwnerTag } from '../../../temp-owner.js';
import { tempFileOwnerTag } from '../file-names.js';
import { howStrayTempGoes, isAbandoned, ownerStateOfTag, type StrayTemp } from '../../owned-temp-files.js';
import type { Leftover } from '../../sink.js';
import { s3Failure } from './s3-errors.js';
import { S3Requests } from './s3-requests.js';

/**
 * User metadata (`x-amz-meta-*`) of every object tilehouse writes: the writing process's owner
 * tag (temp-owner.ts), run id and job. A copy keeps its source's metadata (MetadataDirective
 * COPY), so a published object names the run that wrote it, and a run that finds the target
 * replaced under it can say by whom.
 */
export const OWNER_METADATA_KEY = 'tilehouse-owner';
export const RUN_ID_METADATA_KEY = 'tilehouse-run-id';
export const JOB_METADATA_KEY = 'tilehouse-job';

export function ownerMetadata(jobName: string, runId: string): Record<string, string> {
  return { [OWNER_METADATA_KEY]: formatOwnerTag(), [RUN_ID_METADATA_KEY]: runId, [JOB_METADATA_KEY]: jobName };
}

/** `a/b/` of `a/b/c.csv`, '' for `c.csv`. */
export function keyFolder(key: string): string {
  return key.slice(0, key.lastIndexOf('/') + 1);
}

export function keyBaseName(key: string): string {
  return key.slice(key.lastIndexOf('/') + 1);
}

/**
 * Removes what dead runs left below `root` (`s3://bucket/prefix/`), by the rule of local temp
 * files (owned-temp-files.ts), the owner read from the temp key's name: temp objects (a run killed
 * between its prepare and its publish) are deleted, and incomplete multipart uploads to temp keys
 * (a run killed while it streamed) are aborted, once their owner is provably gone, or cannot be
 * known (another pod) and they are older than a day. Only keys named like our temp files are
 * looked at. Returns what went, as `s3://` URLs (an upload as `… (incomplete multipart upload)`).
 */
export async function removeStaleTempKeys(
  client: S3Client,
  root: string,
  options: {
    recursive: boolean;
    logger: Logger;
    now?: number;
    /** Look only: every stray (an upload as `… (incomplete multipart upload)`) goes here, nothing is deleted or aborted (`strayTempKeys`). */
    strays?: StrayTemp[];
  },
): Promise<string[]> {
  const { bucket, rest: prefix } = splitS3Url(root)!;
  const requests = new S3Requests({ client, logger: options.logger, limits: { maxAttempts: 3, baseDelayMs: 200, maxDelayMs: 2_000 } });
  const now = options.now ?? Date.now();
  const removed: string[] = [];
  const abandoned = (key: string, when: Date | undefined, upload = false): boolean => {
    if (!options.recursive && key.slice(prefix.length).includes('/')) return false;
    const tag = tempFileOwnerTag(keyBaseName(key));
    if (tag === undefined) return false;
    const owner = ownerStateOfTag(tag);
    if (options.strays !== undefined) {
      const location = `s3://${bucket}/${key}${upload ? ' (incomplete multipart upload)' : ''}`;
      if (owner !== 'self' && owner !== 'alive') options.strays.push({ location, owner, modifiedMs: when?.getTime() ?? now });
      return false;
    }
    return isAbandoned(owner, when?.getTime() ?? now, now);
  };
  const where = (operation: string, action: string) => ({ target: root, bucket, operation, action, notFoundIsBucket: true });
  try {
    let token: string | undefined;
    do {
      const page: ListObjectsV2CommandOutput = await requests.send(
        'ListObjectsV2',
        new ListObjectsV2Command({
          Bucket: bucket,
          Prefix: prefix,
          ...(options.recursive ? {} : { Delimiter: '/' }),
          ...(token ? { ContinuationToken: token } : {}),
        }),
      );
      for (const object of page.Contents ?? []) {
        if (object.Key === undefined || !abandoned(object.Key, object.LastModified)) continue;
        try {
          await requests.send('DeleteObject', new DeleteObjectCommand({ Bucket: bucket, Key: object.Key }));
          removed.push(`s3://${bucket}/${object.Key}`);
        } catch (error) {
          options.logger.warn(
            { err: error, object: object.Key },
            'could not delete an abandoned S3 temp object; a later sweep or the bucket lifecycle rule removes it',
          );
        }
      }
      token = page.IsTruncated === true ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
  } catch (error) {
    throw s3Failure(error, where('listing temp objects for the sweep', 's3:ListBucket'));
  }
  await abortAbandonedUploads(requests, { bucket, prefix }, abandoned, removed, options.logger).catch((error: unknown) => {
    throw s3Failure(error, where('listing incomplete multipart uploads for the sweep', 's3:ListBucketMultipartUploads'));
  });
  return removed;
}

/**
 * The sweep's second half: incomplete multipart uploads below the prefix that `abandoned` judges
 * gone are aborted (each named in `removed`); an abort refused is logged and left to the bucket's
 * lifecycle rule. A listing that fails throws, for the caller to word.
 */
async function abortAbandonedUploads(
  requests: S3Requests,
  { bucket, prefix }: { bucket: string; prefix: string },
  abandoned: (key: string, when: Date | undefined, upload: boolean) => boolean,
  removed: string[],
  logger: Logger,
): Promise<void> {
  let keyMarker: string | undefined;
  let uploadIdMarker: string | undefined;
  for (;;) {
    const page: ListMultipartUploadsCommandOutput = await requests.send(
      'ListMultipartUploads',
      new ListMultipartUploadsCommand({
        Bucket: bucket,
        Prefix: prefix,
        ...(keyMarker ? { KeyMarker: keyMarker } : {}),
        ...(uploadIdMarker ? { UploadIdMarker: uploadIdMarker } : {}),
      }),
    );
    for (const upload of page.Uploads ?? []) {
      if (upload.Key === undefined || upload.UploadId === undefined || !abandoned(upload.Key, upload.Initiated, true)) continue;
      try {
        await requests.send('AbortMultipartUpload', new AbortMultipartUploadCommand({ Bucket: bucket, Key: upload.Key, UploadId: upload.UploadId }));
        removed.push(`s3://${bucket}/${upload.Key} (incomplete multipart upload)`);
      } catch (error) {
        logger.warn({ err: error, object: upload.Key }, 'could not abort an abandoned multipart upload; the bucket lifecycle rule removes it');
      }
    }
    if (page.IsTruncated !== true) break;
    keyMarker = page.NextKeyMarker;
    uploadIdMarker = page.NextUploadIdMarker;
  }
}

/** The temp objects and incomplete uploads below `root` a sweep removes (now, or once old enough), with how each goes; lists only (`status`). */
export async function strayTempKeys(client: S3Client, root: string, options: { recursive: boolean; logger: Logger }): Promise<Leftover[]> {
  const strays: StrayTemp[] = [];
  await removeStaleTempKeys(client, root, { ...options, strays });
  const now = Date.now();
  return strays.map((stray) => ({ what: `S3 temp object ${stray.location}`, goes: `${howStrayTempGoes(stray, now)} (or the bucket lifecycle rule)` }));
}
