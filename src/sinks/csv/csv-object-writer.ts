import { createHash } from 'node:crypto';
import { Transform, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import type { Bucket, File, Storage } from '@google-cloud/storage';
import type { Logger } from 'pino';
import type { Column } from '../../transform/column.js';
import type { SinkResult } from '../sink.js';
import { GcsError, gcsFailure, statusOf } from '../gcs/gcs-errors.js';
import { parseGcsObjectUrl } from '../../config/gcs-url.js';
import { JOB_METADATA_KEY, objectBaseName, objectFolder, OWNER_METADATA_KEY, ownerMetadata, RUN_ID_METADATA_KEY } from '../gcs/temp-objects.js';
import { CsvStreamWriter } from './csv-stream-writer.js';
import { buildManifest, manifestPathOf, manifestText, type CsvManifest } from './manifest.js';
import { tempNameFor } from './temp-files.js';

export interface CsvObjectWriterOptions {
  jobName: string;
  /** `gs://bucket/object`: the object readers see. */
  target: string;
  runId: string;
  columns: readonly Column[];
  gzip: boolean;
  logger: Logger;
  storage: Storage;
  signal?: AbortSignal;
  /** Publish `<target>.manifest.json` right after the object (see manifest.ts). */
  manifest?: { window?: { from: string; to: string } };
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
 * One run's CSV as a Cloud Storage object, with the local sink's two phases:
 *
 * - rows stream (the same encoder, the same gzip) into a resumable upload of a temp object
 *   beside the target, `.<name>.tilehouse-<runId>+<owner>.tmp`, so the pod never holds the file;
 * - prepare finishes the upload; the client checks the service's CRC32C of the stored object
 *   against the bytes it sent, and the temp object exists only once it is whole;
 * - publish rewrites the temp object onto the target in one server-side step, with
 *   `ifGenerationMatch` = the target's generation seen when the run opened (0 when it did not
 *   exist): a writer that replaced it meanwhile makes the rewrite fail (412), and the run names
 *   it instead of overwriting its output. Readers see the previous object or the whole new one.
 *
 * Every failure before publish leaves the target as it was; abort deletes the temp objects.
 */
export class CsvObjectWriter extends CsvStreamWriter {
  private bytes = 0;
  private manifest: CsvManifest | undefined;
  private readonly sha256 = createHash('sha256');

  private constructor(
    private readonly options: CsvObjectWriterOptions,
    private readonly bucket: Bucket,
    private readonly object: string,
    /** The target's generation when the run opened (0: absent), the publish's precondition. */
    private readonly targetGeneration: number,
    private readonly manifestGeneration: number,
    private readonly tempFile: File,
    private readonly tempManifest: File,
    head: Writable,
    private readonly upload: Writable,
    private readonly uploaded: Promise<void>,
  ) {
    super(options.columns, head, options.signal);
  }

  get target(): string {
    return this.options.target;
  }

  /**
   * Checks what can be checked before any row is fetched (the bucket, the permissions to list and
   * read, a "directory" at the target), records the target's generation, starts the upload and
   * writes the header row.
   */
  static async open(options: CsvObjectWriterOptions): Promise<CsvObjectWriter> {
    const { target, storage } = options;
    const { bucket: bucketName, object } = parseGcsObjectUrl(target);
    const bucket = storage.bucket(bucketName);
    const where = (operation: string, permission: string) => ({ target, bucket: bucketName, operation, permission });
    try {
      // One listing answers three questions: the bucket exists (404 otherwise), we may list it,
      // and nothing lies below `<object>/` (a "directory" readers would confuse with the file).
      const [below] = await bucket.getFiles({ prefix: `${object}/`, maxResults: 1, autoPaginate: false });
      if (below.length > 0) {
        throw new GcsError('gcs_target_is_directory', target, `objects exist below ${target}/ (e.g. ${below[0]!.name}), so the target reads as a directory; change the path or move them`);
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
      if (options.manifest !== undefined) manifestGeneration = await generationOf(bucket.file(manifestObject));
    } catch (error) {
      throw gcsFailure(error, where('reading the target object', 'storage.objects.get'));
    }
    const folder = objectFolder(object);
    const tempFile = bucket.file(`${folder}${tempNameFor(objectBaseName(object), options.runId)}`);
    const tempManifest = bucket.file(`${folder}${tempNameFor(objectBaseName(manifestObject), options.runId)}`);
    const upload = tempFile.createWriteStream({
      resumable: true,
      validation: 'crc32c',
      contentType: options.gzip ? 'application/gzip' : 'text/csv; charset=utf-8',
      metadata: { metadata: ownerMetadata(options.jobName, options.runId) },
      // A temp object of this name can only be another sink of this job writing the same target.
      preconditionOpts: { ifGenerationMatch: 0 },
    });
    const gzip = options.gzip ? createGzip() : undefined;
    let writer: CsvObjectWriter | undefined;
    const hasher = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        writer!.sha256.update(chunk);
        writer!.bytes += chunk.length;
        callback(null, chunk);
      },
    });
    const uploaded = (gzip ? pipeline(gzip, hasher, upload) : pipeline(hasher, upload)).then(() => undefined);
    writer = new CsvObjectWriter(options, bucket, object, targetGeneration, manifestGeneration, tempFile, tempManifest, gzip ?? hasher, upload, uploaded);
    writer.watch(uploaded);
    options.logger.debug({ target, temp: tempFile.name, gzip: options.gzip, targetGeneration }, 'csv: uploading to a temp object');
    await writer.writeHeader(options.columns);
    return writer;
  }

  private where(operation: string, permission: string) {
    return { target: this.target, bucket: this.bucket.name, operation, permission };
  }

  /** Phase 1: the upload finished and verified, the manifest uploaded; the target untouched. */
  protected async finish(): Promise<void> {
    await this.endStream(this.uploaded);
    if (this.options.manifest === undefined) return;
    const { jobName, runId, gzip, columns } = this.options;
    const window = this.options.manifest.window;
    this.manifest = buildManifest({ jobName, target: this.target, runId, rows: this.rows, bytes: this.bytes, gzip, columns, ...(window ? { window } : {}) }, this.sha256.digest('hex'));
    try {
      await this.tempManifest.save(manifestText(this.manifest), {
        resumable: false,
        contentType: 'application/json',
        metadata: { metadata: ownerMetadata(jobName, runId) },
        preconditionOpts: { ifGenerationMatch: 0 },
      });
    } catch (error) {
      throw gcsFailure(error, this.where(`uploading the manifest ${this.tempManifest.name}`, 'storage.objects.create'));
    }
  }

  /** Phase 2: one server-side rewrite under the generation precondition, then the temp object goes. */
  protected async makeVisible(): Promise<SinkResult> {
    const targetFile = this.bucket.file(this.object);
    try {
      await this.tempFile.copy(targetFile, { preconditionOpts: { ifGenerationMatch: this.targetGeneration } });
    } catch (error) {
      if (statusOf(error) === 412) throw await this.targetChanged(targetFile, error);
      throw gcsFailure(error, this.where('rewriting the temp object onto the target', 'storage.objects.create and storage.objects.delete'));
    }
    // From here on readers see the new object: nothing below may report the publish failed.
    this.state = 'published';
    const details: Record<string, number | boolean | string> = { bytes: this.bytes, gzip: this.options.gzip };
    await this.deleteTemp(this.tempFile);
    if (this.manifest !== undefined) {
      try {
        await this.tempManifest.copy(this.bucket.file(manifestPathOf(this.object)), { preconditionOpts: { ifGenerationMatch: this.manifestGeneration } });
        details.sha256 = this.manifest.sha256;
      } catch (error) {
        details.manifestPublished = false;
        this.options.logger.error({ err: error, target: this.target }, 'csv: published, but its manifest could not be rewritten into place');
      }
      await this.deleteTemp(this.tempManifest);
    }
    this.options.logger.debug({ target: this.target, rows: this.rows, bytes: this.bytes }, 'csv: published');
    return { sink: 'csv', target: this.target, rows: this.rows, details };
  }

  /** The 412 as a stable error that names the other writer, read from the object's metadata. */
  private async targetChanged(targetFile: File, cause: unknown): Promise<GcsError> {
    let other = 'a writer that is not tilehouse (no run id in its metadata)';
    let generation = 'unknown';
    try {
      const [metadata] = await targetFile.getMetadata();
      generation = String(metadata.generation);
      const custom = metadata.metadata ?? {};
      if (custom[RUN_ID_METADATA_KEY] !== undefined) {
        other = `run ${String(custom[RUN_ID_METADATA_KEY])} of job ${String(custom[JOB_METADATA_KEY] ?? '?')} (process ${String(custom[OWNER_METADATA_KEY] ?? '?')})`;
      }
    } catch (error) {
      if (statusOf(error) === 404) other = 'a writer that deleted it';
    }
    const expected = this.targetGeneration === 0 ? 'absent' : `generation ${this.targetGeneration}`;
    return new GcsError(
      'gcs_target_changed',
      this.target,
      `the target changed while this run wrote it (it was ${expected} when the run started, now generation ${generation}, written by ${other}); nothing was overwritten and this run published nothing`,
      cause,
    );
  }

  private async deleteTemp(file: File): Promise<void> {
    try {
      await file.delete({ ignoreNotFound: true });
    } catch (error) {
      this.options.logger.warn({ err: error, object: file.name }, 'csv: could not delete a temp object; a later sweep or the bucket lifecycle rule removes it');
    }
  }

  protected async discardOutput(): Promise<void> {
    // An unfinished resumable upload creates no object; destroying the stream abandons its session.
    this.upload.destroy();
    await this.uploaded.catch(() => undefined);
    try {
      await this.tempFile.delete({ ignoreNotFound: true });
      await this.tempManifest.delete({ ignoreNotFound: true });
    } catch (error) {
      throw gcsFailure(error, this.where(`deleting the temp object ${this.tempFile.name}`, 'storage.objects.delete'));
    }
  }

  protected writeError(cause: unknown): GcsError {
    return gcsFailure(cause, this.where(`uploading the temp object ${this.tempFile.name}`, 'storage.objects.create'));
  }
}
