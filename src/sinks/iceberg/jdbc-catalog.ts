import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { type IcebergCatalog, CommitOutcomeUnknown, type LoadedTable, type NewSnapshot, type TableIdentifier, tableName } from './catalog.js';
import type { CommitHousekeeping, NewTableOptions } from './catalog.js';
import { withHousekeeping } from './expire-snapshots.js';
import type { TilehouseError } from '../../errors.js';
import {
  type CatalogPrivilege,
  CommitConflict,
  IcebergCatalogError,
  IcebergCatalogPermissionError,
  IcebergJdbcAuthError,
  IcebergMetadataInvalidError,
} from './iceberg-errors.js';
import { parseIcebergJson, stringifyIcebergJson } from './iceberg-json.js';
import type { IcebergSchema } from './iceberg-schema.js';
import { childLocation, readLocation, removeLocation, writeNewFile } from './local-files.js';
import { newTableMetadata, tableMetadataSchema } from './table-metadata.js';

/**
 * The JDBC catalog's tables on PostgreSQL, as Java's `JdbcCatalog` (schema V1) and pyiceberg's
 * `SqlCatalog` share them: `iceberg_tables` (catalog_name, table_namespace, table_name,
 * metadata_location, previous_metadata_location, iceberg_type) and `iceberg_namespace_properties`.
 * The catalog holds only where the current metadata file is: this writer writes the metadata
 * JSON itself, and a commit is one UPDATE conditioned on the previous metadata location, which
 * matches no row when another writer committed first.
 */
export interface JdbcCatalogOptions {
  /** The catalog's name: the `catalog_name` of its rows (a reader must be given the same name). */
  catalogName: string;
  /** Where new tables go: a `file:` URI or an absolute path; a table is `<warehouse>/<namespace>/<table>`, as Java lays it out. */
  warehouse: string;
  connection: pg.ClientConfig;
  /** Connects instead of `new pg.Client(connection)` (the sink's connection, with libpq's sslmode meanings); its failure is the catalog's. */
  connect?: () => Promise<pg.Client>;
}

const CREATE_TABLES = [
  `CREATE TABLE IF NOT EXISTS iceberg_tables (
    catalog_name VARCHAR(255) NOT NULL,
    table_namespace VARCHAR(255) NOT NULL,
    table_name VARCHAR(255) NOT NULL,
    metadata_location VARCHAR(1000),
    previous_metadata_location VARCHAR(1000),
    iceberg_type VARCHAR(5),
    PRIMARY KEY (catalog_name, table_namespace, table_name))`,
  `CREATE TABLE IF NOT EXISTS iceberg_namespace_properties (
    catalog_name VARCHAR(255) NOT NULL,
    namespace VARCHAR(255) NOT NULL,
    property_key VARCHAR(255),
    property_value VARCHAR(1000),
    PRIMARY KEY (catalog_name, namespace, property_key))`,
];

// Two CREATE TABLE IF NOT EXISTS at once can both pass the check: the loser's duplicate is no failure.
const ALREADY_THERE = new Set(['23505', '42P07']);

/** PostgreSQL's SQLSTATEs the catalog's errors are told apart by (Appendix A). */
const INSUFFICIENT_PRIVILEGE = '42501';
const AUTH_REFUSED = new Set(['28P01', '28000']);
/** The server says it does not know whether the statement completed, or that the session, not the statement, failed. */
const OUTCOME_UNKNOWN = (state: string) => state === '40003' || state.startsWith('08') || state.startsWith('57P');

/** What a run needs of the catalog's own tables: it reads and creates tables and namespaces, and commits by UPDATE. */
const PRIVILEGES_NEEDED: readonly CatalogPrivilege[] = [
  { privilege: 'SELECT', table: 'iceberg_tables' },
  { privilege: 'INSERT', table: 'iceberg_tables' },
  { privilege: 'UPDATE', table: 'iceberg_tables' },
  { privilege: 'SELECT', table: 'iceberg_namespace_properties' },
  { privilege: 'INSERT', table: 'iceberg_namespace_properties' },
];

/** The SQLSTATE of a server's answer; undefined for anything else (no answer came: the connection failed). */
function sqlstateOf(error: unknown): string | undefined {
  return error instanceof pg.DatabaseError ? error.code : undefined;
}

