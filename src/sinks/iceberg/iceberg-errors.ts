import { TilehouseError } from '../../errors.js';

/** The catalog answered with an error, or could not be asked (`iceberg_catalog_failed`). */
export class IcebergCatalogError extends TilehouseError {
  readonly code = 'iceberg_catalog_failed';

  constructor(
    readonly table: string,
    readonly what: string,
    readonly status?: number,
    options?: { cause?: unknown },
  ) {
    super(`Iceberg table ${table}: ${what}`, options);
  }
}

/** Every try of the commit found another writer's snapshot first (`iceberg_commit_conflict`). */
export class IcebergCommitConflictError extends TilehouseError {
  readonly code = 'iceberg_commit_conflict';

  constructor(
    readonly table: string,
    readonly tries: number,
  ) {
    super(`Iceberg table ${table}: another writer committed first on each of ${tries} tries; nothing of this run was committed`);
  }
}

/** The tile's columns do not match the table's schema (`iceberg_schema_mismatch`). */
export class IcebergSchemaMismatchError extends TilehouseError {
  readonly code = 'iceberg_schema_mismatch';

  constructor(
    readonly table: string,
    readonly reason: string,
  ) {
    super(`Iceberg table ${table}: the tile's columns do not match the table's schema: ${reason}`);
  }
}

/** The table's metadata or manifest list cannot be read (`iceberg_metadata_invalid`). */
export class IcebergMetadataInvalidError extends TilehouseError {
  readonly code = 'iceberg_metadata_invalid';

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
