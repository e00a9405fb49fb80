import { text } from 'node:stream/consumers';
import type { Storage } from '@google-cloud/storage';
import type { StorageClientSettings } from '../gcs/storage-client.js';
import type { S3Client } from '@aws-sdk/client-s3';
import type { S3Settings } from '../s3/s3-client.js';
import type { S3WriteSettings } from '../s3/s3-object-writer.js';
import type { Logger } from 'pino';
import type { GcsWriteSettings } from '../gcs/object-publish.js';
import type { AccessCheckContext, Sink, SinkPlan, SinkRunContext, SinkWriter } from '../sink.js';
import { unwritableDirectory } from '../writable-directory.js';
import { FileTargetUnreadableError, FileTargetUnwritableError } from './file-errors.js';
import type { FileFormat, FileSinkConfig } from './file-format.js';
import type { ObjectWriterBaseOptions } from './object-stream-writer.js';
import { LocalFileWriter } from './file-writer.js';
import { manifestPathOf } from './manifest.js';
import { FilePathTemplate, isGcsTarget, isObjectTarget, isS3Target } from './path-template.js';
import { localStoredFile } from './stored-file.js';
import { removeStaleTempFiles, tempPathFor } from './temp-files.js';
import { calendarDateIn } from '../../transform/calendar.js';
import type { GuardSettings } from '../../config/publish-guard-schema.js';
import { messageOf } from '../../errors.js';
import type { GuardCheck, TargetHolding } from '../publish-guard.js';
import { withGuard } from './guarded-writer.js';
import type { StoredFile } from './file-format.js';

export interface FileSinkOptions<C extends FileSinkConfig = FileSinkConfig> {
  config: C;
  /** The environment's directory for this kind (`sinks.<kind>.directory`); relative path templates resolve under it. */
  directory: string;
  /** The publish guard's settings in force (the sink's over its kind's default); undefined: off. */
  guard?: GuardSettings | undefined;
  /** The job's IANA zone; `{date}` of a scheduled run is the run's start date there. */
  timezone: string;
  /**
   * The Cloud Storage client for gs:// targets; injected in tests. By default one is created on
   * first use (Application Default Credentials, or STORAGE_EMULATOR_HOST), never for local targets.
   */
  storageClient?: Storage;
  /** gs:// targets: tilehouse's retry of the upload and publish requests (defaults in gcs-http.ts). */
  gcsWrite?: GcsWriteSettings;
  /** The environment's `stopDeadlineMs`: gs:// publish and cleanup requests end this long after a stop. */
  stopDeadlineMs?: number;
  /** gs:// targets: `sinks.gcs.apiEndpoint` and `googleCredentialsWaitMs` of the environment. */
  gcsClient?: StorageClientSettings;
  /** The environment's `sinks.s3` (region, endpoint, path style) for s3:// targets. */
  s3?: S3Settings;
  /** The S3 client for s3:// targets; injected in tests. By default one is created from `s3` on first use (the AWS credential chain). */
  s3Client?: S3Client;
  /** s3:// targets: tilehouse's retry of the upload and publish requests, and the part size (defaults in s3-requests.ts). */
  s3Write?: S3WriteSettings;
}

/**
 * Writes each run of a tile to one file in the sink's format, replacing the previous file
 * atomically on commit. The resolved target decides where the bytes go: a local file
 * (LocalFileWriter: temp file + rename) or a Cloud Storage object (ObjectWriter: resumable upload
 * to a temp object + rewrite under a generation precondition). Both write the same bytes: the
 * format's encoder's, through its wrapper.
 */
export class FileSink<C extends FileSinkConfig = FileSinkConfig> implements Sink {
  readonly kind: C['type'];
  /**
   * Last for a local file: a rename in a directory we just wrote to is the publish least likely to
   * fail. A gs:// object's rewrite (an s3:// object's copy) is a remote call, likelier to fail
   * than a rename and less than a BigQuery copy job: between the two.
   */
  readonly publishRank: number;
  private readonly template: FilePathTemplate;
  private storage: Promise<Storage> | undefined;
  private s3: Promise<S3Client> | undefined;

