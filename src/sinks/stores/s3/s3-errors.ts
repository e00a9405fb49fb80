import { ObjectStoreError, type ObjectTarget } from '../store-errors.js';

/** S3 failures a user can cause and fix, each with the code the same failure has at every target (`targetKind: 's3'`). */
export class S3Error extends ObjectStoreError {
  override readonly targetKind = 's3';
}

/** A publish whose outcome no one could read: the tile's error is kept as "unknown", never "nothing published". */
export class S3PublishOutcomeUnknownError extends S3Error {
  readonly publishOutcomeUnknown = true as const;

  constructor(target: ObjectTarget, message: string, cause?: unknown) {
    super('publish_outcome_unknown', target, message, cause);
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
    target: ObjectTarget;
    bucket: string;
    operation: string;
    action: string /** A listing or bucket call: its 404 can only be the bucket. */;
    notFoundIsBucket?: boolean;
  },
): S3Error {
  if (error instanceof S3Error)
    return error.named !== undefined ? error : new S3Error(error.code, where.target, `${where.operation} failed: ${error.message}`, error);
  const status = s3StatusOf(error);
  const code = s3CodeOf(error);
  const detail = `${code !== undefined && code !== 'Error' ? `${code}: ` : ''}${error instanceof Error ? error.message : String(error)}`;
  if (status === 403 || status === 401) {
    return new S3Error(
      'permission_denied',
      where.target,
      `${where.operation} failed: ${where.action} is not allowed on bucket ${where.bucket} for these credentials (grant it in the role's policy; see docs/s3.md): ${detail}`,
      error,
    );
  }
  if (code === 'NoSuchBucket' || (status === 404 && where.notFoundIsBucket === true)) {
    return new S3Error(
      'bucket_not_found',
      where.target,
      `${where.operation} failed: bucket ${where.bucket} does not exist (or is in another account or region): ${detail}`,
      error,
    );
  }
  return new S3Error('write_failed', where.target, `${where.operation} failed: ${detail}`, error);
}
