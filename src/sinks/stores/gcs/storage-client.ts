import type { Storage, StorageOptions } from '@google-cloud/storage';
import { sharedGoogleCredentials } from '../../google/google-credentials.js';

/**
 * Where the client should send requests when `STORAGE_EMULATOR_HOST` names a local stand-in
 * (fake-gcs-server): its origin, or undefined for real Cloud Storage.
 *
 * The variable's conventional form (Go and Python clients, fake-gcs-server's docs) is
 * `http://host:port`; some setups write `http://host:port/storage/v1`; a bare `host:port` is
 * taken as http. The Node client 8.x uses the value as is for two different things: JSON API
 * calls go to `<value>/b/…` (so they need the `/storage/v1` form) while uploads go to
 * `<apiEndpoint>/upload/storage/v1/…` (so they need the bare origin). Neither form alone works
 * for both (measured; see docs/emulators.md, "What fake-gcs-server could not show").
 */
export function emulatorOrigin(env: NodeJS.ProcessEnv): string | undefined {
  const value = env.STORAGE_EMULATOR_HOST?.trim();
  if (value === undefined || value === '') return undefined;
  const withScheme = /^[a-z]+:\/\//i.test(value) ? value : `http://${value}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    throw new Error(`STORAGE_EMULATOR_HOST=${JSON.stringify(value)} is not a URL (expected http://host:port)`);
  }
  return url.origin;
}

/** Where a production client goes and how long it waits for credentials (the environment config). */
export interface StorageClientSettings {
  /** `sinks.gcs.apiEndpoint`: a regional or Private Service Connect endpoint, a proxy; default Cloud Storage's. */
  apiEndpoint?: string | undefined;
  /** `googleCredentialsWaitMs`. */
  credentialsWaitMs?: number | undefined;
}

/**
 * Client options: Application Default Credentials (Workload Identity on GKE, a key file,
 * impersonation) through the process's one `GoogleCredentials`, sent to `sinks.gcs.apiEndpoint`
 * when the config names one; the emulator's origin, without credentials, when
 * `STORAGE_EMULATOR_HOST` is set (local work; it wins over the config).
 */
export function storageOptionsFor(env: NodeJS.ProcessEnv, settings: StorageClientSettings = {}): StorageOptions {
  const origin = emulatorOrigin(env);
  // An emulator has no project to discover: without one the client would look for ADC (and the
  // metadata server) before its first bucket-level call, seconds of timeouts off GCP.
  if (origin !== undefined) return { apiEndpoint: origin, projectId: env.GOOGLE_CLOUD_PROJECT ?? 'local-emulator' };
  const credentials = sharedGoogleCredentials({ ...(settings.credentialsWaitMs ? { waitMs: settings.credentialsWaitMs } : {}) }, env);
  return {
    authClient: credentials.libraryClient as unknown as StorageOptions['authClient'],
    // Any apiEndpoint but the default makes the client a "custom endpoint" it sends no
    // credentials to unless told: a regional endpoint or a proxy needs them as much as the default.
    ...(settings.apiEndpoint ? { apiEndpoint: settings.apiEndpoint, useAuthWithCustomEndpoint: true } : {}),
  };
}

/**
 * A client for the given environment. Loaded on demand, as the BigQuery client is: the storage
 * client adds to every start, which runs writing only local CSV files should not pay.
 *
 * With an emulator, the client is constructed while `STORAGE_EMULATOR_HOST` holds the
 * `/storage/v1` form and `apiEndpoint` the origin: the one combination where both JSON calls and
 * uploads reach the emulator. The constructor reads the variable once (8.x: `baseUrl`), so it is
 * set for that synchronous call only and restored at once.
 */
export async function createStorageClient(env: NodeJS.ProcessEnv = process.env, settings: StorageClientSettings = {}): Promise<Storage> {
  const { Storage } = await import('@google-cloud/storage');
  const origin = emulatorOrigin(env);
  if (origin === undefined) return new Storage(storageOptionsFor(env, settings));
  const previous = process.env.STORAGE_EMULATOR_HOST;
  process.env.STORAGE_EMULATOR_HOST = `${origin}/storage/v1`;
  try {
    return new Storage(storageOptionsFor(env));
  } finally {
    if (previous === undefined) delete process.env.STORAGE_EMULATOR_HOST;
    else process.env.STORAGE_EMULATOR_HOST = previous;
  }
}
