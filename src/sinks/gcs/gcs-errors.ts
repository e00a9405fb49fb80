import type { FileFormatName } from '../../error-codes.js';
import { TilehouseError } from '../../errors.js';
import type { ObjectFailureCode } from '../files/file-errors.js';
import { googleCredentialsFailureIn, type GoogleCredentialsError } from '../google/credential-errors.js';

/**
 * Cloud Storage failures a user can cause and fix, each with the code the same failure has at
 * every target (`ObjectFailureCode`, `targetKind: 'gcs'`), plus the run's Google identity failing
 * (sinks/google/credential-errors.ts), whichever request met it.
 */
export type GcsFailureCode = ObjectFailureCode | GoogleCredentialsError['code'];

/**
 * What a failure names: the object's URL, and the word of the format written there (`parquet`,
 * `csv`) when the caller knows it, so the message reads `parquet gs://…` as a local file's
 * reads `parquet /data/…`. A bare URL (a temp object, a sweep's prefix) is named as it is.
 */
export type GcsTarget = string | { readonly format: string; readonly url: string };

export class GcsError extends TilehouseError {
  /** The `gs://` URL the failure concerns. */
  readonly target: string;
  override readonly targetKind = 'gcs';
  override readonly format: FileFormatName | undefined = undefined;

  constructor(
    readonly code: GcsFailureCode,
    target: GcsTarget,
    message: string,
    cause?: unknown,
  ) {
    const subject = typeof target === 'string' ? target : `${target.format} ${target.url}`;
    super(`${subject}: ${message}`, cause === undefined ? undefined : { cause });
    this.target = typeof target === 'string' ? target : target.url;
    if (typeof target !== 'string') this.format = target.format as FileFormatName;
  }
}

/**
 * A rewrite onto the target failed without an answer that says what it did, and reading the target
 * afterwards failed too: the target may hold this run's object or the previous one. Kept as the
 * tile's error after a stop, and never reported as "previous run still in" (`publishOutcomeUnknown`).
 */
export class GcsPublishOutcomeUnknownError extends GcsError {
  readonly publishOutcomeUnknown = true as const;

  constructor(target: GcsTarget, message: string, cause?: unknown) {
    super('publish_outcome_unknown', target, message, cause);
  }
}

/** The HTTP status of a client error (ApiError.code, or a gaxios response). */
export function statusOf(error: unknown): number | undefined {
  const candidate = error as { code?: unknown; status?: unknown; response?: { status?: unknown } } | null;
  for (const value of [candidate?.code, candidate?.status, candidate?.response?.status]) {
    if (typeof value === 'number') return value;
  }
  return undefined;
}

/**
 * A client error as one of the stable failures. `permission` is the IAM permission the failed
 * call needs, so a 403 says exactly what to grant (Cloud Storage's own 403 message names the
 * principal and usually the permission; ours adds the bucket and the step).
 */
export function gcsFailure(
  error: unknown,
  where: {
    target: GcsTarget;
    bucket: string;
    operation: string;
    permission: string /** A listing: its 404 can only be the bucket. */;
    notFoundIsBucket?: boolean;
  },
): GcsError {
  if (error instanceof GcsError) return error;
  const status = statusOf(error);
  const detail = error instanceof Error ? error.message : String(error);
  const credentials = googleCredentialsFailureIn(error);
  if (credentials !== undefined) return new GcsError(credentials.code, where.target, `${where.operation} failed: ${credentials.message}`, error);
  if (status === 403 || status === 401) {
    return new GcsError(
      'permission_denied',
      where.target,
      `${where.operation} failed: permission ${where.permission} is missing on bucket ${where.bucket} (grant roles/storage.objectUser on the bucket; see docs/cloud-storage.md): ${detail}`,
      error,
    );
  }
  if (status === 404 && (where.notFoundIsBucket === true || /bucket/i.test(detail))) {
    return new GcsError(
      'bucket_not_found',
      where.target,
      `${where.operation} failed: bucket ${where.bucket} does not exist (or is in a project these credentials cannot see): ${detail}`,
      error,
    );
  }
  return new GcsError('write_failed', where.target, `${where.operation} failed: ${detail}`, error);
}
