import { createWriteStream, type WriteStream } from 'node:fs';
import { lstat, mkdir, rename, rm, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Transform, Writable } from 'node:stream';
import { once } from 'node:events';
import { finished, pipeline } from 'node:stream/promises';
import type { Logger } from 'pino';
import type { Column } from '../../../transform/column.js';
import { syncDirectory } from '../../../write-file-atomically.js';
import type { SinkResult } from '../../sink.js';
import { FileWriteError } from '../store-errors.js';
import type { FileEncoder, FormatNames } from '../file-bytes.js';
import { FileStreamWriter } from '../stream-writer.js';
import { PreparedManifest, type ManifestInputs } from '../manifest.js';

export interface LocalFileWriterOptions {
  format: FormatNames;
  /** The run's encoder (the format's). */
  encoder: FileEncoder;
  /** Makes what the encoded bytes pass through before the file (the format's wrapper: gzip), if anything. */
  wrap?: () => Transform | undefined;
  jobName: string;
  /** Absolute path of the file readers see. */
  target: string;
  /** Absolute path of the file being written, in the target's directory. */
  tempPath: string;
  /** For the manifest. */
  columns: readonly Column[];
  /** Whether the stored bytes are gzip (the manifest's and the summary's `gzip`). */
  gzip: boolean;
  logger: Logger;
  signal?: AbortSignal;
  /** Publish `<target>.manifest.json` with the file (see manifest.ts): its temp path and run. */
  manifest?: Pick<ManifestInputs, 'tempPath' | 'runId' | 'window' | 'runStartedAt' | 'definition'>;
}

/**
 * One run's file. Rows stream through the format's encoder (and its wrapper, e.g. gzip) into a
 * temp file beside the target; `prepare` makes it durable (flush, fsync) and `publish` makes it visible (rename, fsync
 * of the directory).
 * Until then the previous target file, if any, is untouched, so a failed or killed run never
 * leaves a half-written or missing file for readers.
 */
export class LocalFileWriter extends FileStreamWriter {
  private bytes = 0;
  private manifest: PreparedManifest | undefined;
  private readonly left: string[] = [];

  private constructor(
    private readonly options: LocalFileWriterOptions,
    head: Writable,
    private readonly file: WriteStream,
    /** Settles when every byte is in the file and it is fsynced and closed (or on failure). */
    private readonly flushed: Promise<void>,
  ) {
    super(options.format, options.encoder, head, options.signal);
  }

  get target(): string {
    return this.options.target;
  }

  protected get jobName(): string {
    return this.options.jobName;
  }

  /** Creates the temp file and writes the encoder's first bytes (CSV: the header row). */
  static async open(options: LocalFileWriterOptions): Promise<LocalFileWriter> {
    const { target, tempPath } = options;
    try {
      await mkdir(dirname(target), { recursive: true });
    } catch (error) {
      throw new FileWriteError(options.format, options.jobName, target, 'creating its directory', error);
    }
    // 'wx': two sinks of one job pointing at the same path must not share a temp file silently.
    // flush: fsync before close, so `finished` means durable, not just handed to the kernel.
    const file = createWriteStream(tempPath, { flags: 'wx', mode: 0o644, flush: true });
    try {
      await once(file, 'ready');
    } catch (error) {
      const reason =
        (error as NodeJS.ErrnoException).code === 'EEXIST'
          ? `creating temp file ${tempPath} (it exists: does another sink of this job write the same path?)`
          : `creating temp file ${tempPath}`;
      throw new FileWriteError(options.format, options.jobName, target, reason, error);
    }
    const wrapper = options.wrap?.();
    const flushed = (wrapper ? pipeline(wrapper, file) : finished(file)).then(() => undefined);
    const writer = new LocalFileWriter(options, wrapper ?? file, file, flushed);
    writer.watch(flushed);
    options.logger.debug({ target, tempPath, gzip: options.gzip }, `${options.format.name}: writing to temp file`);
    await writer.writeStart();
    return writer;
  }

