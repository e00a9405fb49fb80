import type { Storage } from '@google-cloud/storage';
import type { Logger } from '../../../log.js';
import { activeGoogleCredentials, lendLoggerToGoogleCredentials, runsAsNote, withFreshTokenOn401 } from '../../google/google-credentials.js';
import { GcsError, gcsFailure, statusOf } from './gcs-errors.js';

/** What a gs:// file sink's run does to its bucket (see docs/cloud-storage.md, "Credentials and IAM"). */
export const REQUIRED_PERMISSIONS = ['storage.objects.create', 'storage.objects.delete', 'storage.objects.get', 'storage.objects.list'] as const;

/**
 * Whether a run could write below `prefix` of `bucket`, found without writing anything: a listing
 * (the bucket exists, we may list it), then `testIamPermissions` for the rest, which any caller
 * may ask of any bucket it can see. Returns a note for the operator; throws bucket_not_found
 * or permission_denied (naming every missing permission).
 */
export async function checkBucketWritable(
  storage: Storage,
  bucketName: string,
  prefix: string,
  named: { jobName: string; format: string },
  logger?: Logger,
): Promise<string> {
  if (logger !== undefined) lendLoggerToGoogleCredentials(logger);
  const url = `gs://${bucketName}/${prefix}`;
  const where = { ...named, url };
  const bucket = storage.bucket(bucketName);
  try {
    await withFreshTokenOn401(`listing ${url}`, () => bucket.getFiles({ prefix, maxResults: 1, autoPaginate: false }));
  } catch (error) {
    throw gcsFailure(await namingPrincipal(error), {
      target: where,
      bucket: bucketName,
      operation: 'listing the bucket',
      permission: 'storage.objects.list',
      notFoundIsBucket: true,
    });
  }
  let granted: Record<string, boolean>;
  try {
    [granted] = await withFreshTokenOn401(`testing permissions on ${url}`, () => bucket.iam.testPermissions([...REQUIRED_PERMISSIONS]));
  } catch (error) {
    // The listing proved the bucket exists, so a 404 here is an endpoint without IAM (an
    // emulator such as fake-gcs-server): say the permissions were not tested rather than guess.
    if (statusOf(error) === 404) return `${url}: bucket found; permissions not tested (this endpoint has no IAM)${await runsAsNote()}`;
    throw gcsFailure(await namingPrincipal(error), {
      target: where,
      bucket: bucketName,
      operation: 'testing permissions',
      permission: 'storage.buckets.getIamPolicy',
    });
  }
  const missing = REQUIRED_PERMISSIONS.filter((permission) => granted[permission] !== true);
  if (missing.length > 0) {
    throw new GcsError(
      'permission_denied',
      where,
      `missing ${missing.join(', ')} on bucket ${bucketName}${await runsAs()} (grant roles/storage.objectUser on the bucket)`,
    );
  }
  return `${url}: writable${await runsAsNote()}`;
}

/** ` for service account x@p.iam.gserviceaccount.com` when the run has Google credentials (none with an emulator). */
async function runsAs(): Promise<string> {
  const credentials = activeGoogleCredentials();
  return credentials === undefined ? '' : ` for ${await credentials.principal()}`;
}

/** A 403's message with the principal it was refused to, so the grant can be written from it alone. */
async function namingPrincipal(error: unknown): Promise<unknown> {
  if (statusOf(error) !== 403 || !(error instanceof Error)) return error;
  const principal = await runsAs();
  if (principal !== '') error.message = `${error.message} (refused${principal})`;
  return error;
}
