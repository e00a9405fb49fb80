// Cloud Storage's publish protocol (temp object, one rewrite under ifGenerationMatch, a lost answer judged by reading the target, cleanup): its own module so gcs-object-writer.ts keeps only the stream-writer side and this loads only for gs:// targets.
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Bucket, File, Storage } from '@google-cloud/storage';
import type { Logger } from 'pino';
import { messageOf } from '../../../errors.js';
import { cleanupDeadline, DEFAULT_STOP_DEADLINE_MS } from '../../../stop-deadline.js';
import type { RetryBudget, RetryLimits } from '../../../retry.js';
import { parseGcsObjectUrl } from '../../../config/gcs-url.js';
import { manifestPathOf } from '../manifest.js';
import { tempNameFor } from '../file-names.js';
import type { ObjectTarget } from '../store-errors.js';
import { GcsError, GcsPublishOutcomeUnknownError, gcsFailure, statusOf } from './gcs-errors.js';
import { GcsHttp, type GcsHttpError } from './gcs-http.js';
import { ResumableUpload, type UploadedObject } from './resumable-upload.js';
import { JOB_METADATA_KEY, objectBaseName, objectFolder, OWNER_METADATA_KEY, ownerMetadata, RUN_ID_METADATA_KEY } from './temp-objects.js';

/** How a gs:// writer retries its requests; each defaults (see gcs-http.ts, resumable-upload.ts). */
export interface GcsWriteSettings {
  limits?: RetryLimits;
  /** Retries allowed across every request of one writer (one tile run's object and manifest). */
  budget?: RetryBudget;
  requestTimeoutMs?: number;
  chunkBytes?: number;
  /** Objects per page of a table's listing (the service's default, 1000, without it). */
  listPageSize?: number;
}

interface ObjectPublishOptions {
  /** The format's name, the first word of every message (`csv`, `parquet`). */
  format: string;
  /** The object's `content-type` (the format's). */
  contentType: string;
  jobName: string;
  /** `gs://bucket/object`: the object readers see. */
  target: string;
  runId: string;
  logger: Logger;
  storage: Storage;
  /** The run's stop: aborts the upload's request in flight and any wait between its retries. */
  signal?: AbortSignal | undefined;
  /** The environment's `stopDeadlineMs`: after a stop, publish and cleanup requests end this long after it. */
  stopDeadlineMs?: number | undefined;
  retry?: GcsWriteSettings | undefined;
  /** Whether `<target>.manifest.json` is published after the object (its generation is read at open). */
  manifest: boolean;
}

/** A target object's generation; 0 = it does not exist (as `ifGenerationMatch: 0` means). */
async function generationOf(file: File): Promise<number> {
  try {
    const [metadata] = await file.getMetadata();
    return Number(metadata.generation);
  } catch (error) {
    if (statusOf(error) === 404 && !/bucket/i.test((error as Error).message)) return 0;
    throw error;
  }
}

/**
 * One run's publish of a Cloud Storage object (and its manifest), the protocol a gs:// file
 * writer drives (gcs-object-writer.ts):
 *
 * - the rows go to a resumable upload (`upload`) of a temp object beside the target,
 *   `.<name>.tilehouse-<runId>+<owner>.tmp`, tagged with its owner (resumable-upload.ts: one
 *   chunk kept, resumed from the persisted offset after a failure); it exists only once whole;
 * - publish rewrites the temp object onto the target in one server-side step, with
 *   `ifGenerationMatch` = the target's generation seen at open (0 when it did not exist): a
 *   writer that replaced it meanwhile makes the rewrite fail (412), and the run names it instead
 *   of overwriting its output. Readers see the previous object or the whole new one. A failed or
 *   unanswered rewrite is judged by reading the target (rewriteOnto);
 * - the temp objects go once published or on abort; those that could not are in `leftBehind()`.
 *
 * Every request after open is tilehouse's (gcs-http.ts says why), retried by src/retry.ts.
 */
