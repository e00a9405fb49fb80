import { createHash } from 'node:crypto';
import { Transform, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Storage } from '@google-cloud/storage';
import type { Logger } from 'pino';
import type { Column } from '../../transform/column.js';
import type { SinkResult } from '../sink.js';
import type { GcsError } from '../gcs/gcs-errors.js';
import { ObjectPublish, type GcsWriteSettings } from '../gcs/object-publish.js';
import type { FileEncoder, FormatNames } from './file-format.js';
import { FileStreamWriter } from './stream-writer.js';
import { buildManifest, manifestText, type FileManifest } from './manifest.js';

export interface ObjectWriterOptions {
  format: FormatNames;
  /** The run's encoder (the format's). */
  encoder: FileEncoder;
  /** Makes what the encoded bytes pass through before the upload (the format's wrapper: gzip), if anything. */
  wrap?: () => Transform | undefined;
  /** The object's `content-type` (the format's). */
  contentType: string;
  jobName: string;
  /** `gs://bucket/object`: the object readers see. */
  target: string;
  runId: string;
  /** For the manifest. */
  columns: readonly Column[];
  /** Whether the stored bytes are gzip (the manifest's and the summary's `gzip`). */
  gzip: boolean;
  logger: Logger;
  storage: Storage;
  /** The run's stop: aborts the upload's request in flight and any wait between its retries. */
  signal?: AbortSignal;
  /** The environment's `stopDeadlineMs`: after a stop, publish and cleanup requests end this long after it. */
  stopDeadlineMs?: number;
  /** Tilehouse's retry of every write-path request (see gcs-http.ts); defaults per writer. */
  retry?: GcsWriteSettings;
  /** Publish `<target>.manifest.json` right after the object (see manifest.ts). */
  manifest?: { window?: { from: string; to: string } };
}

/**
 * One run's file as a Cloud Storage object, with the local writer's two phases; how the object
 * gets there and becomes visible is Cloud Storage's protocol, gcs/object-publish.ts:
 *
 * - rows stream (the same encoder, the same wrapper) into a resumable upload of a temp object
 *   beside the target, so the pod never holds the file;
 * - prepare finishes the upload; the stored object's size and CRC32C are checked against the
 *   bytes sent, and the temp object exists only once it is whole; the manifest is uploaded too;
 * - publish rewrites the temp object onto the target in one server-side step under
 *   `ifGenerationMatch` = the target's generation seen when the run opened: readers see the
 *   previous object or the whole new one, and a writer that replaced it meanwhile is named.
 *
 * Every failure before publish leaves the target as it was; abort deletes the temp objects.
 */
export class ObjectWriter extends FileStreamWriter {
  private bytes = 0;
  private manifest: FileManifest | undefined;
  private readonly sha256 = createHash('sha256');

  private constructor(
    private readonly options: ObjectWriterOptions,
    private readonly gcs: ObjectPublish,
    head: Writable,
    private readonly uploaded: Promise<void>,
  ) {
    super(options.format, options.encoder, head, options.signal);
  }

  get target(): string {
    return this.options.target;
  }

  protected get jobName(): string {
    return this.options.jobName;
  }

  /** Temp objects whose delete failed or was cut short by the cleanup deadline, each by `gs://` name. */
  leftBehind(): string[] {
    return this.gcs.leftBehind();
  }

  /**
   * Checks what can be checked before any row is fetched (the bucket, the permissions to list and
   * read, a "directory" at the target), records the target's generation, starts the upload and
   * writes the encoder's first bytes (CSV: the header row).
   */
  static async open(options: ObjectWriterOptions): Promise<ObjectWriter> {
    const gcs = await ObjectPublish.open({
      format: options.format.name,
      contentType: options.contentType,
      jobName: options.jobName,
      target: options.target,
      runId: options.runId,
      logger: options.logger,
      storage: options.storage,
      signal: options.signal,
      stopDeadlineMs: options.stopDeadlineMs,
      retry: options.retry,
      manifest: options.manifest !== undefined,
    });
    const wrapper = options.wrap?.();
    let writer: ObjectWriter | undefined;
    const hasher = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        writer!.sha256.update(chunk);
        writer!.bytes += chunk.length;
        callback(null, chunk);
      },
    });
    const uploaded = (wrapper ? pipeline(wrapper, hasher, gcs.upload) : pipeline(hasher, gcs.upload)).then(() => undefined);
    writer = new ObjectWriter(options, gcs, wrapper ?? hasher, uploaded);
    writer.watch(uploaded);
    options.logger.debug(
      { target: options.target, temp: gcs.tempName, gzip: options.gzip, targetGeneration: gcs.targetGeneration },
      `${options.format.name}: uploading to a temp object`,
    );
    await writer.writeStart();
    return writer;
  }

  /** Phase 1: the upload finished and verified, the manifest uploaded; the target untouched. */
  protected async finish(): Promise<void> {
    await this.endStream(this.uploaded);
    if (this.options.manifest === undefined) return;
    const { jobName, runId, gzip, columns } = this.options;
    const window = this.options.manifest.window;
    this.manifest = buildManifest(
      { jobName, target: this.target, runId, rows: this.rows, bytes: this.bytes, gzip, columns, ...(window ? { window } : {}) },
      this.sha256.digest('hex'),
    );
    await this.gcs.uploadManifest(manifestText(this.manifest));
  }

  /** Phase 2: one server-side rewrite under the generation precondition, then the temp object goes. */
  protected async makeVisible(): Promise<SinkResult> {
    const generation = await this.gcs.publishObject();
    // From here on readers see the new object: nothing below may report the publish failed.
    this.state = 'published';
    const details: Record<string, number | boolean | string> = { bytes: this.bytes, gzip: this.options.gzip };
    // The published object's generation (the run's trace names it), when the answer said it.
    if (generation !== undefined) details.generation = generation;
    await this.gcs.deleteTempObject();
    if (this.manifest !== undefined) {
      try {
        await this.gcs.publishManifest();
        details.sha256 = this.manifest.sha256;
      } catch (error) {
        details.manifestPublished = false;
        this.options.logger.error({ err: error, target: this.target }, `${this.format.name}: published, but its manifest could not be rewritten into place`);
      }
      await this.gcs.deleteTempManifest();
    }
    const retries = this.gcs.retries;
    if (retries > 0) details.retries = retries;
    this.options.logger.debug({ target: this.target, rows: this.rows, bytes: this.bytes, retries }, `${this.format.name}: published`);
    return { sink: this.format.name, target: this.target, rows: this.rows, details };
  }

  protected async discardOutput(): Promise<void> {
    // An unfinished resumable upload creates no object; destroying the stream abandons its session.
    this.gcs.upload.destroy();
    await this.uploaded.catch(() => undefined);
    await this.gcs.discard();
  }

  protected writeError(cause: unknown): GcsError {
    return this.gcs.uploadFailure(cause);
  }
}