/**
 * A refusal by the catalog's database as the error that names what to fix: 42501 the privilege
 * (`permission_denied`), 28P01/28000 the credentials (`iceberg_catalog_auth_failed`), neither
 * tried again; anything else `iceberg_catalog_failed`, quoting it. `needs`: what the statement
 * needed, narrowed to the table the server names.
 */
function catalogFailure(
  at: { where: string; description: string; user: string },
  error: unknown,
  what: string,
  needs: readonly CatalogPrivilege[],
  outcome?: string,
): TilehouseError {
  const state = sqlstateOf(error);
  const message = (error as Error).message;
  if (state === INSUFFICIENT_PRIVILEGE) {
    const named = needs.filter(({ table }) => message.includes(table));
    return new IcebergCatalogPermissionError(at.where, at.user, named.length > 0 ? named : needs, `${state} ${message}`, outcome);
  }
  if (state !== undefined && AUTH_REFUSED.has(state)) return new IcebergJdbcAuthError(at.description, at.user, `${state} ${message}`);
  return new IcebergCatalogError(at.where, `${what}: ${state === undefined ? '' : `${state} `}${message}`, undefined, { cause: error });
}

export async function openJdbcCatalog(options: JdbcCatalogOptions): Promise<IcebergCatalog> {
  const described = `jdbc ${options.connection.host ?? ''}:${options.connection.port ?? ''}/${options.connection.database ?? ''} catalog ${options.catalogName}`;
  const at = { where: described, description: described, user: options.connection.user ?? '' };
  const connect = async (): Promise<pg.Client> => {
    try {
      if (options.connect) return await options.connect();
      const client = new pg.Client(options.connection);
      await client.connect();
      return client;
    } catch (error) {
      throw catalogFailure(at, error, "cannot connect to the JDBC catalog's database", PRIVILEGES_NEEDED);
    }
  };
  const client = await connect();
  // Made when missing; a user without CREATE on the schema uses the tables an administrator made.
  const present = await client
    .query<{ present: boolean }>("SELECT to_regclass('iceberg_tables') IS NOT NULL AND to_regclass('iceberg_namespace_properties') IS NOT NULL AS present")
    .then(({ rows }) => rows[0]?.present === true)
    .catch(() => false);
  for (const statement of present ? [] : CREATE_TABLES) {
    try {
      await client.query(statement);
    } catch (error) {
      if (!ALREADY_THERE.has((error as { code?: string }).code ?? '')) {
        await client.end();
        throw catalogFailure(at, error, "cannot create the JDBC catalog's tables", PRIVILEGES_NEEDED);
      }
    }
  }
  const warehouse = options.warehouse.startsWith('/') ? `file://${options.warehouse}` : options.warehouse;
  return new JdbcCatalog(client, connect, described, options.catalogName, warehouse, at.user);
}

class JdbcCatalog implements IcebergCatalog {
  /** The connection broke (a commit's answer lost with it): the next statement connects again, so the table can be read to judge the commit. */
  private broken = false;

  constructor(
    private client: pg.Client,
    private readonly connect: () => Promise<pg.Client>,
    readonly description: string,
    private readonly catalogName: string,
    /** A `file:` URI: where new tables go. */
    private readonly warehouse: string,
    /** The database user the catalog connects as, named by a refusal. */
    private readonly user: string,
  ) {
    this.watch(client);
  }

  /** The open connection, a new one after the last broke. */
  private async connection(): Promise<pg.Client> {
    if (this.broken) {
      const old = this.client;
      this.client = await this.connect();
      this.watch(this.client);
      this.broken = false;
      await old.end().catch(() => undefined);
    }
    return this.client;
  }

  private watch(client: pg.Client): void {
    // A connection that breaks between statements is an 'error' event: never an uncaught one.
    client.on('error', () => {
      if (client === this.client) this.broken = true;
    });
  }

  /** Where a failure of a statement about `table` happened, for its message. */
  private at(table: string) {
    return { where: `table ${table} (${this.description})`, description: this.description, user: this.user };
  }

  private async run(table: string, sql: string, values: unknown[], needs: readonly CatalogPrivilege[]): Promise<pg.QueryResult> {
    const client = await this.connection();
    try {
      return await client.query(sql, values);
    } catch (error) {
      if (isConnectionLost(error)) this.broken = true;
      throw catalogFailure(this.at(table), error, `the JDBC catalog's statement failed (${sql.split('\n')[0]})`, needs);
    }
  }