  /** Throws FilePathInvalidError for a bad path template, so configuration checks catch it. */
  constructor(
    readonly format: FileFormat<C>,
    private readonly options: FileSinkOptions<C>,
  ) {
    this.kind = format.name;
    this.template = new FilePathTemplate(format, options.config.path ?? format.defaultPathTemplate(options.config, false));
    this.publishRank = isObjectTarget(this.template.sweepScope(options.directory).root) ? 5 : 10;
  }

  /** The output path for a run (exposed for `validate`/dry runs and tests). */
  targetFor(context: Pick<SinkRunContext, 'jobName' | 'tileId' | 'runId' | 'startedAt' | 'window'>): string {
    return this.template.resolve(
      {
        name: context.jobName,
        tile: context.tileId,
        runId: context.runId,
        date: context.window?.from ?? calendarDateIn(context.startedAt, this.options.timezone),
      },
      this.options.directory,
    );
  }

  /** Temp files of dead runs, looked for only where this sink's template can put files. */
  async sweep(logger: Logger): Promise<string[]> {
    const { root, recursive } = this.template.sweepScope(this.options.directory);
    if (isS3Target(root)) {
      const { removeStaleTempKeys } = await import('../s3/temp-keys.js');
      return removeStaleTempKeys(await this.s3Client(), root, { recursive, logger });
    }
    if (!isGcsTarget(root)) return removeStaleTempFiles(root, { recursive });
    const { removeStaleTempObjects } = await import('../gcs/temp-objects.js');
    return removeStaleTempObjects(await this.storageClient(), root, { recursive, logger });
  }

  /**
   * Local targets: the deepest directory the template fixes is, or can be created as, a writable
   * directory. gs:// targets: the bucket exists and the credentials may write it. Nothing is written.
   */
  async checkAccess(context: AccessCheckContext): Promise<string | undefined> {
    const { root } = this.template.sweepScope(this.options.directory);
    if (isS3Target(root)) {
      const [{ checkBucketWritable }, { splitS3Url }] = await Promise.all([import('../s3/check-bucket.js'), import('../../config/s3-url.js')]);
      const { bucket, rest } = splitS3Url(root)!;
      return checkBucketWritable(await this.s3Client(), bucket, rest, { jobName: context.jobName, format: this.format.name }, context.logger);
    }
    if (!isGcsTarget(root)) {
      const unwritable = await unwritableDirectory(root);
      if (unwritable !== undefined) throw new FileTargetUnwritableError(this.format, context.jobName, root, unwritable);
      return undefined;
    }
    const [{ checkBucketWritable }, { splitGcsUrl }] = await Promise.all([import('../gcs/check-bucket.js'), import('../../config/gcs-url.js')]);
    const { bucket, rest } = splitGcsUrl(root)!;
    return checkBucketWritable(await this.storageClient(), bucket, rest, { jobName: context.jobName, format: this.format.name }, context.logger);
  }

  /** The Cloud Storage client, created (and its module loaded) on first use by a gs:// target. */
  storageClient(): Promise<Storage> {
    this.storage ??=
      this.options.storageClient !== undefined
        ? Promise.resolve(this.options.storageClient)
        : import('../gcs/storage-client.js').then(({ createStorageClient }) => createStorageClient(process.env, this.options.gcsClient));
    return this.storage;
  }

  /** The S3 client, created (and the AWS SDK loaded) on first use by an s3:// target. */
  s3Client(): Promise<S3Client> {
    this.s3 ??=
      this.options.s3Client !== undefined
        ? Promise.resolve(this.options.s3Client)
        : import('../s3/s3-client.js').then(({ createS3Client }) => createS3Client(this.options.s3));
    return this.s3;
  }

