import type { IcebergSchema } from './iceberg-schema.js';
import type { PartitionSpec } from './table-metadata.js';
import type { TableMetadata } from './table-metadata.js';

/**
 * What the table writer asks of an Iceberg catalog, whichever it is (the REST catalog API, the
 * JDBC catalog's tables on PostgreSQL): one seam, so the writer never says which.
 */
/** A new table's layout: a partition spec (none: unpartitioned) and its location (none: where the catalog puts it). */
export interface NewTableOptions {
  partitionSpec?: PartitionSpec;
  location?: string;
}

export interface TableIdentifier {
  namespace: string;
  name: string;
}

export interface LoadedTable {
  metadata: TableMetadata;
  /** Where the catalog's current metadata file is (what a commit is conditioned on). */
  metadataLocation: string;
}

/** A snapshot as the table metadata holds it (longs as bigint). */
export interface NewSnapshot {
  'snapshot-id': bigint;
  'parent-snapshot-id'?: bigint;
  'sequence-number': bigint;
  'timestamp-ms': number;
  'manifest-list': string;
  summary: Record<string, string> & { operation: string };
  'schema-id': number;
}

/**
 * What a run's commit carries beside its snapshot (expire-snapshots.ts; a new schema,
 * schema-contract.ts): applied in the same commit, or not at all.
 */
export interface CommitHousekeeping {
  /** Snapshots the commit removes (REST `remove-snapshots`). */
  removeSnapshotIds: readonly bigint[];
  /** Table properties the commit sets (REST `set-properties`). */
  setProperties: Readonly<Record<string, string>>;
  /** `schema: add`: the schema the commit adds and makes current (REST `add-schema`, `set-current-schema`), and the table's last column id after it. */
  schema?: { schema: IcebergSchema; lastColumnId: number };
}

export interface IcebergCatalog {
  /** `rest <uri>` or `jdbc <database>`: for messages. */
  readonly description: string;
  /** Whether the catalog has the namespace (a run creates it with its table when it has not). */
  namespaceExists(namespace: string): Promise<boolean>;
  /** The table, or undefined when the catalog has none of that name. */
  loadTable(table: TableIdentifier): Promise<LoadedTable | undefined>;
  /**
   * Creates the namespace when missing and the table (format version 2, unpartitioned unless a
   * spec is given) at `location` (absent: where the catalog puts it); a table created meanwhile by
   * another writer is loaded instead.
   */
  createTable(table: TableIdentifier, schema: IcebergSchema, options?: NewTableOptions): Promise<LoadedTable>;
  /**
   * Commits `snapshot` as the table's `main` on condition that `main` is still where `base` had
   * it: throws CommitConflict when it is not (nothing committed), IcebergCatalogError when the
   * catalog refused otherwise, and CommitOutcomeUnknown when the answer was lost. `housekeeping`
   * (snapshots expired, properties set) lands in the same commit.
   */
  commitSnapshot(table: TableIdentifier, base: LoadedTable, snapshot: NewSnapshot, housekeeping?: CommitHousekeeping): Promise<LoadedTable>;
  /**
   * For `check` and `plan`, where the catalog can tell without writing: the privileges a run needs
   * on the catalog's own tables (JDBC), a note when they are all there; throws the error a run
   * would fail with when one is missing. Absent: the catalog answers only by trying (REST).
   */
  checkPrivileges?(): Promise<string>;
  close(): Promise<void>;
}

/** The commit was sent but its answer was lost (a cut connection, a 5xx): the table, read again, tells. */
export class CommitOutcomeUnknown extends Error {
  constructor(
    readonly table: string,
    options: { cause?: unknown },
    /** The metadata file the commit would make current, when the writer wrote it (JDBC): no table's once the table, read again, lacks the snapshot. */
    readonly metadataLocation?: string,
  ) {
    super(`Iceberg table ${table}: the commit's answer was lost`, options);
  }
}

export function tableName(table: TableIdentifier): string {
  return `${table.namespace}.${table.name}`;
}
