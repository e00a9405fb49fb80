import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';
import pg from 'pg';
import { findPostgresBinDirectory, type PostgresServer, startPostgres } from '../../test/support/postgres-cluster.js';

const run = promisify(execFile);

/** Where the postgres scenario writes: a durable throwaway cluster on loopback (the tests' harness, fsync on). */
export interface RunningPostgresBench extends PostgresServer {
  database: string;
  /** The variable the bench workspace names for the password, and its value. */
  env: Record<string, string>;
  stop(): Promise<void>;
}

/** PostgreSQL (Debian's package), or undefined when it is not installed. */
export async function startPostgresIfInstalled(): Promise<RunningPostgresBench | undefined> {
  const binDirectory = findPostgresBinDirectory();
  if (binDirectory === undefined) return undefined;
  const running = await startPostgres(binDirectory, undefined, { durable: true });
  return { ...running, database: 'postgres', env: { BENCH_PG_PASSWORD: running.password } };
}

function client(server: RunningPostgresBench): pg.Client {
  return new pg.Client({ host: server.host, port: server.port, user: server.user, password: server.password, database: server.database });
}

export async function countTableRows(server: RunningPostgresBench, table: string): Promise<number> {
  const reader = client(server);
  await reader.connect();
  try {
    return Number((await reader.query(`SELECT count(*)::text AS n FROM "${table}"`)).rows[0].n);
  } finally {
    await reader.end();
  }
}

/**
 * A reader of the table while a run publishes: one `SELECT … LIMIT 1` after another on its own
 * connection, each timed; `stop()` gives the longest. A publish that took a lock readers conflict
 * with (ACCESS EXCLUSIVE) would show here as a wait as long as it held it.
 */
export async function startReaderProbe(server: RunningPostgresBench, table: string): Promise<{ stop(): Promise<{ maxWaitMs: number; reads: number }> }> {
  const reader = client(server);
  await reader.connect();
  let running = true;
  let maxWaitMs = 0;
  let reads = 0;
  const loop = (async () => {
    while (running) {
      const started = performance.now();
      await reader.query(`SELECT 1 FROM "${table}" LIMIT 1`);
      maxWaitMs = Math.max(maxWaitMs, performance.now() - started);
      reads += 1;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      await reader.end();
      return { maxWaitMs, reads };
    },
  };
}

/**
 * The physical limit of the same rows: the table written out as CSV, then loaded by `psql \copy`
 * (client-side COPY from the file) into an empty table of the same columns; rows per second of the load.
 */
export async function psqlCopyRowsPerSec(server: RunningPostgresBench, table: string, root: string): Promise<number> {
  const file = join(root, 'psql-copy.csv');
  const psql = (command: string) =>
    run(
      join(server.binDirectory, 'psql'),
      ['-X', '-v', 'ON_ERROR_STOP=1', '-h', server.host, '-p', String(server.port), '-U', server.user, '-d', server.database, '-c', command],
      {
        env: { ...process.env, PGPASSWORD: server.password },
      },
    );
  await psql(`\\copy "${table}" TO '${file}' CSV`);
  await psql(`DROP TABLE IF EXISTS psql_copy; CREATE TABLE psql_copy (LIKE "${table}")`);
  const started = performance.now();
  await psql(`\\copy psql_copy FROM '${file}' CSV`);
  const seconds = (performance.now() - started) / 1000;
  const rows = await countTableRows(server, 'psql_copy');
  await psql('DROP TABLE psql_copy');
  return rows / seconds;
}
