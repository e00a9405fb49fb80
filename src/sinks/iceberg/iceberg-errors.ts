import { TilehouseError } from '../../errors.js';
import { type FileSystemFailureCode, fileSystemFailureCode, fileSystemFailureHint } from '../file-system-failure.js';
import type { PublishOutcomeUnknown } from '../sink.js';

/** The catalog answered with an error, or could not be asked (`iceberg_catalog_failed`). */
export class IcebergCatalogError extends TilehouseError {
  readonly code = 'iceberg_catalog_failed';
  override readonly targetKind = 'iceberg' as const;

  constructor(
    readonly table: string,
    readonly what: string,
    readonly status?: number,
    options?: { cause?: unknown },
  ) {
    super(`Iceberg table ${table}: ${what}`, options);
  }
}

/**
 * The JDBC catalog's database refused the catalog's user a privilege on a catalog table (SQLSTATE
 * 42501): `permission_denied`, at once (another try is refused again), naming the table and
 * privilege to grant. `outcome` is what is known of the run when a statement of it was refused.
 */
export class IcebergCatalogPermissionError extends TilehouseError {
  readonly code = 'permission_denied';
  override readonly targetKind = 'iceberg' as const;

  constructor(
    /** `table ns.t (jdbc …)` for a run's statement, the catalog's description for `check`. */
    where: string,
    readonly user: string,
    /** The privileges the user lacks, each on its catalog table: `UPDATE on iceberg_tables`. */
    readonly missing: readonly CatalogPrivilege[],
    detail: string,
    outcome?: string,
  ) {
    const lacks = missing.map(({ privilege, table }) => `${privilege} on ${table}`).join(', ');
    const grants = missing.map(({ privilege, table }) => `GRANT ${privilege} ON ${table} TO ${quoteRole(user)}`).join('; ');
    super(`Iceberg ${where}: user ${JSON.stringify(user)} lacks ${lacks} (${detail}): ${grants}${outcome === undefined ? '' : `; ${outcome}`}`);
  }
}

/** A privilege on one of the JDBC catalog's own tables. */
export interface CatalogPrivilege {
  privilege: 'SELECT' | 'INSERT' | 'UPDATE';
  table: 'iceberg_tables' | 'iceberg_namespace_properties';
}

/** A role name as SQL writes it (double quotes doubled). */
function quoteRole(user: string): string {
  return `"${user.replaceAll('"', '""')}"`;
}

/** The JDBC catalog's database refused the user or password (SQLSTATE 28P01/28000): `iceberg_catalog_auth_failed`, not tried again. */
export class IcebergJdbcAuthError extends TilehouseError {
  readonly code = 'iceberg_catalog_auth_failed';
  override readonly targetKind = 'iceberg' as const;

  constructor(
    catalog: string,
    readonly user: string,
    detail: string,
  ) {
    super(`Iceberg ${catalog}: the database refused user ${JSON.stringify(user)} (${detail}): check the catalog's password and pg_hba.conf`);
  }
}

/** Every try of the commit found another writer's snapshot first (`iceberg_commit_conflict`). */
export class IcebergCommitConflictError extends TilehouseError {
  readonly code = 'iceberg_commit_conflict';
  override readonly targetKind = 'iceberg' as const;

  constructor(
    readonly table: string,
    readonly tries: number,
  ) {
    super(`Iceberg table ${table}: another writer committed first on each of ${tries} tries; nothing of this run was committed`);
  }
}

/** The sink's partitionBy or primaryKey names no fit column of the tile (`iceberg_column_invalid`). */
export class IcebergColumnError extends TilehouseError {
  readonly code = 'iceberg_column_invalid';
  override readonly targetKind = 'iceberg' as const;

  constructor(jobName: string, table: string, field: string, column: string, problem: string) {
    super(`job ${jobName}: iceberg ${table}: ${field} ${JSON.stringify(column)} ${problem}`);
  }
}

/**
 * The tile's columns do not match the table's schema (`iceberg_schema_mismatch`): under the schema
 * contract (`contract`: a new column under `freeze`, a removed or retyped one under either), or
 * otherwise (a lineage column's name taken, field ids another writer moved).
 */
export class IcebergSchemaMismatchError extends TilehouseError {
  readonly code = 'iceberg_schema_mismatch';
  override readonly targetKind = 'iceberg' as const;

  constructor(
    readonly table: string,
    readonly reason: string,
    readonly contract?: 'freeze' | 'add',
  ) {
    super(`Iceberg table ${table}: the tile's columns do not match the table's schema${contract === undefined ? '' : ` (schema: ${contract})`}: ${reason}`);
  }
}

/** The table's metadata or manifest list cannot be read (`iceberg_metadata_invalid`). */
export class IcebergMetadataInvalidError extends TilehouseError {
  readonly code = 'iceberg_metadata_invalid';
  override readonly targetKind = 'iceberg' as const;

