import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, inject } from 'vitest';
import { underCi } from './ci.js';
import { type PostgresServer, psql } from './postgres-cluster.js';

export { psql };

/**
 * The run's PostgreSQL cluster (global-setup.ts), or null when it is absent and skipping is
 * allowed. Under CI a missing server fails (global setup already refuses to start; this catches
 * other entry points).
 */
export function postgresOrSkip(): PostgresServer | null {
  const server = inject('postgres');
  if (server === null && underCi()) throw new Error("CI is set but no PostgreSQL server was started: install Debian's postgresql and pgbouncer packages.");
  return server;
}

/** Why the postgres tests cannot run here (for test/support/skip.ts), or null when the cluster is up. */
export function postgresBlocker(server: PostgresServer | null): string | null {
  return server === null ? "PostgreSQL 15 or PgBouncer is not installed here (Debian's postgresql and pgbouncer packages)" : null;
}

/** A test file's own database in the run's cluster: `name` filled in before its tests, dropped after. */
export interface TestDatabase {
  server: PostgresServer;
  name: string;
  /** A client of the test's own (the independent reader), connected straight to the server. */
  client(): Promise<pg.Client>;
  /** One statement's rows, read by a fresh connection of the test's own. */
  query<T extends Record<string, unknown>>(sql: string, values?: unknown[]): Promise<T[]>;
}

export function usePostgresDatabase(server: PostgresServer): TestDatabase {
  const database: TestDatabase = {
    server,
    name: '',
    async client() {
      const client = new pg.Client({ host: server.host, port: server.port, user: server.user, password: server.password, database: database.name });
      await client.connect();
      return client;
    },
    async query<T extends Record<string, unknown>>(sql: string, values: unknown[] = []) {
      const client = await database.client();
      try {
        return (await client.query<T>(sql, values)).rows;
      } finally {
        await client.end();
      }
    },
  };
  beforeAll(async () => {
    database.name = `tilehouse_test_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
    await psql(server, 'postgres', `CREATE DATABASE ${database.name}`);
  });
  afterAll(async () => {
    if (database.name !== '') await psql(server, 'postgres', `DROP DATABASE IF EXISTS ${database.name} WITH (FORCE)`);
  });
  return database;
}

/** The variable the test workspaces name for the cluster's password (a reference, as production's). */
export const TEST_PASSWORD_VARIABLE = 'TILEHOUSE_TEST_PG_PASSWORD';

/** Adds `sinks.postgres` for a test database (password by reference) to a workspace's environment file, with `extra` top-level settings. */
export async function addPostgresSettings(
  configFile: string,
  server: PostgresServer,
  database: string,
  settings: Record<string, unknown> = {},
  extra: Record<string, unknown> = {},
): Promise<Record<string, string>> {
  const { readFile, writeFile } = await import('node:fs/promises');
  const { parse, stringify } = await import('yaml');
  const environment = parse(await readFile(configFile, 'utf8')) as { sinks: Record<string, unknown> };
  environment.sinks.postgres = {
    host: server.host,
    port: server.port,
    database,
    user: server.user,
    password: `\${${TEST_PASSWORD_VARIABLE}}`,
    sslmode: 'disable',
    ...settings,
  };
  await writeFile(configFile, stringify({ ...environment, ...extra }));
  // In-process runs read the sink's secrets from process.env, as production does (the source's
  // come through the CLI's env): the test worker holds the variable, as the S3 tests' do theirs.
  process.env[TEST_PASSWORD_VARIABLE] = server.password;
  return { [TEST_PASSWORD_VARIABLE]: server.password };
}
