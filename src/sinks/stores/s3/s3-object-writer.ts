import { createHash } from 'node:crypto';
import type { HeadObjectCommandOutput, ListObjectsV2CommandOutput, S3Client } from '@aws-sdk/client-s3';
import { CopyObjectCommand, DeleteObjectCommand, HeadObjectCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import type { SinkResult } from '../../sink.js';
import { messageOf } from '../../../errors.js';
import type { RetryBudget, RetryLimits } from '../../../retry.js';
import { cleanupDeadline, DEFAULT_STOP_DEADLINE_MS } from '../../../stop-deadline.js';
import { parseS3ObjectUrl } from '../../../config/s3-url.js';
import { manifestPathOf } from '../manifest.js';
import { ObjectStreamWriter, type ObjectUploadStream, type ObjectWriterBaseOptions } from '../object-stream-writer.js';
import { tempNameFor } from '../file-names.js';
import { S3Error, S3PublishOutcomeUnknownError, s3CodeOf, s3Failure, s3StatusOf } from './s3-errors.js';
import { S3Requests } from './s3-requests.js';
import { JOB_METADATA_KEY, keyBaseName, keyFolder, OWNER_METADATA_KEY, ownerMetadata, RUN_ID_METADATA_KEY } from './temp-keys.js';
import { TempUpload, type UploadedTemp } from './temp-upload.js';

/** How an s3:// writer retries its requests; each defaults (s3-requests.ts). */
export interface S3WriteSettings {
  limits?: RetryLimits;
  budget?: RetryBudget;
  requestTimeoutMs?: number;
  /** Multipart part size (at least S3's 5 MiB). */
  partBytes?: number;
  /** Keys (and multipart uploads) per page of a table's listing (S3's default, 1000, without it). */
  listPageSize?: number;
}

export interface S3ObjectWriterOptions extends ObjectWriterBaseOptions {
  client: S3Client;
  retry?: S3WriteSettings;
}

/** What the target held when the run opened: the publish's precondition. */
type Seen = { etag: string } | { absent: true };

/**
 * One run's file as an S3 object, with the local writer's two phases (the gs:// writer's design,
 * in S3's terms; docs/s3.md has the facts it rests on):
 *
 * - open reads the target (HeadObject: its ETag, or that it is absent) and streams the rows, the
 *   same encoder and wrapper, to an owner-tagged temp key beside it,
 *   `.<name>.tilehouse-<runId>+<owner>.tmp` (temp-upload.ts: one PutObject, or a multipart upload);
 * - prepare finishes that upload and checks its size; the manifest goes to a temp key too;
 * - publish is one CopyObject of the temp key onto the target, conditional on what open saw:
 *   `If-Match: <ETag>`, or `If-None-Match: *` when there was no target. S3 copies an object whole
 *   or not at all, so a reader sees the previous object or the new one; a writer that replaced the
 *   target meanwhile makes the copy fail with 412 and this run publishes nothing. A failed or
 *   unanswered copy is judged by reading the target (its run id and size).
 *
 * Every request is retried by tilehouse's loop (s3-requests.ts) within the run's budget. Every
 * failure before publish leaves the target as it was; abort aborts the multipart upload and
 * deletes the temp keys, and names in `leftBehind()` what it could not remove.
 */
export class S3ObjectWriter extends ObjectStreamWriter<S3ObjectWriterOptions> {
  private tempManifest: UploadedTemp | undefined;
  private manifestMayExist = false;
  /** Publish and its reads: not cut short by the run's stop (a started publish runs to its outcome), ended by the cleanup deadline. */
  private readonly publishRequests: S3Requests;
  /** Deletes and aborts of the cleanup, under the cleanup deadline, fewer and shorter tries. */
  private readonly cleanupRequests: S3Requests;
  private readonly left: string[] = [];

  private constructor(
    options: S3ObjectWriterOptions,
    private readonly bucket: string,
    private readonly key: string,
    private readonly seenTarget: Seen,
    private readonly seenManifest: Seen,
    private readonly tempKey: string,
    private readonly tempManifestKey: string,
    stream: ObjectUploadStream,
    private readonly upload: TempUpload,
    private readonly requests: S3Requests,
  ) {
    super(options, stream);
    const deadline = cleanupDeadline(options.signal, options.stopDeadlineMs ?? DEFAULT_STOP_DEADLINE_MS);
    this.publishRequests = requests.withSignal(deadline);
    this.cleanupRequests = requests.withSignal(deadline, {
      limits: { ...requests.limits, maxAttempts: Math.min(3, requests.limits.maxAttempts) },
      requestTimeoutMs: Math.min(10_000, requests.requestTimeoutMs),
    });
  }

  /** Temp keys whose delete (or multipart abort) failed or was cut short by the cleanup deadline. */
  leftBehind(): string[] {
    return [...this.left];
  }

  /**
   * Checks what can be checked before any row is fetched (the bucket, listing, a "directory" at
   * the target), records what the target is, starts the upload and writes the encoder's first bytes.
   */
  static async open(options: S3ObjectWriterOptions): Promise<S3ObjectWriter> {
    const { target, client } = options;
    const { bucket, key } = parseS3ObjectUrl(target);
    const requests = new S3Requests({
      client,
      logger: options.logger,
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.retry?.limits ? { limits: options.retry.limits } : {}),
      ...(options.retry?.budget ? { budget: options.retry.budget } : {}),
      ...(options.retry?.requestTimeoutMs ? { requestTimeoutMs: options.retry.requestTimeoutMs } : {}),
    });
    const named = { jobName: options.jobName, format: options.format.name, url: target };
    const where = (operation: string, action: string, notFoundIsBucket = false) => ({ target: named, bucket, operation, action, notFoundIsBucket });
    try {
      // One listing answers three questions: the bucket exists, we may list it, and nothing lies
      // below `<key>/` (a "directory" readers would confuse with the file).
      const below = await requests.send<ListObjectsV2CommandOutput>(
        'ListObjectsV2',
        new ListObjectsV2Command({ Bucket: bucket, Prefix: `${key}/`, MaxKeys: 1 }),
      );
      const first = below.Contents?.[0]?.Key;
      if (first !== undefined)
        throw new S3Error(
          'target_is_directory',
          named,
          `objects exist below ${target}/ (e.g. ${first}), so the target reads as a directory; change the path or move them`,
        );
    } catch (error) {
      throw s3Failure(error, where('checking the bucket and the target', 's3:ListBucket', true));
    }
    let seenTarget: Seen;
    let seenManifest: Seen = { absent: true };
    try {
      seenTarget = await seen(requests, bucket, key);
      if (options.manifest !== undefined) seenManifest = await seen(requests, bucket, manifestPathOf(key));
    } catch (error) {
      throw s3Failure(error, where('reading the target object', 's3:GetObject'));
    }
    const folder = keyFolder(key);
    const tempKey = `${folder}${tempNameFor(keyBaseName(key), options.runId)}`;
    const tempManifestKey = `${folder}${tempNameFor(keyBaseName(manifestPathOf(key)), options.runId)}`;
    const upload = new TempUpload({
      requests,
      bucket,
      key: tempKey,
      contentType: options.contentType,
      metadata: ownerMetadata(options.jobName, options.runId),
      ...(options.retry?.partBytes ? { partBytes: options.retry.partBytes } : {}),
    });
    let writer: S3ObjectWriter | undefined;
    const stream = ObjectStreamWriter.uploadStream(options.wrap, upload, () => writer!);
    writer = new S3ObjectWriter(options, bucket, key, seenTarget, seenManifest, tempKey, tempManifestKey, stream, upload, requests);
    options.logger.debug({ target, temp: tempKey, gzip: options.gzip, seen: seenTarget }, `${options.format.name}: uploading to an S3 temp object`);
    await writer.writeStart();
    return writer;
  }

  /** Phase 1: the temp object whole and verified, the manifest uploaded; the target untouched. */
  protected async finish(): Promise<void> {
    const text = await this.endUpload();
    if (text === undefined) return;
    const { jobName, runId } = this.options;
    const body = Buffer.from(text, 'utf8');
    this.manifestMayExist = true;
    try {
      await this.requests.send(
        'PutObject',
        new PutObjectCommand({
          Bucket: this.bucket,
          Key: this.tempManifestKey,
          Body: body,
          ContentLength: body.length,
          ContentMD5: createHash('md5').update(body).digest('base64'),
          ContentType: 'application/json',
          Metadata: ownerMetadata(jobName, runId),
        }),
      );
      this.tempManifest = { key: this.tempManifestKey, size: body.length, etag: '' };
    } catch (error) {
      throw s3Failure(error, {
        target: this.named(this.target),
        bucket: this.bucket,
        operation: `uploading the manifest ${this.tempManifestKey}`,
        action: 's3:PutObject',
      });
    }
  }

  /** Phase 2: one conditional CopyObject onto the target, then the temp objects go. */
  protected async makeVisible(): Promise<SinkResult> {
    const temp = this.upload.finished!;
    await this.copyOnto(temp, this.key, this.seenTarget, 'the temp object onto the target');
    // From here on readers see the new object: nothing below may report the publish failed.
    this.state = 'published';
    const details: Record<string, number | boolean | string> = { bytes: this.bytes, gzip: this.options.gzip };
    await this.deleteTemp(temp.key, true);
    const tempManifest = this.tempManifest;
    const manifest =
      tempManifest === undefined
        ? undefined
        : {
            publish: () => this.copyOnto(tempManifest, manifestPathOf(this.key), this.seenManifest, 'the temp manifest onto the manifest'),
            removeTemp: () => this.deleteTemp(tempManifest.key, true),
          };
    return this.published(details, manifest, () => this.requests.retries + this.publishRequests.retries + this.cleanupRequests.retries);
  }

  /**
   * Copies `source` onto `key` under the precondition, and says what happened only after reading
   * the target: a copy whose answer was lost (a timeout, a reset, a 5xx after S3 did it) is retried,
   * and the retry meets 412 because the target is now this run's own object. So before every retry,
   * and after any failure, the target is read: when it carries this run's id and size, published.
   */
  private async copyOnto(source: UploadedTemp, key: string, expected: Seen, what: string): Promise<void> {
    const requests = this.publishRequests;
    const condition = 'etag' in expected ? { IfMatch: expected.etag } : { IfNoneMatch: '*' };
    const copy = new CopyObjectCommand({
      Bucket: this.bucket,
      Key: key,
      CopySource: copySource(this.bucket, source.key),
      MetadataDirective: 'COPY',
      ...condition,
    });
    let precondition: unknown;
    try {
      await requests.retrying(`copying ${what}`, async (attempt) => {
        if (attempt > 1 && this.isRunObject(await this.readObject(key), source)) {
          this.options.logger.warn(
            { target: this.target, key },
            `${this.format.name}: the answer to an earlier copy was lost, and the target holds this run's object: published`,
          );
          return;
        }
        try {
          await requests.once('CopyObject', copy);
        } catch (error) {
          if (s3StatusOf(error) === 412) precondition = error;
          throw error;
        }
      });
    } catch (error) {
      const target = this.named(`s3://${this.bucket}/${key}`);
      let head: HeadObjectCommandOutput | undefined;
      try {
        head = await this.readObject(key);
      } catch (readError) {
        throw new S3PublishOutcomeUnknownError(
          target,
          `copying ${what} failed (${messageOf(error)}); whether the target now holds this run's object is unknown: reading it afterwards failed too (${messageOf(readError)}); look at its metadata (${RUN_ID_METADATA_KEY}) before re-running`,
          error,
        );
      }
      if (this.isRunObject(head, source)) {
        this.options.logger.warn(
          { target: this.target, key, reason: messageOf(error) },
          `${this.format.name}: the copy failed, but the target holds this run's object (its answer was lost): published`,
        );
        return;
      }
      if (precondition !== undefined) {
        const was = 'etag' in expected ? `ETag ${expected.etag}` : 'absent';
        const now = head === undefined ? 'now absent, deleted by another writer' : `now ETag ${String(head.ETag)}, ${writerOf(head)}`;
        throw new S3Error(
          'target_changed',
          target,
          `the target changed while this run wrote it (it was ${was} when the run started, ${now}); it was read after the refused copy: nothing was overwritten and this run published nothing`,
          error,
        );
      }
      const seenNow = head === undefined ? 'does not exist' : `holds ETag ${String(head.ETag)}, ${writerOf(head)}, not this run's object`;
      const status = s3StatusOf(error);
      if (status === 403 || status === 401)
        throw s3Failure(error, {
          target,
          bucket: this.bucket,
          operation: `copying ${what} (this run published nothing)`,
          action: 's3:PutObject and s3:GetObject',
        });
      throw new S3Error(
        'write_failed',
        target,
        `copying ${what} failed (${messageOf(error)}); the target was read afterwards and ${seenNow}: this run published nothing`,
        error,
      );
    }
  }

  private isRunObject(head: HeadObjectCommandOutput | undefined, source: UploadedTemp): boolean {
    return (
      head !== undefined &&
      head.Metadata?.[RUN_ID_METADATA_KEY] === this.options.runId &&
      head.Metadata?.[OWNER_METADATA_KEY] !== undefined &&
      head.ContentLength === source.size
    );
  }

  /** The object's head, undefined when it does not exist; one request (the caller retries). */
  private async readObject(key: string): Promise<HeadObjectCommandOutput | undefined> {
    try {
      return await this.publishRequests.once<HeadObjectCommandOutput>('HeadObject', new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
    } catch (error) {
      if (s3StatusOf(error) === 404) return undefined;
      throw error;
    }
  }

  /** A temp key goes once published (or on abort); a failure is logged and, when it may exist, named. */
  private async deleteTemp(key: string, mayExist: boolean): Promise<void> {
    try {
      await this.cleanupRequests.send('DeleteObject', new DeleteObjectCommand({ Bucket: this.bucket, Key: key }));
    } catch (error) {
      if (!mayExist) return;
      const url = `s3://${this.bucket}/${key}`;
      this.left.push(`S3 temp object ${url} (removed by a later run's sweep or the bucket lifecycle rule)`);
      this.options.logger.warn(
        { err: error, object: url },
        `${this.format.name}: could not delete an S3 temp object; a later sweep or the bucket lifecycle rule removes it`,
      );
    }
  }

  protected async discardOutput(): Promise<void> {
    this.upload.destroy();
    await this.uploaded.catch(() => undefined);
    try {
      await this.upload.abortUpload(this.cleanupRequests);
    } catch (error) {
      const url = `s3://${this.bucket}/${this.tempKey}`;
      this.left.push(`S3 incomplete multipart upload to ${url} (aborted by a later run's sweep or the bucket's AbortIncompleteMultipartUpload rule)`);
      this.options.logger.warn({ err: error, object: url }, `${this.format.name}: could not abort a multipart upload`);
    }
    if (this.upload.finished !== undefined || this.upload.mayHaveCreated) await this.deleteTemp(this.tempKey, true);
    if (this.manifestMayExist) await this.deleteTemp(this.tempManifestKey, true);
  }

  protected writeError(cause: unknown): S3Error {
    return s3Failure(cause, {
      target: this.named(this.target),
      bucket: this.bucket,
      operation: `uploading the temp object ${this.tempKey}`,
      action: 's3:PutObject',
    });
  }
}

/** The target's ETag, or that it is absent. */
async function seen(requests: S3Requests, bucket: string, key: string): Promise<Seen> {
  try {
    const head = await requests.send<HeadObjectCommandOutput>('HeadObject', new HeadObjectCommand({ Bucket: bucket, Key: key }));
    return { etag: head.ETag! };
  } catch (error) {
    if (s3StatusOf(error) === 404 && s3CodeOf(error) !== 'NoSuchBucket') return { absent: true };
    throw error;
  }
}

/** CopySource is `bucket/key`, URL-encoded (each segment, the slashes kept). */
function copySource(bucket: string, key: string): string {
  return `${bucket}/${key.split('/').map(encodeURIComponent).join('/')}`;
}

function writerOf(head: HeadObjectCommandOutput): string {
  const metadata = head.Metadata ?? {};
  if (metadata[RUN_ID_METADATA_KEY] === undefined) return 'written by a writer that is not tilehouse (no run id in its metadata)';
  return `written by run ${metadata[RUN_ID_METADATA_KEY]} of job ${metadata[JOB_METADATA_KEY] ?? '?'} (process ${metadata[OWNER_METADATA_KEY] ?? '?'})`;
}
