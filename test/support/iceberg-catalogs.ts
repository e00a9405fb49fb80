import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import type { IcebergCatalog } from '../../src/sinks/iceberg/catalog.js';
import { type JdbcCatalogOptions, openJdbcCatalog } from '../../src/sinks/iceberg/jdbc-catalog.js';
import { openRestCatalog, type RestCatalogOptions } from '../../src/sinks/iceberg/rest-catalog.js';
import { jdbcCatalogSettings, sqlCatalogTable } from './iceberg-jdbc-catalog.js';
import { icebergPythonOrSkip, type PyicebergTable } from './iceberg-readers.js';
import { icebergRestLibOrSkip, type RunningIcebergRest, startIcebergRest } from './iceberg-rest-server.js';
import { postgresBlocker, postgresOrSkip, TEST_PASSWORD_VARIABLE, usePostgresDatabase } from './postgres.js';
import type { PostgresServer } from './postgres-cluster.js';
import { missing } from './skip.js';

/**
 * The preamble the Iceberg tests share: a catalog of either kind (Apache Iceberg's REST server on a
 * temporary warehouse; the JDBC catalog in a database of the suite's PostgreSQL, its warehouse a
 * temporary directory), opened for the writer, and how the readers (pyiceberg, DuckDB through
 * iceberg_read.py) and a workspace's `sinks.iceberg` reach the same tables. Call the `use…`
 * function inside a `describe`: it registers the hooks that start and stop what it needs.
 */
export type IcebergCatalogKind = 'rest' | 'jdbc';

/** What every kind needs before anything starts: the readers, and the REST server's jars or PostgreSQL. */
const tools = {
  python: icebergPythonOrSkip(),
  rest: undefined as string | null | undefined,
  postgres: undefined as PostgresServer | null | undefined,
};

function restLib(): string | null {
  if (tools.rest === undefined) tools.rest = icebergRestLibOrSkip();
  return tools.rest;
}

function postgres(): PostgresServer | null {
  if (tools.postgres === undefined) tools.postgres = postgresOrSkip();
  return tools.postgres;
}

/** Why these kinds cannot be tested here (null: they can); under CI a missing tool throws instead. */
export function icebergCatalogsBlocker(kinds: readonly IcebergCatalogKind[]): string | null {
  return (
    missing('the Iceberg readers', tools.python) ??
    (kinds.includes('rest') ? missing('the Iceberg REST catalog server', restLib()) : null) ??
    (kinds.includes('jdbc') ? postgresBlocker(postgres()) : null)
  );
}

/** The readers' python (after icebergCatalogsBlocker said none is missing). */
export function icebergPython(): string {
  return tools.python!;
}

export interface IcebergCatalogUnderTest {
  kind: IcebergCatalogKind;
  /** The catalog opened for the writer (closed after the describe). */
  catalog: IcebergCatalog;
  /** How to open the same catalog again (a child process's writer). */
  opening: { kind: 'rest'; options: RestCatalogOptions } | { kind: 'jdbc'; options: JdbcCatalogOptions };
  /** pyiceberg's properties for the same catalog, and its name (a SQL catalog's catalog_name). */
  pyCatalog: Record<string, string>;
  catalogName?: string;
  /** A table as the readers are told where it is. */
  reader(table: string): PyicebergTable;
  /** `sinks.iceberg.catalog` of a workspace for the same catalog, and the variables its secrets reference. */
  settings(): Record<string, unknown>;
  env(): Record<string, string>;
  /** Spark's catalog properties for the same catalog (register it under `catalogName` for JDBC: Spark's name must be it). */
  sparkCatalog(): Record<string, string>;
  /** A directory for new tables (the JDBC catalog's warehouse; the REST server places its own in its warehouse). */
  warehouse: string;
}

const REST_TOKEN_VARIABLE = 'TILEHOUSE_TEST_ICEBERG_TOKEN';
const REST_TOKEN = 'tok-iceberg-catalogs-never-printed';

/**
 * Starts the catalog of `kind` in `beforeAll` (the REST server takes 8-22 s) and stops it in
 * `afterAll`; the returned object is filled in once `beforeAll` ran.
 */
export function useIcebergCatalog(kind: IcebergCatalogKind, options: { catalogName?: string } = {}): IcebergCatalogUnderTest {
  const context = { kind } as IcebergCatalogUnderTest;
  const database = kind === 'jdbc' ? usePostgresDatabase(postgres()!) : undefined;
  let rest: RunningIcebergRest | undefined;
  beforeAll(async () => {
    context.warehouse = await mkdtemp(join(tmpdir(), `tilehouse-iceberg-${kind}-`));
    if (kind === 'rest') {
      rest = await startIcebergRest(restLib()!);
      const { uri } = rest;
      context.opening = { kind: 'rest', options: { uri } };
      context.catalog = await openRestCatalog({ uri });
      context.pyCatalog = { type: 'rest', uri };
      context.reader = (table) => ({ catalog: { type: 'rest', uri }, table });
      context.settings = () => ({ type: 'rest', uri, token: `\${${REST_TOKEN_VARIABLE}}` });
      context.env = () => ({ [REST_TOKEN_VARIABLE]: REST_TOKEN });
      // Not cached: Spark's catalog would keep a loaded table 30 s, and a test commits before it reads.
      context.sparkCatalog = () => ({ type: 'rest', uri, 'cache-enabled': 'false' });
      return;
    }
    const server = postgres()!;
    const catalogName = options.catalogName ?? 'tilehouse_jdbc';
    const { host, port, user, password } = server;
    const { warehouse } = context;
    const opening = { catalogName, warehouse, connection: { host, port, user, password, database: database!.name } };
    context.opening = { kind: 'jdbc', options: opening };
    context.catalog = await openJdbcCatalog(opening);
    context.catalogName = catalogName;
    const table = sqlCatalogTable(server, database!.name, catalogName, '', { warehouse: `file://${warehouse}` });
    context.pyCatalog = table.catalog;
    context.reader = (name) => ({ ...table, table: name });
    context.settings = () => jdbcCatalogSettings(server, database!.name, catalogName);
    context.env = () => ({ [TEST_PASSWORD_VARIABLE]: password });
    context.sparkCatalog = () => ({
      type: 'jdbc',
      uri: `jdbc:postgresql://${host}:${port}/${database!.name}`,
      'jdbc.user': user,
      'jdbc.password': password,
      // The catalog tables tilehouse creates: the schema with iceberg_type (V1).
      'jdbc.schema-version': 'V1',
      'cache-enabled': 'false',
      warehouse: `file://${warehouse}`,
    });
  }, 180_000);
  afterAll(async () => {
    await context.catalog?.close();
    await rest?.stop();
    if (context.warehouse) await rm(context.warehouse, { recursive: true, force: true });
  });
  return context;
}