  /** Phase 1: every byte in the temp file, fsynced and closed; the target is not touched yet. */
  protected async finish(): Promise<void> {
    const { target, tempPath, jobName } = this.options;
    await this.endStream(this.flushed);
    // A directory where the file should go would fail the rename; found here, in phase 1, it
    // fails the run before any sink has published.
    const existing = await lstat(target).catch(() => undefined);
    if (existing?.isDirectory()) {
      throw new FileWriteError(
        this.format,
        jobName,
        target,
        'checking the target',
        Object.assign(new Error('the target path is a directory'), { code: 'EISDIR' }),
      );
    }
    try {
      this.bytes = (await stat(tempPath)).size;
    } catch (error) {
      throw new FileWriteError(this.format, jobName, target, `reading ${tempPath}`, error);
    }
    const manifest = this.options.manifest;
    if (manifest !== undefined) {
      const { gzip, columns } = this.options;
      this.manifest = await PreparedManifest.prepare({
        ...manifest,
        format: this.format,
        jobName,
        target,
        dataPath: tempPath,
        rows: this.rows,
        bytes: this.bytes,
        gzip,
        columns,
      });
    }
  }

  /** Phase 2: the rename that makes the run visible, then the directory fsync that makes it durable. */
  protected async makeVisible(): Promise<SinkResult> {
    const { target, tempPath, jobName } = this.options;
    try {
      await rename(tempPath, target);
    } catch (error) {
      throw new FileWriteError(this.format, jobName, target, `renaming ${tempPath} onto it`, error);
    }
    // From here on the new file is what readers see, so publish reports it published even if the
    // directory sync below fails: a failure would tell the summary (and a partial publish) that
    // the target still holds the previous run, which is no longer true.
    this.state = 'published';
    const details: Record<string, number | boolean | string> = { bytes: this.bytes, gzip: this.options.gzip };
    if (this.manifest !== undefined) {
      // The data file is published whatever happens to its manifest; a consumer finds the
      // previous run's manifest not matching it, which is what the manifest is for.
      try {
        await this.manifest.publish();
        details.sha256 = this.manifest.manifest.sha256;
      } catch (error) {
        details.manifestPublished = false;
        this.options.logger.error({ err: error, target }, `${this.format.name}: published, but its manifest could not be renamed into place`);
      }
    }
    try {
      await this.syncDirectory();
    } catch (error) {
      details.directorySynced = false;
      this.options.logger.error({ err: error, target }, `${this.format.name}: published, but the directory fsync failed; the new file may not survive a crash`);
    }
    this.options.logger.debug({ target, rows: this.rows, bytes: this.bytes }, `${this.format.name}: published`);
    return { sink: this.format.name, target, rows: this.rows, details };
  }

  /**
   * The rename is only durable once the directory entry is on disk (the house's one directory
   * fsync, which passes over file systems that cannot fsync a directory).
   */
  private async syncDirectory(): Promise<void> {
    const directory = dirname(this.options.target);
    try {
      await syncDirectory(directory);
    } catch (error) {
      throw new FileWriteError(this.format, this.options.jobName, this.options.target, `syncing directory ${directory}`, error);
    }
  }

  /** What an abort could not remove (a directory turned read-only under the run): each temp file still there, named. */
  leftBehind(): string[] {
    return [...this.left];
  }

  protected async discardOutput(): Promise<void> {
    this.file.destroy();
    if (!this.file.closed) await once(this.file, 'close').catch(() => undefined);
    const temps: [string, () => Promise<void>][] = [[this.options.tempPath, () => rm(this.options.tempPath, { force: true })]];
    const { manifest } = this;
    if (manifest !== undefined && this.options.manifest !== undefined) temps.push([this.options.manifest.tempPath, () => manifest.discard()]);
    let first: FileWriteError | undefined;
    for (const [tempPath, remove] of temps) {
      try {
        await remove();
      } catch (error) {
        this.left.push(`temp file ${tempPath}: still there (removing it failed: ${(error as Error).message}); a later run's sweep removes it once it can`);
        first ??= new FileWriteError(this.format, this.options.jobName, this.options.target, `removing ${tempPath}`, error);
      }
    }
    if (first !== undefined) throw first;
  }

  protected writeError(cause: unknown): FileWriteError {
    return new FileWriteError(this.format, this.options.jobName, this.options.target, `writing ${this.options.tempPath}`, cause);
  }
}
