import type { TestProject } from 'vitest/node';
import { findEmulatorBinary, PROJECT_LOCAL_EMULATOR, startEmulator } from './bigquery-emulator-process.js';
import { underCi } from './ci.js';
import { findPgBouncer, findPostgresBinDirectory, type PostgresServer, startPostgres } from './postgres-cluster.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The run's throwaway PostgreSQL cluster (and PgBouncer), or null when absent outside CI. */
    postgres: PostgresServer | null;
  }
}

/**
 * Finds the BigQuery emulator, proves it starts, and hands its path to the tests through
 * `inject('bigqueryEmulatorBinary')`; each emulator test block starts one of its own (in ~0.2 s):
 * the emulator's memory grows with every load and, shared by the whole suite, passed 2 GiB, where
 * its wasm SQL engine panics ("slice bounds out of range") and every later test fails. Locally a
 * missing emulator only skips the tests that need it; under CI it fails the run, so a broken
 * install can never pass as a green build.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const stopEmulator = await provideBigQueryEmulator(project);
  const stopPostgres = await providePostgres(project);
  return async () => {
    await stopPostgres();
    await stopEmulator();
  };
}

/**
 * Starts one throwaway PostgreSQL cluster with PgBouncer for the whole run (initdb costs seconds;
 * each test file makes its own database in it, test/support/postgres.ts) and hands it to the tests
 * through `inject('postgres')`. Outside CI a missing server or PgBouncer only skips the tests that
 * need them; under CI it fails the run.
 */
export async function providePostgres(
  project: Pick<TestProject, 'provide'>,
  options: { env?: NodeJS.ProcessEnv; debianRoot?: string } = {},
): Promise<() => Promise<void>> {
  const env = options.env ?? process.env;
  const binDirectory = findPostgresBinDirectory(env, options.debianRoot);
  const bouncer = findPgBouncer(env);
  if (binDirectory === undefined || bouncer === undefined) {
    const missing = binDirectory === undefined ? 'PostgreSQL (initdb, pg_ctl)' : 'PgBouncer';
    if (underCi(env)) {
      throw new Error(
        `CI is set but ${missing} is not installed: install Debian's postgresql and pgbouncer packages (.ci/run does as root), or set POSTGRES_BIN_DIR / PGBOUNCER_BIN.`,
      );
    }
    console.warn(`[tilehouse] ${missing} not found; the postgres sink's tests are skipped.`);
    project.provide('postgres', null);
    return async () => undefined;
  }
  const running = await startPostgres(binDirectory, bouncer);
  // What the tests may reach: the address, not the shared server's stop and start (a test that restarts one starts its own).
  const { stop, stopServer: _stopServer, startServer: _startServer, dataDirectory: _data, ...server } = running;
  project.provide('postgres', server);
  return stop;
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
