import { createHash } from 'node:crypto';
import { Transform, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { SinkResult } from '../sink.js';
import type { ObjectTarget } from './store-errors.js';
import { buildManifest, manifestText, type FileManifest } from './manifest.js';
import type { StoreWriterOptions } from './object-store.js';
import { FileStreamWriter } from './stream-writer.js';

/** What every bucket store's writer (gs://, s3://) is given: a run's writer options, the stop deadline; each store adds its client and retry settings. */
export interface ObjectWriterBaseOptions extends Omit<StoreWriterOptions, 'retryBudget'> {
  /** The environment's `stopDeadlineMs`: after a stop, publish and cleanup requests end this long after it. */
  stopDeadlineMs?: number;
}

/** The upload's byte stream as a writer's `head`: the wrapper (if any), a counter and hasher of the stored bytes, the upload. */
export interface ObjectUploadStream {
  head: Writable;
  uploaded: Promise<void>;
}

/**
 * What the gs:// and s3:// writers share on top of FileStreamWriter: the stored bytes counted and
 * hashed on their way to the temp object, the manifest built from them, and the publish's result
 * (the manifest put into place after the object, a failure there logged but not a failed
 * publish). Each store's writer owns its protocol: how the temp object is uploaded, published and
 * removed.
 */
export abstract class ObjectStreamWriter<O extends ObjectWriterBaseOptions = ObjectWriterBaseOptions> extends FileStreamWriter {
  protected bytes = 0;
  protected manifest: FileManifest | undefined;
  private readonly sha256 = createHash('sha256');
  /** The upload's end: every byte stored in the temp object. */
  protected readonly uploaded: Promise<void>;

  protected constructor(
    protected readonly options: O,
    stream: ObjectUploadStream,
  ) {
    super(options.format, options.encoder, stream.head, options.signal);
    this.uploaded = stream.uploaded;
    this.watch(stream.uploaded);
  }

  get target(): string {
    return this.options.target;
  }

  protected get jobName(): string {
    return this.options.jobName;
  }

  /**
   * The stream the encoded bytes enter, piped into `upload`; `writer()` is the writer it feeds
   * (made after the stream, since the writer is given it), whose count and hash each chunk updates.
   */
  protected static uploadStream(wrap: ObjectWriterBaseOptions['wrap'], upload: Writable, writer: () => ObjectStreamWriter): ObjectUploadStream {
    const wrapper = wrap?.();
    const hasher = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        writer().sha256.update(chunk);
        writer().bytes += chunk.length;
        callback(null, chunk);
      },
    });
    const uploaded = (wrapper ? pipeline(wrapper, hasher, upload) : pipeline(hasher, upload)).then(() => undefined);
    return { head: wrapper ?? hasher, uploaded };
  }

  /** Phase 1's common part: every byte uploaded, then the manifest's text when the sink writes one. */
  protected async endUpload(): Promise<string | undefined> {
    await this.endStream(this.uploaded);
    if (this.options.manifest === undefined) return undefined;
    const { jobName, runId, gzip, columns } = this.options;
    this.manifest = buildManifest(
      { jobName, target: this.target, runId, rows: this.rows, bytes: this.bytes, gzip, columns, ...this.options.manifest },
      this.sha256.digest('hex'),
    );
    return manifestText(this.manifest);
  }

  /**
   * Phase 2's end, once readers see the new object: the manifest put into place (`publishManifest`,
   * then `removeTempManifest` whatever came of it), and the result with what the summary says.
   */
  protected async published(
    details: Record<string, number | boolean | string>,
    manifest: { publish: () => Promise<void>; removeTemp: () => Promise<void> } | undefined,
    retries: () => number,
  ): Promise<SinkResult> {
    if (this.manifest !== undefined && manifest !== undefined) {
      try {
        await manifest.publish();
        details.sha256 = this.manifest.sha256;
      } catch (error) {
        details.manifestPublished = false;
        this.options.logger.error({ err: error, target: this.target }, `${this.format.name}: published, but its manifest could not be put into place`);
      }
      await manifest.removeTemp();
    }
    const count = retries();
    if (count > 0) details.retries = count;
    this.options.logger.debug({ target: this.target, rows: this.rows, bytes: this.bytes, retries: count }, `${this.format.name}: published`);
    return { sink: this.format.name, target: this.target, rows: this.rows, details };
  }

  /** An object of this run's, as a failure names it: the job, the format, the URL. */
  protected named(url: string): ObjectTarget {
    return { jobName: this.options.jobName, format: this.format.name, url };
  }
}
