import { messageOf, TilehouseError } from '../../errors.js';
import type { SchemaDiff } from './schema-contract.js';
import { describeSchemaDiff } from './schema-contract.js';

/** A typed value BigQuery cannot take as it is (out of range, too precise, wrong JavaScript type). */
export class BigQueryValueError extends TilehouseError {
  readonly code = 'bigquery_value_invalid';

  constructor(
    readonly column: string,
    readonly value: string,
    reason: string,
  ) {
    super(`column ${column}: value ${value} ${reason}`);
  }
}

/**
 * The tile's columns break the table's schema contract. Raised before anything is loaded, so the
 * table keeps its previous content.
 */
export class BigQuerySchemaMismatchError extends TilehouseError {
  readonly code = 'bigquery_schema_mismatch';

  constructor(
    readonly tileId: string,
    readonly table: string,
    readonly contract: 'freeze' | 'add',
    readonly diff: SchemaDiff,
    hint: string,
  ) {
    super(`tile ${tileId}: columns no longer match table ${table} (schema: ${contract}): ${describeSchemaDiff(diff)}. ${hint}`);
  }
}

/** A tile column takes a name the sink needs for itself (a lineage column in append mode). */
export class BigQueryColumnConflictError extends TilehouseError {
  readonly code = 'bigquery_column_conflict';

  constructor(
    readonly tileId: string,
    readonly table: string,
    readonly column: string,
  ) {
    super(
      `tile ${tileId}: column ${column} clashes with the lineage column of that name that append mode adds to ${table}; rename the header or use another write mode`,
    );
  }
}

/**
 * The staging load (prepare) ran and BigQuery refused it, or it could not be started within the
 * retry budget. The target is untouched: a load only ever writes the run's staging table.
 */
export class BigQueryLoadError extends TilehouseError {
  readonly code = 'bigquery_load_failed';

  constructor(
    readonly tileId: string,
    readonly table: string,
    readonly jobId: string,
    readonly errorMessages: readonly string[],
    options?: { cause?: unknown },
  ) {
    super(`tile ${tileId}: load job ${jobId} into ${table} failed: ${firstMessages(errorMessages)}`, options);
  }
}

/**
 * The copy from the staging table onto the target (publish) was refused, or could not be started
 * within the retry budget. BigQuery applies a failed copy not at all: the target keeps its content.
 */
export class BigQueryPublishError extends TilehouseError {
  readonly code = 'bigquery_publish_failed';

  constructor(
    readonly tileId: string,
    readonly table: string,
    readonly jobId: string,
    readonly errorMessages: readonly string[],
    options?: { cause?: unknown },
  ) {
    super(`tile ${tileId}: copy job ${jobId} onto ${table} failed: ${firstMessages(errorMessages)}`, options);
  }
}

/**
 * A job still was not done when the polling policy's wait ran out. Its outcome is unknown: a
 * copy may still complete, so the message says where to look.
 */
export class BigQueryJobTimeoutError extends TilehouseError {
  readonly code = 'bigquery_job_timeout';

  constructor(
    readonly tileId: string,
    readonly kind: 'load' | 'copy',
    readonly jobId: string,
    readonly table: string,
    waitedMs: number,
  ) {
    super(
      `tile ${tileId}: ${kind} job ${jobId} for ${table} was not done after ${Math.round(waitedMs / 1000)} s; ` +
        (kind === 'copy' ? 'it may still complete: check the job and the table before re-running' : 'the target was not changed'),
    );
  }
}

/** The run's NDJSON load file is gone or unreadable when the load starts (a sweep, a full disk). */
export class BigQueryLoadFileError extends TilehouseError {
  readonly code = 'bigquery_load_file_missing';

  constructor(
    readonly tileId: string,
    readonly path: string,
    options?: { cause?: unknown },
  ) {
    super(`tile ${tileId}: cannot read the load file ${path}: ${messageOf(options?.cause)}; nothing was loaded`, options);
  }
}

/** Any other BigQuery call (dataset, table metadata, job lookup) that failed for good. */
export class BigQueryRequestError extends TilehouseError {
  readonly code = 'bigquery_request_failed';

  constructor(
    readonly tileId: string,
    readonly operation: string,
    readonly errorMessages: readonly string[],
    options?: { cause?: unknown },
  ) {
    super(`tile ${tileId}: ${operation} failed: ${firstMessages(errorMessages)}`, options);
  }
}

/** The pipeline used a writer out of order (rows after prepare, publish before prepare). A bug, not data. */
export class BigQuerySinkStateError extends TilehouseError {
  readonly code = 'bigquery_sink_state';
}

// Load errors can list thousands of bad rows; the first few say what went wrong.
const MAX_MESSAGES = 3;

function firstMessages(messages: readonly string[]): string {
  if (messages.length === 0) return 'no error message given';
  const shown = messages.slice(0, MAX_MESSAGES).join('; ');
  const more = messages.length - MAX_MESSAGES;
  return more > 0 ? `${shown} (and ${more} more)` : shown;
}
