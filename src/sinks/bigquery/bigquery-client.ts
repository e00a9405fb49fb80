import { BigQuery, type BigQueryOptions } from '@google-cloud/bigquery';
import { sharedGoogleCredentials } from '../google/google-credentials.js';

/**
 * The origin a local BigQuery stand-in (goccy/bigquery-emulator) answers on, when
 * `BIGQUERY_EMULATOR_HOST` names one (`http://host:port`; a bare `host:port` is taken as http);
 * undefined for real BigQuery.
 */
export function bigqueryEmulatorOrigin(env: NodeJS.ProcessEnv): string | undefined {
  const value = env.BIGQUERY_EMULATOR_HOST?.trim();
  if (value === undefined || value === '') return undefined;
  const withScheme = /^[a-z]+:\/\//i.test(value) ? value : `http://${value}`;
  try {
    return new URL(withScheme).origin;
  } catch {
    throw new Error(`BIGQUERY_EMULATOR_HOST=${JSON.stringify(value)} is not a URL (expected http://host:port)`);
  }
}

/**
 * What google-auth-library's PassThroughClient does (no credentials, empty headers), without
 * importing a package tilehouse does not depend on directly: GoogleAuth asks a given client only
 * for its request headers.
 */
const ANONYMOUS = { getRequestHeaders: async () => new Headers(), getAccessToken: async () => ({}) } as unknown as BigQueryOptions['authClient'];

/** Where a production client goes and how long it waits for credentials (the environment config). */
export interface BigQueryClientSettings {
  /** `sinks.bigquery.apiEndpoint`: a regional or Private Service Connect endpoint, a proxy; default BigQuery's. */
  apiEndpoint?: string | undefined;
  /** `googleCredentialsWaitMs`. */
  credentialsWaitMs?: number | undefined;
}

/**
 * The one BigQuery client of a process: Application Default Credentials (Workload Identity on
 * GKE, a key file, impersonation) through the process's one `GoogleCredentials`, sent to
 * `sinks.bigquery.apiEndpoint` when the config names one; or with `BIGQUERY_EMULATOR_HOST` (local
 * work, which wins over the config) the emulator, without credentials. The client's own retries
 * are off so that `withRetry` is the single, bounded retry policy; two nested policies would
 * multiply the attempts and hide them from the logs.
 *
 * The Node client 8.x takes `BIGQUERY_EMULATOR_HOST` verbatim as the base URL of its JSON calls
 * (which need `<origin>/bigquery/v2`) and derives its upload URL from `apiEndpoint` (which needs
 * the bare origin): the variable is hidden while the client is made and the origin passed as
 * `apiEndpoint`, the one combination where both work (as storage-client.ts does for Cloud Storage).
 */
export function createBigQueryClient(projectId: string | undefined, env: NodeJS.ProcessEnv = process.env, settings: BigQueryClientSettings = {}): BigQuery {
  const origin = bigqueryEmulatorOrigin(env);
  if (origin === undefined) {
    const credentials = sharedGoogleCredentials({ ...(settings.credentialsWaitMs ? { waitMs: settings.credentialsWaitMs } : {}) }, env);
    return new BigQuery({
      ...(projectId ? { projectId } : {}),
      ...(settings.apiEndpoint ? { apiEndpoint: settings.apiEndpoint } : {}),
      authClient: credentials.libraryClient as unknown as BigQueryOptions['authClient'],
      retryOptions: { autoRetry: false },
    });
  }
  const previous = process.env.BIGQUERY_EMULATOR_HOST;
  delete process.env.BIGQUERY_EMULATOR_HOST;
  try {
    // An emulator has no project to discover and takes no credentials: without a project and an
    // auth client the client looks for ADC (seconds of metadata-server timeouts off GCP), and a
    // load upload without auth headers throws outside any promise (teeny-request), killing the process.
    return new BigQuery({
      projectId: projectId ?? env.GOOGLE_CLOUD_PROJECT ?? 'local-emulator',
      apiEndpoint: origin,
      authClient: ANONYMOUS,
      retryOptions: { autoRetry: false },
    });
  } finally {
    if (previous !== undefined) process.env.BIGQUERY_EMULATOR_HOST = previous;
  }
}
