import { TilehouseError } from '../../errors.js';

/**
 * S3 failures a user can cause and fix, each with a stable code (the gs:// codes' counterparts):
 *
 * - `s3_bucket_not_found`: `NoSuchBucket` (a typo, another account or region);
 * - `s3_permission_denied`: 403 (`AccessDenied`, an expired or missing credential): the step and
 *   the IAM action it needs are named;
 * - `s3_target_is_directory`: objects exist below `<target>/`, so the target reads as a folder;
 * - `s3_target_changed`: another writer replaced the target while this run wrote (the publishing
 *   copy's `If-Match` / `If-None-Match` failed, 412, and the target, read afterwards, is not this
 *   run's object); the run publishes nothing rather than overwrite it;
 * - `s3_write_failed`: anything else (network, 5xx after retries, an upload that came out the
 *   wrong size); for a failed publish its message says what the target was seen to hold;
 * - `s3_publish_outcome_unknown`: the publishing copy got no answer and the target could not be
 *   read afterwards either.
 */
export type S3FailureCode =
  | 's3_bucket_not_found'
  | 's3_permission_denied'
  | 's3_target_is_directory'
  | 's3_target_changed'
  | 's3_write_failed'
  | 's3_publish_outcome_unknown';

export class S3Error extends TilehouseError {
  constructor(
    readonly code: S3FailureCode,
    readonly target: string,
    message: string,
    cause?: unknown,
  ) {
    super(`${target}: ${message}`, cause === undefined ? undefined : { cause });
  }
}

/** A publish whose outcome no one could read: the tile's error is kept as "unknown", never "nothing published". */
export class S3PublishOutcomeUnknownError extends S3Error {
  readonly publishOutcomeUnknown = true as const;

  constructor(target: string, message: string, cause?: unknown) {
    super('s3_publish_outcome_unknown', target, message, cause);
  }
}

/** What the AWS SDK v3 says about a failed call. */
export interface S3ErrorShape {
  name?: string;
  Code?: string;
  message?: string;
  $metadata?: { httpStatusCode?: number };
}

/** The HTTP status of an SDK error; undefined for a network failure, a timeout or anything else. */
export function s3StatusOf(error: unknown): number | undefined {
  const status = (error as S3ErrorShape | null)?.$metadata?.httpStatusCode;
  return typeof status === 'number' ? status : undefined;
}

/** S3's error code (`SlowDown`, `NoSuchBucket`...), else the error's name. */
export function s3CodeOf(error: unknown): string | undefined {
  const shape = error as S3ErrorShape | null;
  return shape?.Code ?? shape?.name;
}

/**
 * A failed call as one of the stable failures. `action` is the IAM action the call needs, so a 403
 * says exactly what to grant.
 */
export function s3Failure(
  error: unknown,
  where: {
    target: string;
    bucket: string;
    operation: string;
    action: string /** A listing or bucket call: its 404 can only be the bucket. */;
    notFoundIsBucket?: boolean;
  },
): S3Error {
  if (error instanceof S3Error) return error;
  const status = s3StatusOf(error);
  const code = s3CodeOf(error);
  const detail = `${code !== undefined && code !== 'Error' ? `${code}: ` : ''}${error instanceof Error ? error.message : String(error)}`;
  if (status === 403 || status === 401) {
    return new S3Error(
      's3_permission_denied',
      where.target,
      `${where.operation} failed: ${where.action} is not allowed on bucket ${where.bucket} for these credentials (grant it in the role's policy; see docs/s3.md): ${detail}`,
      error,
    );
  }
  if (code === 'NoSuchBucket' || (status === 404 && where.notFoundIsBucket === true)) {
    return new S3Error(
      's3_bucket_not_found',
      where.target,
      `${where.operation} failed: bucket ${where.bucket} does not exist (or is in another account or region): ${detail}`,
      error,
    );
  }
  return new S3Error('s3_write_failed', where.target, `${where.operation} failed: ${detail}`, error);
}
