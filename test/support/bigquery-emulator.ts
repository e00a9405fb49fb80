import { randomUUID } from 'node:crypto';
import { BigQuery } from '@google-cloud/bigquery';
import { PassThroughClient } from 'google-auth-library';
import { afterAll, beforeAll, describe, inject } from 'vitest';
import { EMULATOR_PROJECT_ID, startEmulator, type RunningEmulator } from './bigquery-emulator-process.js';
import { describeUnless } from './skip.js';
import { underCi } from './ci.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The BigQuery emulator binary of this test run, or null when it is not installed (local runs only). */
    bigqueryEmulatorBinary: string | null;
  }
}

export interface EmulatorEndpoint {
  apiEndpoint: string;
  projectId: string;
}

/**
 * The emulator binary of this test run, or null when it is absent and skipping is allowed. Under
 * CI a missing emulator fails (global setup already refuses to start; this catches other entry points).
 */
export function emulatorBinaryOrSkip(): string | null {
  const binary = inject('bigqueryEmulatorBinary');
  if (binary === null && underCi()) {
    throw new Error('CI is set but no BigQuery emulator is installed: run `npm run setup:emulator`.');
  }
  return binary;
}

/**
 * An emulator for the enclosing describe block alone: started before its tests, stopped after.
 * The endpoint's address is filled in by then (read it in hooks and tests, not at collection).
 * One per block because the emulator never frees what a load used (see global-setup.ts).
 */
export function useOwnEmulator(binary: string): EmulatorEndpoint {
  const endpoint: EmulatorEndpoint = { apiEndpoint: '', projectId: EMULATOR_PROJECT_ID };
  let running: RunningEmulator | undefined;
  beforeAll(async () => {
    running = await startEmulator(binary);
    endpoint.apiEndpoint = running.apiEndpoint;
  });
  afterAll(async () => {
    await running?.stop();
  });
  return endpoint;
}

/**
 * `describe` for tests that need the BigQuery emulator: the title says so, the block gets an
 * emulator of its own, and it is skipped (never silently passed) when the emulator is not
 * installed outside CI.
 */
export function describeWithEmulator(title: string, body: (endpoint: EmulatorEndpoint) => void): void {
  const binary = emulatorBinaryOrSkip();
  const fullTitle = `${title} (emulator)`;
  if (binary === null) describeUnless('the BigQuery emulator is not installed (npm run setup:emulator)')(fullTitle, () => undefined);
  else describe(fullTitle, () => body(useOwnEmulator(binary)));
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
