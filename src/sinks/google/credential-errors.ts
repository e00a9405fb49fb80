import { TilehouseError } from '../../errors.js';

/**
 * The two ways a run's Google identity fails, each with a stable code (exit 1, a tile failed):
 *
 * - `google_credentials_unavailable`: no token could be had (no Application Default Credentials
 *   at all, a key file that cannot be read, the metadata server of Workload Identity or a token
 *   endpoint refusing or failing past `googleCredentialsWaitMs`);
 * - `google_credentials_rejected`: a token was had, and Google refused the identity: 401 from
 *   BigQuery or Cloud Storage again after a fresh token, or the token endpoint refusing the
 *   credentials (a deleted key, a disabled service account).
 *
 * Neither is a `bigquery_*` nor a `gcs_*` failure: the same identity serves every Google sink,
 * and the fix is on the identity (its binding, its key), not on a dataset or bucket.
 */
export abstract class GoogleCredentialsError extends TilehouseError {
  abstract override readonly code: 'google_credentials_unavailable' | 'google_credentials_rejected';
}

export class GoogleCredentialsUnavailableError extends GoogleCredentialsError {
  readonly code = 'google_credentials_unavailable' as const;
}

export class GoogleCredentialsRejectedError extends GoogleCredentialsError {
  readonly code = 'google_credentials_rejected' as const;
}

/** The credentials failure an error is or was caused by (a client library or a tilehouse wrapper around it). */
export function googleCredentialsFailureIn(error: unknown): GoogleCredentialsError | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 8 && current !== undefined && current !== null; depth++) {
    if (current instanceof GoogleCredentialsError) return current;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}
