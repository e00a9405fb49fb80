// src/sinks/stores/gcs/, module by module (ARCHITECTURE.md gives the folder one paragraph): `index.ts`
// (this module: what the registry knows without loading the rest) and `gcs-store.ts` (the store, loaded for
// gs:// targets only); `gcs-object-writer.ts` (`GcsObjectWriter`: the rows and the manifest to owner-tagged
// temp objects, publish = one rewrite under `ifGenerationMatch`, `leftBehind()` naming the temp objects it
// could not remove) driving Cloud Storage's protocol in `object-publish.ts` (the target's generation read at
// open, the temp object's upload wired, a failed or unanswered rewrite judged by reading the target, the
// temp objects deleted after publish or a stop, within the cleanup deadline); `resumable-upload.ts` (one kept
// chunk, resume from the persisted offset); `gcs-http.ts` (the write path's requests, sent with the client's
// credentials and retried by src/retry.ts); `check-bucket.ts` (can a run write below a prefix, found without
// writing; the permissions a run needs); `storage-client.ts` (ADC, `STORAGE_EMULATOR_HOST` mapped onto the
// client's endpoints); `gcs-errors.ts`; `temp-objects.ts` (owner metadata, the sweep of temp objects by the
// temp-file rule); `gcs-stored-file.ts` (range reads for a format); `gcs-window-state.ts` (a window held: the
// manifest describes the object); `gcs-table-files.ts` (a table format's files: each a resumable upload straight to
// its fresh name, deleted again when its upload may have landed but failed; listed page by page). `gs://` URLs are checked by src/config/gcs-url.ts.

import type { Storage } from '@google-cloud/storage';
import { gcsUrls } from '../../../config/gcs-url.js';
import { bucketObjectDataset, type ObjectStoreKind } from '../object-store.js';
import type { GcsWriteSettings } from './object-publish.js';
import type { StorageClientSettings } from './storage-client.js';

declare module '../object-store.js' {
  interface StoreSeams {
    /** The Cloud Storage client for gs:// targets; by default one is made on first use (Application Default Credentials, or STORAGE_EMULATOR_HOST). */
    storageClient?: Storage;
    /** gs:// targets: tilehouse's retry of the upload and publish requests, the request timeout, the chunk size (defaults in gcs-http.ts). */
    gcsWrite?: GcsWriteSettings;
  }
  interface StoreOptions {
    /** gs:// targets: `sinks.gcs.apiEndpoint` and `googleCredentialsWaitMs` of the environment. */
    gcsClient?: StorageClientSettings;
  }
}

/**
 * Cloud Storage as a store (`gs://bucket/object`): a run's object is a resumable upload to a
 * temp object, published by a rewrite under a generation precondition (gcs-object-writer.ts,
 * object-publish.ts). Loaded, with @google-cloud/storage, only for gs:// targets.
 */
export const gcsStoreKind: ObjectStoreKind = {
  name: 'gcs',
  claims: gcsUrls.looksLike,
  lineageDataset: (location) => bucketObjectDataset(gcsUrls, location),
  onThisMachine: false,
  // A rewrite is a remote call, likelier to fail than a rename and less than a BigQuery copy job: between the two.
  publishRank: 5,
  optionsFrom: (environment) => ({ gcsClient: { apiEndpoint: environment.sinks.gcs?.apiEndpoint, credentialsWaitMs: environment.googleCredentialsWaitMs } }),
  load: async (options) => (await import('./gcs-store.js')).gcsStore(options),
};