export class ObjectPublish {
  private tempManifestObject: UploadedObject | undefined;
  /** The manifest's upload once started, so discard knows whether its temp object may exist. */
  private manifestUpload: ResumableUpload | undefined;
  /**
   * Deletes of temp objects: not cut short by the run's stop, since they are its cleanup, but
   * ended by the cleanup deadline (stop-deadline.ts), after which the process exits anyway.
   */
  private readonly cleanupHttp: GcsHttp;
  /**
   * The rewrites and the reads that judge them: not cut short by the run's stop either, since a
   * publish, once started, runs to its outcome (SinkWriter.publish) so the summary can say what
   * the target holds; each request has its timeout and the retries their limits, and after a stop
   * the cleanup deadline ends them, as it ends BigQuery's publish jobs' waits.
   */
  private readonly publishHttp: GcsHttp;
  /** Temp objects the cleanup could not remove (`gs://bucket/name`), for the summary. */
  private readonly left: string[] = [];

  private constructor(
    private readonly options: ObjectPublishOptions,
    private readonly bucket: Bucket,
    private readonly object: string,
    /** The target's generation when the run opened (0: absent), the publish's precondition. */
    readonly targetGeneration: number,
    private readonly manifestGeneration: number,
    private readonly tempFile: File,
    private readonly tempManifest: File,
    /** The temp object's resumable upload: the writer's encoded bytes go here. */
    readonly upload: ResumableUpload,
    private readonly http: GcsHttp,
  ) {
    const { signal: _stop, ...rest } = http.options;
    const deadline = cleanupDeadline(options.signal, options.stopDeadlineMs ?? DEFAULT_STOP_DEADLINE_MS);
    const unstoppable = { ...rest, ...(deadline ? { signal: deadline } : {}) };
    this.publishHttp = new GcsHttp({ ...unstoppable, budget: http.budget, limits: http.limits, requestTimeoutMs: http.requestTimeoutMs });
    this.cleanupHttp = new GcsHttp({
      ...unstoppable,
      budget: http.budget,
      limits: { ...http.limits, maxAttempts: Math.min(3, http.limits.maxAttempts) },
      requestTimeoutMs: Math.min(10_000, http.requestTimeoutMs),
    });
  }

  /** The temp object's name in its bucket. */
  get tempName(): string {
    return this.tempFile.name;
  }

  /** Retries of every request so far (upload, rewrites, reads, deletes). */
  get retries(): number {
    return this.http.retries + this.publishHttp.retries + this.cleanupHttp.retries;
  }

  /** Temp objects whose delete failed or was cut short by the cleanup deadline, each by `gs://` name. */
  leftBehind(): string[] {
    return [...this.left];
  }

