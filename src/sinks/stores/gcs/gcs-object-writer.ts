import type { Storage } from '@google-cloud/storage';
import type { SinkResult } from '../../sink.js';
import type { GcsError } from './gcs-errors.js';
import { ObjectPublish, type GcsWriteSettings } from './object-publish.js';
import { ObjectStreamWriter, type ObjectUploadStream, type ObjectWriterBaseOptions } from '../object-stream-writer.js';

export interface GcsObjectWriterOptions extends ObjectWriterBaseOptions {
  storage: Storage;
  /** Tilehouse's retry of every write-path request (see gcs-http.ts); defaults per writer. */
  retry?: GcsWriteSettings;
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
export class GcsObjectWriter extends ObjectStreamWriter<GcsObjectWriterOptions> {
  private constructor(
    options: GcsObjectWriterOptions,
    private readonly gcs: ObjectPublish,
    stream: ObjectUploadStream,
  ) {
    super(options, stream);
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
  static async open(options: GcsObjectWriterOptions): Promise<GcsObjectWriter> {
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
    let writer: GcsObjectWriter | undefined;
    writer = new GcsObjectWriter(
      options,
      gcs,
      ObjectStreamWriter.uploadStream(options.wrap, gcs.upload, () => writer!),
    );
    options.logger.debug(
      { target: options.target, temp: gcs.tempName, gzip: options.gzip, targetGeneration: gcs.targetGeneration },
      `${options.format.name}: uploading to a temp object`,
    );
    await writer.writeStart();
    return writer;
  }

  /** Phase 1: the upload finished and verified, the manifest uploaded; the target untouched. */
  protected async finish(): Promise<void> {
    const manifest = await this.endUpload();
    if (manifest !== undefined) await this.gcs.uploadManifest(manifest);
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
    const manifest = { publish: () => this.gcs.publishManifest(), removeTemp: () => this.gcs.deleteTempManifest() };
    return this.published(details, manifest, () => this.gcs.retries);
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
