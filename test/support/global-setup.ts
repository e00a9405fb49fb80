import type { TestProject } from 'vitest/node';
import { findEmulatorBinary, PROJECT_LOCAL_EMULATOR, startEmulator } from './bigquery-emulator-process.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The BigQuery emulator started for this test run, or null when it is not installed (local runs only). */
    bigqueryEmulator: { apiEndpoint: string; projectId: string } | null;
  }
}

/**
 * Starts one BigQuery emulator for the whole run and hands its endpoint to the tests through
 * `inject('bigqueryEmulator')`. Locally a missing emulator only skips the tests that need it;
 * under CI it fails the run, so a broken install can never pass as a green build.
 */
export default function setup(project: TestProject): Promise<() => Promise<void>> {
  return provideBigQueryEmulator(project);
}

export async function provideBigQueryEmulator(
  project: Pick<TestProject, 'provide'>,
  options: { env?: NodeJS.ProcessEnv; projectLocal?: string } = {},
): Promise<() => Promise<void>> {
  const env = options.env ?? process.env;
  const binary = await findEmulatorBinary(env, options.projectLocal ?? PROJECT_LOCAL_EMULATOR);
  if (binary === undefined) {
    if (env.CI) {
      throw new Error(
        'CI is set but the BigQuery emulator is not installed: run `npm run setup:emulator` ' +
          '(builds .tools/bin/bigquery-emulator), or point BIGQUERY_EMULATOR_BIN at a binary.',
      );
    }
    console.warn('[tilehouse] BigQuery emulator not found; emulator tests are skipped. Install it with `npm run setup:emulator`.');
    project.provide('bigqueryEmulator', null);
    return async () => undefined;
  }

  const emulator = await startEmulator(binary);
  project.provide('bigqueryEmulator', { apiEndpoint: emulator.apiEndpoint, projectId: emulator.projectId });
  return () => emulator.stop();
}
