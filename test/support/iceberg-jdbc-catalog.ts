import type { PyicebergTable } from './iceberg-readers.js';
import { TEST_PASSWORD_VARIABLE } from './postgres.js';
import type { PostgresServer } from './postgres-cluster.js';

/** `sinks.iceberg.catalog` for the JDBC catalog `catalogName` in `database` of the suite's PostgreSQL; the password from the test's variable. */
export function jdbcCatalogSettings(server: PostgresServer, database: string, catalogName: string) {
  return {
    type: 'jdbc',
    catalogName,
    host: server.host,
    port: server.port,
    database,
    user: server.user,
    password: `\${${TEST_PASSWORD_VARIABLE}}`,
    sslmode: 'disable',
  };
}

/** A table of that catalog as pyiceberg's SqlCatalog reads it (`extra`: more catalog properties). */
export function sqlCatalogTable(
  server: PostgresServer,
  database: string,
  catalogName: string,
  table: string,
  extra: Record<string, string> = {},
): PyicebergTable {
  return {
    catalog: {
      type: 'sql',
      uri: `postgresql+psycopg2://${encodeURIComponent(server.user)}:${encodeURIComponent(server.password)}@${server.host}:${server.port}/${database}`,
      ...extra,
    },
    catalogName,
    table,
  };
}