  /** The column headers the target declares as it is now (the format reads them); undefined when there is none. */
  private async existingHeader(target: string, jobName: string): Promise<string[] | undefined> {
    const file = await this.storedFile(target);
    try {
      return file === undefined ? undefined : await this.format.readColumns(file, this.options.config);
    } catch (error) {
      throw error instanceof FileTargetUnreadableError ? error.forJob(jobName) : error;
    }
  }

  /** The target as stored now, local, gs:// or s3://; undefined when there is none. */
  private async storedFile(target: string): Promise<StoredFile | undefined> {
    if (isS3Target(target)) {
      const [{ parseS3ObjectUrl }, { s3StoredFile }] = await Promise.all([import('../../config/s3-url.js'), import('../s3/stored-object.js')]);
      const { bucket, key } = parseS3ObjectUrl(target);
      return s3StoredFile(await this.s3Client(), bucket, key);
    }
    if (!isGcsTarget(target)) return localStoredFile(target);
    const [{ parseGcsObjectUrl }, { objectStoredFile }] = await Promise.all([import('../../config/gcs-url.js'), import('./stored-object.js')]);
    const { bucket, object } = parseGcsObjectUrl(target);
    return objectStoredFile((await this.storageClient()).bucket(bucket).file(object));
  }

  /** The manifest beside the target as stored now (untrusted JSON); undefined when there is none or it does not parse. */
  private async storedManifest(target: string): Promise<{ rows?: unknown; bytes?: unknown } | undefined> {
    // Read as any stored file is, so every store (local, gs://, s3://) answers alike.
    const manifest = await this.storedFile(manifestPathOf(target));
    if (manifest === undefined) return undefined;
    const content = await text(manifest.read());
    try {
      return JSON.parse(content) as { rows?: unknown; bytes?: unknown };
    } catch {
      return undefined;
    }
  }

  /**
   * What a file target holds, for the publish guard: the rows of the manifest beside it when that
   * manifest describes it (its bytes are the file's size: the manifest is renamed in right after
   * the file, so one beside a newer file is another run's), else the file itself, counted by its
   * format (CSV: every record read; Parquet: the footer's num_rows). No file: nothing held.
   */
  async holdingOf(target: string): Promise<TargetHolding> {
    const base = { target, effect: 'replace' as const };
    try {
      const file = await this.storedFile(target);
      if (file === undefined) return { ...base, rows: undefined, readFrom: 'no file yet' };
      const manifest = this.options.config.manifest === true ? await this.storedManifest(target) : undefined;
      if (manifest !== undefined && typeof manifest.rows === 'number' && manifest.bytes === (await file.size()))
        return { ...base, rows: manifest.rows, readFrom: 'its manifest' };
      return { ...base, rows: await this.format.countRows(file, this.options.config), readFrom: `the ${this.format.label} file counted` };
    } catch (error) {
      return { ...base, rows: undefined, readFrom: 'unreadable', unreadable: messageOf(error) };
    }
  }

  /**
   * The guard of a writer: what its target holds is read when the writer opens, while the run's
   * heap is small and its pages are still coming (issue 44: counting last night's file after the
   * pages, at the run's highest, added ~45 MB to its peak; gzip and gs:// or s3:// reads leave a
   * stream's buffers behind), and judged as is when the target is unchanged at publish; one
   * replaced meanwhile is read again.
   */
  guardCheck(context: SinkRunContext): GuardCheck {
    const target = this.targetFor(context);
    const settings = this.options.guard;
    if (settings === undefined) return { settings, holding: () => this.holdingOf(target) };
    const atOpen = this.versionOf(target).then(async (version) => ({ version, holding: await this.holdingOf(target) }));
    return {
      settings,
      holding: async () => {
        const early = await atOpen;
        return early.version !== undefined && early.version === (await this.versionOf(target)) ? early.holding : this.holdingOf(target);
      },
    };
  }