  /**
   * Checks what can be checked before any row is fetched (the bucket, the permissions to list and
   * read, a "directory" at the target), records the target's generation (and the manifest's) and
   * starts the temp object's upload.
   */
  static async open(options: ObjectPublishOptions): Promise<ObjectPublish> {
    const { target, storage } = options;
    const { bucket: bucketName, object } = parseGcsObjectUrl(target);
    const bucket = storage.bucket(bucketName);
    const named = { jobName: options.jobName, format: options.format, url: target };
    const where = (operation: string, permission: string) => ({ target: named, bucket: bucketName, operation, permission });
    try {
      // One listing answers three questions: the bucket exists (404 otherwise), we may list it,
      // and nothing lies below `<object>/` (a "directory" readers would confuse with the file).
      const [below] = await bucket.getFiles({ prefix: `${object}/`, maxResults: 1, autoPaginate: false });
      if (below.length > 0) {
        throw new GcsError(
          'target_is_directory',
          named,
          `objects exist below ${target}/ (e.g. ${below[0]!.name}), so the target reads as a directory; change the path or move them`,
        );
      }
    } catch (error) {
      throw gcsFailure(error, { ...where('checking the bucket and the target', 'storage.objects.list'), notFoundIsBucket: true });
    }
    const targetFile = bucket.file(object);
    const manifestObject = manifestPathOf(object);
    let targetGeneration: number;
    let manifestGeneration = 0;
    try {
      targetGeneration = await generationOf(targetFile);
      if (options.manifest) manifestGeneration = await generationOf(bucket.file(manifestObject));
    } catch (error) {
      throw gcsFailure(error, where('reading the target object', 'storage.objects.get'));
    }
    const folder = objectFolder(object);
    const tempFile = bucket.file(`${folder}${tempNameFor(objectBaseName(object), options.runId)}`);
    const tempManifest = bucket.file(`${folder}${tempNameFor(objectBaseName(manifestObject), options.runId)}`);
    const http = new GcsHttp({
      storage,
      logger: options.logger,
      format: options.format,
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.retry?.limits ? { limits: options.retry.limits } : {}),
      ...(options.retry?.budget ? { budget: options.retry.budget } : {}),
      ...(options.retry?.requestTimeoutMs ? { requestTimeoutMs: options.retry.requestTimeoutMs } : {}),
    });
    const upload = new ResumableUpload({
      http,
      bucket: bucketName,
      object: tempFile.name,
      contentType: options.contentType,
      metadata: ownerMetadata(options.jobName, options.runId),
      // A temp object of this name can only be another sink of this job writing the same target.
      ifGenerationMatch: 0,
      ...(options.retry?.chunkBytes ? { chunkBytes: options.retry.chunkBytes } : {}),
    });
    return new ObjectPublish(options, bucket, object, targetGeneration, manifestGeneration, tempFile, tempManifest, upload, http);
  }

  private where(operation: string, permission: string) {
    return {
      target: { jobName: this.options.jobName, format: this.options.format, url: this.options.target },
      bucket: this.bucket.name,
      operation,
      permission,
    };
  }

  /** A failure of the temp object's upload, as the stable error that names it. */
  uploadFailure(cause: unknown): GcsError {
    return gcsFailure(cause, this.where(`uploading the temp object ${this.tempFile.name}`, 'storage.objects.create'));
  }

  /** Uploads the manifest's text to its temp object; the target untouched. */
  async uploadManifest(text: string): Promise<void> {
    // A manifest is one chunk held in memory: a session lost under it is simply started again.
    const upload = new ResumableUpload({
      http: this.http,
      bucket: this.bucket.name,
      object: this.tempManifest.name,
      contentType: 'application/json',
      metadata: ownerMetadata(this.options.jobName, this.options.runId),
      ifGenerationMatch: 0,
    });
    this.manifestUpload = upload;
    try {
      await pipeline(Readable.from([Buffer.from(text, 'utf8')]), upload);
      this.tempManifestObject = upload.finished;
    } catch (error) {
      throw gcsFailure(error, this.where(`uploading the manifest ${this.tempManifest.name}`, 'storage.objects.create'));
    }
  }

  /** The uploaded temp object onto the target, under the generation seen at open; its generation when the answer said it. */
  publishObject(): Promise<string | undefined> {
    return this.rewriteOnto(this.upload.finished!, this.object, this.targetGeneration, 'the temp object onto the target');
  }

  /** The uploaded temp manifest onto `<target>.manifest.json`, under the manifest's generation seen at open. */
  async publishManifest(): Promise<void> {
    await this.rewriteOnto(this.tempManifestObject!, manifestPathOf(this.object), this.manifestGeneration, 'the temp manifest onto the manifest');
  }

  /** Deletes the published temp object (never throws: see deleteTemp). */
  deleteTempObject(): Promise<void> {
    return this.deleteTemp(this.upload.finished);
  }

  /** Deletes the published temp manifest (never throws: see deleteTemp). */
  deleteTempManifest(): Promise<void> {
    return this.deleteTemp(this.tempManifestObject);
  }

  /** After the upload was abandoned: deletes every temp object that may exist (never throws). */
  async discard(): Promise<void> {
    // An unfinished upload whose final request was never sent created no object: nothing to name.
    await this.deleteTemp(this.upload.finished, this.tempFile.name, this.upload.finished !== undefined || this.upload.mayHaveCreated);
    await this.deleteTemp(
      this.tempManifestObject,
      this.tempManifest.name,
      this.tempManifestObject !== undefined || this.manifestUpload?.mayHaveCreated === true,
    );
  }

  /**
   * Rewrites `source` onto `object` under `ifGenerationMatch`, and says what happened only after
   * reading the target: a rewrite whose answer was lost (a timeout, a 5xx after the service did
   * it, a reset) is retried, and the retry meets 412 because the target's generation is now this
   * run's own. So before every retry, and after any failure, the target's metadata is read: when it
   * is this run's object (run id, size and CRC32C of the temp object) the publish succeeded.
   */
  private async rewriteOnto(source: UploadedObject, object: string, ifGenerationMatch: number, what: string): Promise<string | undefined> {
    const http = this.publishHttp;
    const { format, target: targetUrl, runId, logger } = this.options;
    let generation: string | undefined;
    const base = `${http.objectUrl(this.bucket.name, source.name)}/rewriteTo/b/${encodeURIComponent(this.bucket.name)}/o/${encodeURIComponent(object)}?ifGenerationMatch=${ifGenerationMatch}`;
    let precondition: GcsHttpError | undefined;
    try {
      await http.retrying(`rewriting ${what}`, async (attempt) => {
        const earlier = attempt > 1 ? await this.readObject(object) : undefined;
        if (attempt > 1 && isRunObject(earlier, source, runId)) {
          generation = earlier?.generation;
          logger.warn({ target: targetUrl, object }, `${format}: the answer to an earlier rewrite was lost, and the target holds this run's object: published`);
          return;
        }
        let token: string | undefined;
        for (;;) {
          const url = token === undefined ? base : `${base}&rewriteToken=${encodeURIComponent(token)}`;
          const answer = await http.send('POST', url, { headers: { 'content-type': 'application/json' }, body: '{}' });
          if (answer.status === 412) {
            precondition = http.failure('POST', url, answer);
            throw precondition;
          }
          if (answer.status !== 200) throw http.failure('POST', url, answer);
          // A large object may take several calls; each answer carries the token of the next.
          const body = JSON.parse(answer.text) as { done?: boolean; rewriteToken?: string; resource?: { generation?: string } };
          if (body.done === true) {
            generation = body.resource?.generation;
            return;
          }
          token = body.rewriteToken;
        }
      });
    } catch (error) {
      const seen = await this.readObject(object).then(
        (metadata): TargetSeen => ({ metadata }),
        (readError: unknown): TargetSeen => ({ unreadable: readError }),
      );
      if ('metadata' in seen && isRunObject(seen.metadata, source, runId)) {
        logger.warn(
          { target: targetUrl, object, reason: messageOf(error) },
          `${format}: the rewrite failed, but the target holds this run's object (its answer was lost): published`,
        );
        return seen.metadata?.generation;
      }
      const target = { jobName: this.options.jobName, format, url: `gs://${this.bucket.name}/${object}` };
      if (precondition !== undefined && 'metadata' in seen) throw targetChanged(target, ifGenerationMatch, seen.metadata, precondition);
      if ('unreadable' in seen) {
        throw new GcsPublishOutcomeUnknownError(
          target,
          `rewriting ${what} failed (${messageOf(error)}); ${describeSeen(seen, ifGenerationMatch)}: it holds this run's object or the one before; look at its metadata (${RUN_ID_METADATA_KEY}) before re-running`,
          error,
        );
      }
      throw new GcsError('write_failed', target, `rewriting ${what} failed (${messageOf(error)}); ${describeSeen(seen, ifGenerationMatch)}`, error);
    }
    return generation;
  }

  /** The object's metadata, undefined when it does not exist; one request (the caller retries). */
  private async readObject(object: string): Promise<ObjectMetadata | undefined> {
    const url = this.publishHttp.objectUrl(this.bucket.name, object);
    const answer = await this.publishHttp.send('GET', url);
    if (answer.status === 404) return undefined;
    if (answer.status !== 200) throw this.publishHttp.failure('GET', url, answer);
    return JSON.parse(answer.text) as ObjectMetadata;
  }

  /**
   * A temp object goes once published (or on abort), retried like every write; a failure is
   * logged and, when the object may exist, named in `leftBehind()`: the run's output is already
   * (or never) visible, and the object is swept later by the next run (removeStaleTempObjects,
   * once its owner is gone) or the bucket lifecycle rule.
   */
  private async deleteTemp(uploaded: UploadedObject | undefined, name?: string, mayExist = uploaded !== undefined): Promise<void> {
    const object = uploaded?.name ?? name;
    if (object === undefined) return;
    try {
      await this.cleanupHttp.retrying('deleting a temp object', async () => {
        const url = `${this.cleanupHttp.objectUrl(this.bucket.name, object)}${uploaded === undefined ? '' : `?ifGenerationMatch=${uploaded.generation}`}`;
        const answer = await this.cleanupHttp.send('DELETE', url);
        if (answer.status !== 204 && answer.status !== 200 && answer.status !== 404) throw this.cleanupHttp.failure('DELETE', url, answer);
      });
    } catch (error) {
      if (!mayExist) return;
      const url = `gs://${this.bucket.name}/${object}`;
      this.left.push(`Cloud Storage temp object ${url} (removed by a later run's sweep or the bucket lifecycle rule)`);
      this.options.logger.warn(
        { err: error, object: url },
        `${this.options.format}: could not delete a temp object; a later sweep or the bucket lifecycle rule removes it`,
      );
    }
  }
}

