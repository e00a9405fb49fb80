import { ObjectStoreError, type ObjectFailureCode, type ObjectTarget } from '../store-errors.js';
import { googleCredentialsFailureIn, type GoogleCredentialsError } from '../../google/credential-errors.js';

/**
 * Cloud Storage failures a user can cause and fix, each with the code the same failure has at
 * every target (`ObjectFailureCode`, `targetKind: 'gcs'`), plus the run's Google identity failing
 * (sinks/google/credential-errors.ts), whichever request met it.
 */
export type GcsFailureCode = ObjectFailureCode | GoogleCredentialsError['code'];

export class GcsError extends ObjectStoreError<GcsFailureCode> {
  override readonly targetKind = 'gcs';
}

/**
 * A rewrite onto the target failed without an answer that says what it did, and reading the target
 * afterwards failed too: the target may hold this run's object or the previous one. Kept as the
 * tile's error after a stop, and never reported as "previous run still in" (`publishOutcomeUnknown`).
 */
export class GcsPublishOutcomeUnknownError extends GcsError {
  readonly publishOutcomeUnknown = true as const;

  constructor(target: ObjectTarget, message: string, cause?: unknown) {
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
    target: ObjectTarget;
    bucket: string;
    operation: string;
    permission: string /** A listing: its 404 can only be the bucket. */;
    notFoundIsBucket?: boolean;
  },
): GcsError {
  // Met deep in an upload, it names only the temp object: named again here with the job, format and target.
  if (error instanceof GcsError)
    return error.named !== undefined ? error : new GcsError(error.code, where.target, `${where.operation} failed: ${error.message}`, error);
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
