// src/sinks/stores/s3/, module by module (ARCHITECTURE.md gives the folder one paragraph): `index.ts`
// (this module: what the registry knows without loading the rest) and `s3-store.ts` (the store, loaded with
// the AWS SDK for s3:// targets only); `s3-object-writer.ts` (a `FileStreamWriter`: the rows to an
// owner-tagged temp key, publish = one `CopyObject` under `If-Match` the ETag seen at open or
// `If-None-Match: *`, a lost answer judged by reading the target, `leftBehind()`); `temp-upload.ts` (one
// PutObject, or a multipart upload of 5 MiB parts with Content-MD5, one in flight while the next fills,
// aborted on failure); `s3-requests.ts` (every request with its timeout, retried by src/retry.ts: 5xx
// SlowDown/InternalError, 409 ConditionalRequestConflict, no answer); `s3-client.ts` (the client from
// `sinks.s3`: credentials from the AWS chain, the SDK's own retry off); `s3-errors.ts`; `check-bucket.ts`
// (the preflight); `temp-keys.ts` (owner metadata; the sweep of temp objects and incomplete multipart
// uploads by the temp-file rule); `s3-stored-file.ts` (range reads for a format); `s3-window-state.ts` (a
// window held: the manifest describes the object); `s3-table-files.ts` (a table format's files: each one PutObject or
// multipart upload straight to its fresh key, aborted or deleted on failure; listed by ListObjectsV2 page by page, and
// unfinished multipart uploads begun before a cutoff aborted; below a prefix a table's catalog vended credentials
// for, through a client of that prefix signing with them: `vended-identity.ts`). `s3://` URLs are checked by
// src/config/s3-url.ts.

import type { S3Client } from '@aws-sdk/client-s3';
import { s3Urls } from '../../../config/s3-url.js';
import { bucketObjectDataset, type ObjectStoreKind } from '../object-store.js';
import type { S3Settings } from './s3-client.js';
import type { S3WriteSettings } from './s3-object-writer.js';

declare module '../object-store.js' {
  interface StoreSeams {
    /** The S3 client for s3:// targets; by default one is made from `s3` on first use (the AWS credential chain). */
    s3Client?: S3Client;
    /** s3:// targets: tilehouse's retry of the upload and publish requests, and the part size (defaults in s3-requests.ts). */
    s3Write?: S3WriteSettings;
  }
  interface StoreOptions {
    /** The environment's `sinks.s3` (region, endpoint, path style, request timeout). */
    s3?: S3Settings;
  }
}

/** IRSA (IAM roles for service accounts, EKS): the pods' service account names the role they assume. */
const IRSA_ROLE_ANNOTATION = 'eks.amazonaws.com/role-arn';
const IRSA_ROLE_PLACEHOLDER = 'arn:aws:iam::ACCOUNT_ID:role/tilehouse';

/**
 * Amazon S3 and S3-compatible stores as a store (`s3://bucket/key`): a run's object is an upload
 * to a temp key, published by a conditional CopyObject (s3-object-writer.ts). Loaded, with the
 * AWS SDK, only for s3:// targets.
 */
export const s3StoreKind: ObjectStoreKind = {
  name: 's3',
  claims: s3Urls.looksLike,
  lineageDataset: (location) => bucketObjectDataset(s3Urls, location),
  onThisMachine: false,
  // A copy is a remote call, likelier to fail than a rename and less than a BigQuery copy job: between the two.
  publishRank: 5,
  optionsFrom: (environment) => (environment.sinks?.s3 !== undefined ? { s3: environment.sinks.s3 } : {}),
  // Its credentials come from IRSA on EKS: the role the service account maps to.
  serviceAccountAnnotations: () => ({ [IRSA_ROLE_ANNOTATION]: IRSA_ROLE_PLACEHOLDER }),
  load: async (options) => (await import('./s3-store.js')).s3Store(options),
};