  constructor(
    readonly table: string,
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(`Iceberg table ${table}: its metadata cannot be read: ${reason}`, options);
  }
}

/**
 * A commit the catalog refused because the table moved on (REST 409, a JDBC UPDATE that matched no
 * row): the writer re-reads the table and tries again. Never leaves the writer.
 */
export class CommitConflict extends Error {
  constructor(readonly table: string) {
    super(`Iceberg table ${table}: the commit's requirements no longer hold`);
  }
}

/** `writeMode: partition` on a table not partitioned by day on the job's column (`iceberg_partition_mismatch`). */
export class IcebergPartitionMismatchError extends TilehouseError {
  readonly code = 'iceberg_partition_mismatch';

  constructor(
    readonly table: string,
    readonly reason: string,
  ) {
    super(`Iceberg table ${table}: ${reason}; nothing was committed`);
  }
}

/** A partition column's value no day partition can hold (`iceberg_value_invalid`), as the PostgreSQL sink's `postgres_value_invalid`. */
export class IcebergValueError extends TilehouseError {
  readonly code = 'iceberg_value_invalid';

  constructor(
    readonly column: string,
    readonly value: string,
    reason: string,
  ) {
    super(`column ${column}: value ${value} ${reason}; nothing was committed`);
  }
}

/** `writeMode: merge`: a run's rows share a key, or one has a null in a key column (`iceberg_duplicate_key`, `iceberg_null_key`). */
export class IcebergKeyError extends TilehouseError {
  readonly code: 'iceberg_duplicate_key' | 'iceberg_null_key';

  /** `latestBy`: the column the rows sharing a key also tie on (a null ties with a null), so it cannot choose. */
  constructor(table: string, kind: 'duplicate' | 'null', key: string, keyColumns: readonly string[], latestBy?: string) {
    const remedy =
      latestBy === undefined
        ? 'set latestBy to the column whose highest value wins, or fix the source'
        : `they also have the same ${latestBy}, so latestBy cannot choose one`;
    super(
      kind === 'duplicate'
        ? `Iceberg table ${table}: rows of this run share the primary key (${keyColumns.join(', ')}) = ${key}; ${remedy}; nothing was committed`
        : `Iceberg table ${table}: a row has a null in primary key column ${key}; nothing was committed`,
    );
    this.code = kind === 'duplicate' ? 'iceberg_duplicate_key' : 'iceberg_null_key';
  }
}

/** A data file a merge must rewrite could not be read back (`iceberg_data_file_unreadable`). */
export class IcebergDataFileUnreadableError extends TilehouseError {
  readonly code = 'iceberg_data_file_unreadable';

  constructor(
    readonly table: string,
    readonly file: string,
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(`Iceberg table ${table}: data file ${file} cannot be read back to rewrite it: ${reason}; nothing was committed`, options);
  }
}

/**
 * The commit was sent, its answer was lost, and the table could not be read afterwards: whether the
 * run's snapshot is the table's is not known. A re-run with the same run id is safe: it finds its
 * snapshot (`tilehouse.run-id` in the summary) and commits nothing, or commits once.
 */
export class IcebergPublishOutcomeUnknownError extends TilehouseError implements PublishOutcomeUnknown {
  readonly code = 'publish_outcome_unknown';
  override readonly targetKind = 'iceberg' as const;
  readonly publishOutcomeUnknown = true as const;

  constructor(jobName: string, table: string, runId: string, error: unknown) {
    super(
      `job ${jobName}: iceberg ${table}: the commit got no answer and the table could not be read afterwards (last: ${(error as Error).message}): ` +
        `whether run ${runId} is in the table is not known. Its snapshots tell: a snapshot whose summary has tilehouse.run-id ${runId} is the run's. ` +
        `Re-running with --run-id ${runId} is safe: it commits only if no snapshot has that run id`,
      { cause: error },
    );
  }
}

/**
 * A file of the table (data file, manifest, manifest list, metadata) could not be written on the
 * local file system for a reason a user fixes: `disk_full`, `permission_denied` or
 * `target_is_directory`. The message names the file; nothing of the run was committed.
 */
export class IcebergFileWriteError extends TilehouseError {
  readonly code: FileSystemFailureCode | 'write_failed';
  override readonly targetKind = 'iceberg' as const;

  constructor(
    readonly location: string,
    cause: unknown,
  ) {
    const code = fileSystemFailureCode(cause, 'write_failed');
    const hint = fileSystemFailureHint(code);
    super(
      `Iceberg table file ${location}: writing it failed: ${cause instanceof Error ? cause.message : String(cause)}${hint ? ` (${hint})` : ''}; nothing of this run was committed`,
      { cause },
    );
    this.code = code;
  }
}