  async checkPrivileges(): Promise<string> {
    const { rows } = await this.run(
      this.description,
      `SELECT needed.t AS "table", needed.p AS privilege, has_table_privilege(needed.t, needed.p) AS granted
         FROM unnest($1::text[], $2::text[]) AS needed(t, p)`,
      [PRIVILEGES_NEEDED.map(({ table }) => table), PRIVILEGES_NEEDED.map(({ privilege }) => privilege)],
      [],
    );
    const granted = new Set(
      (rows as { table: string; privilege: string; granted: boolean }[]).filter((row) => row.granted).map((row) => `${row.privilege} ${row.table}`),
    );
    const missing = PRIVILEGES_NEEDED.filter(({ privilege, table }) => !granted.has(`${privilege} ${table}`));
    if (missing.length > 0) throw new IcebergCatalogPermissionError(this.description, this.user, missing, 'has_table_privilege');
    return `user ${JSON.stringify(this.user)} has SELECT, INSERT, UPDATE on iceberg_tables and SELECT, INSERT on iceberg_namespace_properties`;
  }

  async namespaceExists(namespace: string): Promise<boolean> {
    // A namespace is a property row, or only the tables in it (Java's JdbcCatalog counts both).
    const { rows } = await this.run(
      namespace,
      `SELECT EXISTS (SELECT 1 FROM iceberg_namespace_properties WHERE catalog_name = $1 AND namespace = $2)
           OR EXISTS (SELECT 1 FROM iceberg_tables WHERE catalog_name = $1 AND table_namespace = $2) AS found`,
      [this.catalogName, namespace],
      [
        { privilege: 'SELECT', table: 'iceberg_namespace_properties' },
        { privilege: 'SELECT', table: 'iceberg_tables' },
      ],
    );
    return (rows[0] as { found: boolean }).found;
  }

  async loadTable(table: TableIdentifier): Promise<LoadedTable | undefined> {
    const { rows } = await this.run(
      tableName(table),
      `SELECT metadata_location FROM iceberg_tables
        WHERE catalog_name = $1 AND table_namespace = $2 AND table_name = $3 AND (iceberg_type = 'TABLE' OR iceberg_type IS NULL)`,
      [this.catalogName, table.namespace, table.name],
      [{ privilege: 'SELECT', table: 'iceberg_tables' }],
    );
    const location = (rows[0] as { metadata_location?: string | null } | undefined)?.metadata_location;
    return location ? readMetadata(table, location) : undefined;
  }

  async createTable(table: TableIdentifier, schema: IcebergSchema, { partitionSpec, location: at }: NewTableOptions = {}): Promise<LoadedTable> {
    const name = tableName(table);
    await this.run(
      name,
      `INSERT INTO iceberg_namespace_properties (catalog_name, namespace, property_key, property_value) VALUES ($1, $2, 'exists', 'true')
        ON CONFLICT DO NOTHING`,
      [this.catalogName, table.namespace],
      [
        { privilege: 'INSERT', table: 'iceberg_namespace_properties' },
        { privilege: 'SELECT', table: 'iceberg_namespace_properties' },
      ],
    );
    const location = at ?? childLocation(this.warehouse, `${table.namespace}/${table.name}`);
    const metadataLocation = childLocation(location, `metadata/00000-${randomUUID()}.metadata.json`);
    const metadata = newTableMetadata({
      uuid: randomUUID(),
      location,
      schema,
      nowMs: Date.now(),
      properties: { 'write.format.default': 'parquet' },
      ...(partitionSpec ? { partitionSpec } : {}),
    });
    await writeNewFile(metadataLocation, [Buffer.from(stringifyIcebergJson(metadata, 2))]);
    const inserted = await this.run(
      name,
      `INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name, metadata_location, previous_metadata_location, iceberg_type)
        VALUES ($1, $2, $3, $4, NULL, 'TABLE') ON CONFLICT DO NOTHING`,
      [this.catalogName, table.namespace, table.name, metadataLocation],
      [
        { privilege: 'INSERT', table: 'iceberg_tables' },
        { privilege: 'SELECT', table: 'iceberg_tables' },
      ],
    );
    if (inserted.rowCount === 0) {
      // Another writer created it first: theirs is the table.
      await removeLocation(metadataLocation);
      const existing = await this.loadTable(table);
      if (!existing) throw new IcebergCatalogError(name, 'the table was created by another writer and is gone again');
      return existing;
    }
    return readMetadata(table, metadataLocation);
  }

