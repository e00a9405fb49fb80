import type { TestProject } from 'vitest/node';
import { findEmulatorBinary, PROJECT_LOCAL_EMULATOR, startEmulator } from './bigquery-emulator-process.js';
import { underCi } from './ci.js';

/**
 * Finds the BigQuery emulator, proves it starts, and hands its path to the tests through
 * `inject('bigqueryEmulatorBinary')`; each emulator test block starts one of its own (in ~0.2 s):
 * the emulator's memory grows with every load and, shared by the whole suite, passed 2 GiB, where
 * its wasm SQL engine panics ("slice bounds out of range") and every later test fails. Locally a
 * missing emulator only skips the tests that need it; under CI it fails the run, so a broken
 * install can never pass as a green build.
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
    if (underCi(env)) {
      throw new Error(
        'CI is set but the BigQuery emulator is not installed: run `npm run setup:emulator` ' +
          '(builds .tools/bin/bigquery-emulator), or point BIGQUERY_EMULATOR_BIN at a binary.',
      );
    }
    console.warn('[tilehouse] BigQuery emulator not found; emulator tests are skipped. Install it with `npm run setup:emulator`.');
    project.provide('bigqueryEmulatorBinary', null);
    return async () => undefined;
  }

  // A binary that cannot start fails the run here, once, instead of in every block.
  await (await startEmulator(binary)).stop();
  project.provide('bigqueryEmulatorBinary', binary);
  return async () => undefined;
}