interface ObjectMetadata {
  generation: string;
  size: string;
  crc32c?: string;
  metadata?: Record<string, string>;
}

type TargetSeen = { metadata: ObjectMetadata | undefined } | { unreadable: unknown };

/** Whether `metadata` is the object this run uploaded as `source` (a rewrite keeps all three). */
function isRunObject(metadata: ObjectMetadata | undefined, source: UploadedObject, runId: string): boolean {
  return (
    metadata !== undefined && metadata.metadata?.[RUN_ID_METADATA_KEY] === runId && Number(metadata.size) === source.size && metadata.crc32c === source.crc32c
  );
}

/** What the target was seen to hold after a failed publish: "published nothing" only when seen. */
function describeSeen(seen: TargetSeen, expected: number): string {
  if ('unreadable' in seen)
    return `whether the target now holds this run's object is unknown: reading it afterwards failed too (${messageOf(seen.unreadable)})`;
  if (seen.metadata === undefined)
    return expected === 0
      ? 'the target was read afterwards and does not exist: this run published nothing'
      : 'the target was read afterwards and no longer exists (deleted by another writer): this run published nothing';
  const generation = Number(seen.metadata.generation);
  return generation === expected
    ? `the target was read afterwards and still holds generation ${generation}, as before the run: this run published nothing`
    : `the target was read afterwards and holds generation ${generation}, ${writerOf(seen.metadata)}, not this run's object: this run published nothing`;
}

function writerOf(metadata: ObjectMetadata): string {
  const custom = metadata.metadata ?? {};
  if (custom[RUN_ID_METADATA_KEY] === undefined) return 'written by a writer that is not tilehouse (no run id in its metadata)';
  return `written by run ${String(custom[RUN_ID_METADATA_KEY])} of job ${String(custom[JOB_METADATA_KEY] ?? '?')} (process ${String(custom[OWNER_METADATA_KEY] ?? '?')})`;
}

/** A 412 as a stable error that names the other writer, from the target's metadata read after it. */
function targetChanged(target: ObjectTarget, expectedGeneration: number, seen: ObjectMetadata | undefined, cause: unknown): GcsError {
  const expected = expectedGeneration === 0 ? 'absent' : `generation ${expectedGeneration}`;
  const now = seen === undefined ? 'now absent, deleted by another writer' : `now generation ${seen.generation}, ${writerOf(seen)}`;
  return new GcsError(
    'target_changed',
    target,
    `the target changed while this run wrote it (it was ${expected} when the run started, ${now}); it was read after the refused rewrite: nothing was overwritten and this run published nothing`,
    cause,
  );
}
