import { randomUUID } from 'node:crypto';
import { BigQuery } from '@google-cloud/bigquery';
import { PassThroughClient } from 'google-auth-library';
import { describe, inject } from 'vitest';

export interface EmulatorEndpoint {
  apiEndpoint: string;
  projectId: string;
}

/**
 * The emulator of this test run, or null when it is absent and skipping is allowed. Under CI a
 * missing emulator fails (global setup already refuses to start; this catches other entry points).
 */
export function emulatorOrSkip(): EmulatorEndpoint | null {
  const endpoint = inject('bigqueryEmulator');
  if (endpoint === null && process.env.CI) {
    throw new Error('CI is set but no BigQuery emulator is running: run `npm run setup:emulator`.');
  }
  return endpoint;
}

/**
 * `describe` for tests that need the BigQuery emulator: the title says so, and the block is
 * skipped (never silently passed) when the emulator is not installed outside CI.
 */
export function describeWithEmulator(title: string, body: (endpoint: EmulatorEndpoint) => void): void {
  const endpoint = emulatorOrSkip();
  const fullTitle = `${title} (emulator)`;
  if (endpoint === null) describe.skip(fullTitle, () => undefined);
  else describe(fullTitle, () => body(endpoint));
}

/**
 * A real client aimed at a local endpoint (the emulator or a fake server).
 *
 * The PassThroughClient matters: without credentials the client still sends ordinary requests, but
 * a load upload (multipart POST to /upload/bigquery/v2/projects/{p}/jobs) goes through a code path
 * that expects auth headers, and teeny-request throws a TypeError outside any promise, killing
 * the test process. The client's own retries are off, as in production (see createProductionClient).
 */
export function localBigQueryClient(endpoint: EmulatorEndpoint): BigQuery {
  return new BigQuery({
    projectId: endpoint.projectId,
    apiEndpoint: endpoint.apiEndpoint,
    authClient: new PassThroughClient(),
    retryOptions: { autoRetry: false },
  });
}

/** A dataset name no other test uses; the emulator keeps everything for the whole run. */
export function uniqueDatasetId(prefix = 'tilehouse_test'): string {
  return `${prefix}_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
}
