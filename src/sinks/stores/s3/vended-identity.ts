import type { S3ClientConfig } from '@aws-sdk/client-s3';
import type { VendedStorage } from '../object-store.js';
import { S3Error } from './s3-errors.js';

/** The SDK's credential provider, as the client's configuration takes it. */
type CredentialProvider = Extract<NonNullable<S3ClientConfig['credentials']>, (...args: never[]) => unknown>;

/**
 * Vended credentials as the AWS SDK's credential provider: the keys Iceberg's S3FileIO reads from
 * a catalog's properties (`s3.access-key-id`, `s3.secret-access-key`, `s3.session-token`), with
 * `s3.session-token-expires-at-ms` as the identity's expiration. The SDK asks again once fewer than
 * five minutes of an identity are left (and then on every request), and `current()` renews them
 * when they are due, so a run that outlives its keys signs its next request with new ones.
 */
export function vendedS3Credentials(vended: VendedStorage): CredentialProvider {
  return async () => {
    const properties = await vended.current();
    const accessKeyId = properties['s3.access-key-id'];
    const secretAccessKey = properties['s3.secret-access-key'];
    if (accessKeyId === undefined || secretAccessKey === undefined)
      throw new S3Error(
        'permission_denied',
        vended.prefix,
        `the catalog vended credentials for ${vended.prefix} without S3 keys (s3.access-key-id and s3.secret-access-key): ${Object.keys(properties).sort().join(', ')}`,
      );
    const sessionToken = properties['s3.session-token'];
    const expires = Number(properties['s3.session-token-expires-at-ms']);
    return {
      accessKeyId,
      secretAccessKey,
      ...(sessionToken === undefined ? {} : { sessionToken }),
      ...(Number.isFinite(expires) && expires > 0 ? { expiration: new Date(expires) } : {}),
    };
  };
}