  /** The target's version (StoredFile.version), or undefined when there is no file or it cannot be read: then it is read again. */
  private async versionOf(target: string): Promise<string | undefined> {
    try {
      return await (await this.storedFile(target))?.version?.();
    } catch {
      return undefined;
    }
  }

  /** Compares the names the run's file would declare with the existing file's (by name and order: the plan has no types to compare). */
  async plan(context: SinkRunContext): Promise<SinkPlan> {
    const target = this.targetFor(context);
    const existing = await this.existingHeader(target, context.jobName);
    if (existing === undefined) return { sink: this.kind, target, action: 'create', details: [] };
    const headers = this.format.columnNames(context.columns);
    const details = [
      ...headers.filter((header) => !existing.includes(header)).map((header) => `+ ${header}`),
      ...existing.filter((header) => !headers.includes(header)).map((header) => `- ${header}`),
    ];
    if (details.length === 0 && existing.join('\u0000') !== headers.join('\u0000'))
      details.push(`~ column order: ${existing.join(', ')} → ${headers.join(', ')}`);
    return { sink: this.kind, target, action: details.length === 0 ? 'unchanged' : 'change', details };
  }

  async open(context: SinkRunContext): Promise<SinkWriter> {
    const target = this.targetFor(context);
    const { format } = this;
    const { config } = this.options;
    // A fresh encoder per run: a format may keep state across a run's pages. The wrapper is made
    // once the destination is open, so a failed open leaves no stream behind.
    const bytes = {
      format,
      encoder: format.createEncoder(context.columns, config),
      wrap: () => format.wrapper(config),
      columns: context.columns,
      gzip: format.gzipped(config),
    };
    // What a writer to either object store (gs://, s3://) is given; each store adds its client and retries.
    const objectOptions = (): ObjectWriterBaseOptions => ({
      ...bytes,
      contentType: format.contentType(config),
      jobName: context.jobName,
      target,
      runId: context.runId,
      logger: context.logger,
      ...(context.signal ? { signal: context.signal } : {}),
      ...(this.options.stopDeadlineMs !== undefined ? { stopDeadlineMs: this.options.stopDeadlineMs } : {}),
      ...(config.manifest === true ? { manifest: context.window ? { window: context.window } : {} } : {}),
    });
    if (isS3Target(target)) {
      const [{ S3ObjectWriter }, client] = await Promise.all([import('../s3/s3-object-writer.js'), this.s3Client()]);
      const writer = await S3ObjectWriter.open({
        ...objectOptions(),
        client,
        // The tile run's budget unless the settings bring one: a sick bucket and a sick source draw on one allowance.
        retry: {
          ...(context.retryBudget ? { budget: context.retryBudget } : {}),
          ...(this.options.s3?.requestTimeoutMs ? { requestTimeoutMs: this.options.s3.requestTimeoutMs } : {}),
          ...this.options.s3Write,
        },
      });
      return withGuard(writer, this.guardCheck(context));
    }
    if (isGcsTarget(target)) {
      const [{ ObjectWriter }, storage] = await Promise.all([import('./object-writer.js'), this.storageClient()]);
      const writer = await ObjectWriter.open({
        ...objectOptions(),
        storage,
        // The tile run's budget unless the settings bring one: a sick bucket and a sick source draw on one allowance.
        retry: { ...(context.retryBudget ? { budget: context.retryBudget } : {}), ...this.options.gcsWrite },
      });
      return withGuard(writer, this.guardCheck(context));
    }
    const options = {
      ...bytes,
      jobName: context.jobName,
      target,
      tempPath: tempPathFor(target, context.runId),
      logger: context.logger,
      ...(context.signal ? { signal: context.signal } : {}),
      ...(this.options.config.manifest === true
        ? {
            manifest: {
              tempPath: tempPathFor(manifestPathOf(target), context.runId),
              runId: context.runId,
              ...(context.window ? { window: context.window } : {}),
            },
          }
        : {}),
    };
    return withGuard(await LocalFileWriter.open(options), this.guardCheck(context));
  }
}
