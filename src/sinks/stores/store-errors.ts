import type { ErrorCode, FileFormatName, TargetKind } from '../../error-codes.js';
import { TilehouseError } from '../../errors.js';
import { objectStoreUrlsOf } from '../../config/object-store-urls.js';
import { fileSystemFailureCode, fileSystemFailureHint, type FileSystemFailureCode } from '../file-system-failure.js';
import type { FormatNames } from './file-bytes.js';

/** The kind of target a file path or URL names: the store whose URL it is, else a local path. */
export function fileTargetKind(target: string): TargetKind {
  return objectStoreUrlsOf(target)?.name ?? 'local';
}

/**
 * The failures of an object store (gs://, s3://), each with the code it has at every target:
 *
 * - `bucket_not_found`: the bucket does not exist (a typo, another project, account or region);
 * - `permission_denied`: the credentials lack a permission on the bucket, named in the message;
 * - `target_is_directory`: objects exist below `<target>/`, so the target reads as a folder;
 * - `target_changed`: another writer replaced the target while this run wrote (a precondition
 *   failed, and the target, read afterwards, is not this run's object); the run publishes nothing
 *   rather than overwrite it;
 * - `write_failed`: anything else (network, 5xx after retries, a checksum or size mismatch, an
 *   upload session lost after bytes that cannot be produced again); its message says what the
 *   target was seen to hold when the failure was in the publish;
 * - `publish_outcome_unknown`: the publishing call got no answer and the target could not be read
 *   afterwards either.
 */
export type ObjectFailureCode =
  | 'bucket_not_found'
  | 'permission_denied'
  | 'target_is_directory'
  | 'target_changed'
  | 'write_failed'
  | 'publish_outcome_unknown';

/**
 * What an object-store failure names: the job, the format's word and the object's URL, so that
 * the message reads `job j: parquet gs://b/x.parquet: …` as a local file's reads
 * `job j: parquet /data/x.parquet: …`; or a bare URL where the code that failed knows neither (a
 * temp object's upload, a sweep's prefix), which the writer that meets the failure names again
 * (`ObjectStoreError.about`).
 */
export type ObjectTarget = string | { readonly jobName: string; readonly format: string; readonly url: string };

/**
 * A failure of an object store (gs://, s3://): one code per failure whatever the store, the store
 * as `targetKind`, the format as `format` when known. Each store's folder subclasses it.
 */
export abstract class ObjectStoreError<Code extends ErrorCode = ObjectFailureCode> extends TilehouseError {
  /** The object's URL. */
  readonly target: string;
  override readonly format: FileFormatName | undefined = undefined;
  /** The job and format the message names; undefined for a bare URL. */
  readonly named: Exclude<ObjectTarget, string> | undefined;

  constructor(
    readonly code: Code,
    target: ObjectTarget,
    message: string,
    cause?: unknown,
  ) {
    const subject = typeof target === 'string' ? target : `job ${target.jobName}: ${target.format} ${target.url}`;
    super(`${subject}: ${message}`, cause === undefined ? undefined : { cause });
    this.target = typeof target === 'string' ? target : target.url;
    this.named = typeof target === 'string' ? undefined : target;
    if (typeof target !== 'string') this.format = target.format as FileFormatName;
  }
}

/**
 * A local file system's failure: the code says which known condition it was (`disk_full`,
 * `permission_denied`, `target_is_directory`) and is the class's own otherwise; the message ends
 * with what to do about a known one.
 */
abstract class LocalFileError<Own extends ErrorCode> extends TilehouseError {
  readonly code: FileSystemFailureCode | Own;
  override readonly targetKind = 'local';
  override readonly format: FileFormatName;

  constructor(format: FormatNames, errno: unknown, own: Own, message: (hint: string) => string, options?: { cause?: unknown }) {
    const code = fileSystemFailureCode(errno, own);
    const hint = fileSystemFailureHint(code);
    super(message(hint ? ` (${hint})` : ''), options);
    this.code = code;
    this.format = format.name as FileFormatName;
  }
}

/** Writing, syncing or publishing a local file failed (`write_failed` unless a known condition); the previous file is left as it was. */
export class FileWriteError extends LocalFileError<'write_failed'> {
  constructor(
    format: FormatNames,
    readonly jobName: string,
    readonly target: string,
    readonly operation: string,
    cause: unknown,
  ) {
    const detail = cause instanceof Error ? cause.message : String(cause);
    super(format, cause, 'write_failed', (hint) => `job ${jobName}: ${format.name} ${target}: ${operation} failed: ${detail}${hint}`, { cause });
  }
}

/**
 * The directory a file target goes below cannot be written, found before the run's first export
 * request: `permission_denied` (a read-only or foreign directory, the same code a write would
 * fail with), or `target_unwritable` (a regular file where a directory should be).
 */
export class FileTargetUnwritableError extends LocalFileError<'target_unwritable'> {
  constructor(
    format: FormatNames,
    readonly jobName: string,
    readonly directory: string,
    unwritable: { reason: string; errno: string },
  ) {
    super(
      format,
      { code: unwritable.errno },
      'target_unwritable',
      (hint) => `job ${jobName}: ${format.name} ${directory}: ${format.label} files cannot be written there: ${unwritable.reason}${hint}; nothing was fetched`,
    );
  }
}

/** A writer was used after commit or abort: a pipeline bug, never a data problem (`internal_error`). */
export class FileWriterClosedError extends TilehouseError {
  readonly code = 'internal_error';
  override readonly targetKind: TargetKind;
  override readonly format: FileFormatName;

  constructor(
    format: FormatNames,
    readonly jobName: string,
    readonly target: string,
    readonly operation: string,
    readonly state: string,
  ) {
    super(`job ${jobName}: ${format.name} ${target}: ${operation} called on a writer that is ${state}`);
    this.targetKind = fileTargetKind(target);
    this.format = format.name as FileFormatName;
  }
}
