import type { Storage } from '@google-cloud/storage';
import { gcsUrls } from '../../../config/gcs-url.js';
import type { ObjectStoreKind } from '../object-store.js';
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
  onThisMachine: false,
  // A rewrite is a remote call, likelier to fail than a rename and less than a BigQuery copy job: between the two.
  publishRank: 5,
  optionsFrom: (environment) => ({ gcsClient: { apiEndpoint: environment.sinks.gcs?.apiEndpoint, credentialsWaitMs: environment.googleCredentialsWaitMs } }),
  load: async (options) => (await import('./gcs-store.js')).gcsStore(options),
};