  async commitSnapshot(table: TableIdentifier, base: LoadedTable, snapshot: NewSnapshot, housekeeping?: CommitHousekeeping): Promise<LoadedTable> {
    const name = tableName(table);
    const previous = base.metadata;
    const id = snapshot['snapshot-id'];
    const schema = housekeeping?.schema;
    const next = {
      ...previous,
      ...(schema === undefined
        ? {}
        : { schemas: [...previous.schemas, schema.schema], 'current-schema-id': schema.schema['schema-id'], 'last-column-id': schema.lastColumnId }),
      'last-sequence-number': snapshot['sequence-number'],
      'last-updated-ms': snapshot['timestamp-ms'],
      'current-snapshot-id': id,
      snapshots: [...(previous.snapshots ?? []), snapshot],
      refs: { ...previous.refs, main: { 'snapshot-id': id, type: 'branch' } },
      'snapshot-log': [...(previous['snapshot-log'] ?? []), { 'snapshot-id': id, 'timestamp-ms': snapshot['timestamp-ms'] }],
      'metadata-log': [...(previous['metadata-log'] ?? []), { 'metadata-file': base.metadataLocation, 'timestamp-ms': previous['last-updated-ms'] }],
    };
    const metadataLocation = childLocation(previous.location, `metadata/${nextVersion(base.metadataLocation)}-${randomUUID()}.metadata.json`);
    await writeNewFile(metadataLocation, [Buffer.from(stringifyIcebergJson(withHousekeeping(next, housekeeping), 2))]);
    let updated: pg.QueryResult;
    const client = await this.connection();
    try {
      updated = await client.query(
        `UPDATE iceberg_tables SET metadata_location = $1, previous_metadata_location = $2
          WHERE catalog_name = $3 AND table_namespace = $4 AND table_name = $5 AND metadata_location = $2`,
        [metadataLocation, base.metadataLocation, this.catalogName, table.namespace, table.name],
      );
    } catch (error) {
      const state = sqlstateOf(error);
      if (state === undefined || OUTCOME_UNKNOWN(state)) {
        // The UPDATE may or may not have landed (the connection broke after sending it): the
        // table, read again, tells; the file stays until then, as it may be the table's metadata now.
        if (isConnectionLost(error)) this.broken = true;
        throw new CommitOutcomeUnknown(name, { cause: error }, metadataLocation);
      }
      // The server refused the UPDATE: it did not land, and its metadata file is no table's.
      await removeLocation(metadataLocation);
      // A transaction PostgreSQL rolled back to let another go on: tried again as a conflict is.
      if (state.startsWith('40')) throw new CommitConflict(name);
      throw catalogFailure(
        this.at(name),
        error,
        "the JDBC catalog's commit (UPDATE iceberg_tables) failed",
        [{ privilege: 'UPDATE', table: 'iceberg_tables' }],
        'nothing of this run was committed',
      );
    }
    if (updated.rowCount !== 1) {
      await removeLocation(metadataLocation);
      throw new CommitConflict(name);
    }
    return readMetadata(table, metadataLocation);
  }

  async close(): Promise<void> {
    await this.client.end().catch((error: unknown) => {
      if (!this.broken) throw error;
    });
  }
}

/** A statement failed without the server's answer (no SQLSTATE): the connection is gone, not the statement refused. */
function isConnectionLost(error: unknown): boolean {
  return !(error instanceof pg.DatabaseError);
}

async function readMetadata(table: TableIdentifier, metadataLocation: string): Promise<LoadedTable> {
  let parsed: unknown;
  try {
    parsed = parseIcebergJson((await readLocation(metadataLocation)).toString('utf8'));
  } catch (error) {
    throw new IcebergMetadataInvalidError(tableName(table), `${metadataLocation}: ${(error as Error).message}`, { cause: error });
  }
  const result = tableMetadataSchema.safeParse(parsed);
  if (!result.success) throw new IcebergMetadataInvalidError(tableName(table), `${metadataLocation}: ${result.error.message}`);
  return { metadata: result.data, metadataLocation };
}

/** The next metadata file's version number, from the current file's `NNNNN-` prefix (Java's naming). */
function nextVersion(metadataLocation: string): string {
  const match = /\/(\d+)-[^/]*\.metadata\.json$/.exec(metadataLocation);
  const version = match ? Number(match[1]) + 1 : 1;
  return String(version).padStart(5, '0');
}
